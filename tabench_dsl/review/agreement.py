"""How far the verdicts can be trusted: the agreement among a panel's judges and T1's precision
against the judge (`--t1-audit`). Counted from the standing records, like every other total.

Panel (records graded by a judge panel, `Record.panel`):
- each judge's counts and pass rate, pass / (pass + fail + adjudicate) as a score is (an `error`
  vote is not counted: no usable reply was had);
- Fleiss' kappa over the answers on which every judge of the panel gave pass or fail. Fleiss' kappa
  needs the same number of ratings for each subject, so an answer with a judge's adjudicate or error
  vote, or graded by a smaller panel than the largest in the file, is left out (`rated` says how many
  were counted). When every rating falls in one category, chance agreement is certain and kappa is
  undefined: None.

T1 audit (T1 passes the judge also graded, `Record.audit`): T1 says pass, so T1's precision is the
share of the audited answers the judge passed, among those it gave pass or fail (an audit that
ended adjudicate or error is counted apart, as `undecided`), with a Wilson interval; every audited
answer the judge failed is listed as a disagreement.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import msgspec

from ..core.records import Record

#: The categories a panel's pass/fail votes fall in, in the order of a Fleiss table's columns.
CATEGORIES: tuple[str, ...] = ("pass", "fail")


def fleiss_kappa(table: Sequence[Sequence[int]]) -> float | None:
    """Fleiss' kappa of a table with one row per subject and one column per category, each cell the
    number of raters who put that subject in that category; every row must sum to the same number
    of raters n >= 2. None for no subjects, or when chance agreement is certain (every rating in one
    category).

        P_i = (sum_j n_ij^2 - n) / (n (n - 1))          agreement on subject i
        P   = mean of P_i                              observed agreement
        p_j = sum_i n_ij / (N n)                       share of all ratings in category j
        Pe  = sum_j p_j^2                              agreement expected by chance
        kappa = (P - Pe) / (1 - Pe)
    """
    if not table:
        return None
    raters = sum(table[0])
    if raters < 2 or any(sum(row) != raters for row in table):
        raise ValueError("every subject needs the same number of ratings, at least two")
    subjects = len(table)
    observed = sum((sum(c * c for c in row) - raters) / (raters * (raters - 1)) for row in table) / subjects
    columns = len(table[0])
    shares = [sum(row[j] for row in table) / (subjects * raters) for j in range(columns)]
    chance = sum(p * p for p in shares)
    if chance >= 1.0:
        return None
    return (observed - chance) / (1.0 - chance)


class JudgeRate(msgspec.Struct):
    """One panel judge's votes over the standing panel records."""

    judge: str
    votes: int = 0
    passed: int = msgspec.field(default=0, name="pass")
    fail: int = 0
    adjudicate: int = 0
    error: int = 0
    pass_rate: float | None = None


class PanelAgreement(msgspec.Struct):
    """The panel's judges side by side: `answers` graded by a panel, `split` of them ended
    `panel_split`, `rated` counted in `kappa` (Fleiss' kappa, see the module docstring)."""

    judges: list[JudgeRate]
    answers: int = 0
    split: int = 0
    rated: int = 0
    kappa: float | None = None


class T1Disagreement(msgspec.Struct, frozen=True):
    """A T1 pass the judge, auditing it, failed."""

    system: str
    question: str
    judge_verdict: str
    reason: str


class T1Audit(msgspec.Struct):
    """T1's precision against the judge: of `n` audited T1 passes the judge gave pass or fail,
    `agreed` it passed; `undecided` ended adjudicate or error; `precision` with its Wilson interval."""

    audited: int = 0
    n: int = 0
    agreed: int = 0
    undecided: int = 0
    precision: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    disagreements: list[T1Disagreement] = msgspec.field(default_factory=list)


def panel_agreement(standing: Iterable[Record]) -> PanelAgreement | None:
    """The agreement among the panel judges over the standing records; None when no panel graded."""
    rates: dict[str, JudgeRate] = {}
    rows: list[tuple[int, list[int]]] = []
    answers = split = largest = 0
    for record in standing:
        votes = record.votes
        if not votes:
            continue
        answers += 1
        largest = max(largest, len(votes))
        if record.cause == "panel_split":
            split += 1
        for vote in votes:
            name = vote.judge.describe()
            rate = rates.setdefault(name, JudgeRate(judge=name))
            rate.votes += 1
            if vote.verdict == "pass":
                rate.passed += 1
            elif vote.verdict == "fail":
                rate.fail += 1
            elif vote.verdict == "adjudicate":
                rate.adjudicate += 1
            else:
                rate.error += 1
        if all(vote.verdict in CATEGORIES for vote in votes):
            rows.append((len(votes), [sum(1 for v in votes if v.verdict == c) for c in CATEGORIES]))
    if not answers:
        return None
    for rate in rates.values():
        graded = rate.passed + rate.fail + rate.adjudicate
        rate.pass_rate = rate.passed / graded if graded else None
    table = [row for len_, row in rows if len_ == largest]
    return PanelAgreement(
        judges=list(rates.values()),
        answers=answers,
        split=split,
        rated=len(table),
        kappa=fleiss_kappa(table) if largest >= 2 else None,
    )


def t1_audit(standing: Iterable[Record]) -> T1Audit | None:
    """T1's precision against the judge over the standing records; None when no T1 pass was audited."""
    from ..core.stats import wilson_interval
    from .outcomes import interval_bound

    found = T1Audit()
    for record in standing:
        audit = record.audited
        if audit is None:
            continue
        found.audited += 1
        if audit.verdict == "pass":
            found.n += 1
            found.agreed += 1
        elif audit.verdict == "fail":
            found.n += 1
            found.disagreements.append(T1Disagreement(record.system, record.question, "fail", audit.reason))
        else:
            found.undecided += 1
    if not found.audited:
        return None
    if found.n:
        found.precision = found.agreed / found.n
        interval = wilson_interval(found.agreed, found.n)
        if interval is not None:
            found.ci_low, found.ci_high = (interval_bound(bound) for bound in interval)
    return found
