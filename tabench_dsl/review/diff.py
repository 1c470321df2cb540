"""Two gradings of the same answers, compared: what a new judge model, scorer or battery changed.

Each side is the standing records of a results file, human decisions applied (`viewer.run.load_run`,
as totals counts them). The pairs (system, question) in both are compared:

- every pair whose outcome differs is a `Flip`, with both reasons (an `error` on either side
  included: a pair that could not be graded in one of them is worth seeing);
- agreement and Cohen's kappa over the pairs graded on both sides (pass, fail or adjudicate:
  an `error` is no verdict to agree or disagree with, as the score leaves it out);
- McNemar's exact test of the change in pass rate on those same pairs (pass against fail or
  adjudicate, the score's own split).

Pairs in only one of the files are counted and named.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

import msgspec

from ..core.records import Decision, Record
from ..core.stats import cohen_kappa_of_counts, mcnemar_exact
from .outcomes import outcome

#: A pair's key: (system, question), or a number standing for one (`diff_files`).
K = TypeVar("K")


class Flip(msgspec.Struct, frozen=True):
    """A pair whose outcome differs between A and B, with the reason each gave."""

    system: str
    question: str
    a: str
    b: str
    reason_a: str
    reason_b: str


class Pair(msgspec.Struct, frozen=True):
    """A (system, question) pair, named."""

    system: str
    question: str


class Diff(msgspec.Struct):
    """What changed from A to B (see the module docstring for what each figure counts).

    `compared` pairs are in both and graded on both sides; `with_error` are in both with an `error`
    on at least one side. `a_pass` / `b_pass` count passes among the compared pairs; `pass_to_not` /
    `not_to_pass` are McNemar's discordant pairs."""

    a: str
    b: str
    in_both: int
    compared: int
    with_error: int
    agreed: int
    agreement: float | None
    kappa: float | None
    a_pass: int
    b_pass: int
    a_pass_rate: float | None
    b_pass_rate: float | None
    pass_to_not: int
    not_to_pass: int
    p_value: float
    flips: list[Flip]
    only_in_a: list[Pair]
    only_in_b: list[Pair]
    #: Who judged each side: the judges of its T2 records, by name (`JudgeInfo.describe`).
    a_judges: list[str] = msgspec.field(default_factory=list)
    b_judges: list[str] = msgspec.field(default_factory=list)


def diff_records(a: Iterable[Record], b: Iterable[Record], *, a_name: str = "A", b_name: str = "B") -> Diff:
    """Compare the standing records `a` and `b` (one per pair, decisions applied)."""
    left = {record.key: record for record in a}
    right = {record.key: record for record in b}
    outcomes = ((key, outcome(left[key]), outcome(right[key])) for key in sorted(left.keys() & right.keys()))
    table, flipped = tally_outcomes(outcomes)
    diff = diff_of_table(
        table,
        a_name=a_name,
        b_name=b_name,
        only_in_a=[Pair(*key) for key in sorted(left.keys() - right.keys())],
        only_in_b=[Pair(*key) for key in sorted(right.keys() - left.keys())],
        a_judges=judges_of(left.values()),
        b_judges=judges_of(right.values()),
    )
    diff.flips = [Flip(*key, vx, vy, _reason(left[key]), _reason(right[key])) for key, vx, vy in flipped]
    return diff


def tally_outcomes(
    outcomes: Iterable[tuple[K, str, str]],
) -> tuple[dict[tuple[str, str], int], list[tuple[K, str, str]]]:
    """How many pairs in both had each (A's, B's) outcome (`diff_of_table`), from the outcomes of
    the pairs in both in the order the flips are listed, and the (pair, A's outcome, B's outcome)
    of each flip, for the caller to give their reasons (a file read in a second pass gives them
    only for these)."""
    flipped: list[tuple[K, str, str]] = []
    table: dict[tuple[str, str], int] = {}  # (A's, B's) -> how many pairs: a table, not a list of pairs
    for key, vx, vy in outcomes:
        if vx != vy:
            flipped.append((key, vx, vy))
        table[(vx, vy)] = table.get((vx, vy), 0) + 1
    return table, flipped


def diff_of_table(
    table: dict[tuple[str, str], int],
    *,
    a_name: str,
    b_name: str,
    only_in_a: list[Pair],
    only_in_b: list[Pair],
    a_judges: list[str],
    b_judges: list[str],
) -> Diff:
    """The figures of a diff (without its flips) from how many pairs in both had each (A's, B's)
    outcome, in the order each combination was first met (`tally_outcomes` counts them; a
    reader of coded outcomes may count them in C)."""
    ratings = {pair: count for pair, count in table.items() if "error" not in pair}
    with_error = sum(count for pair, count in table.items() if "error" in pair)
    a_pass = sum(count for (vx, _), count in ratings.items() if vx == "pass")
    b_pass = sum(count for (_, vy), count in ratings.items() if vy == "pass")
    pass_to_not = sum(count for (vx, vy), count in ratings.items() if vx == "pass" and vy != "pass")
    not_to_pass = sum(count for (vx, vy), count in ratings.items() if vx != "pass" and vy == "pass")
    compared = sum(ratings.values())
    agreed = sum(count for (vx, vy), count in ratings.items() if vx == vy)
    return Diff(
        a=a_name,
        b=b_name,
        in_both=compared + with_error,
        compared=compared,
        with_error=with_error,
        agreed=agreed,
        agreement=agreed / compared if compared else None,
        kappa=cohen_kappa_of_counts(ratings),
        a_pass=a_pass,
        b_pass=b_pass,
        a_pass_rate=a_pass / compared if compared else None,
        b_pass_rate=b_pass / compared if compared else None,
        pass_to_not=pass_to_not,
        not_to_pass=not_to_pass,
        p_value=mcnemar_exact(pass_to_not, not_to_pass),
        flips=[],
        only_in_a=only_in_a,
        only_in_b=only_in_b,
        a_judges=a_judges,
        b_judges=b_judges,
    )


def judges_of(records: Iterable[Record]) -> list[str]:
    """The judges that graded `records` (their T2 records; a missing answer's has nobody), in the
    order first seen."""
    names = (r.judge.describe() for r in records if r.tier == "t2" and r.cause != "missing")
    return list(dict.fromkeys(names))


def _side(path: str, judges: list[str]) -> str:
    """One side of a diff as its header line names it: the file and who judged it."""
    return f"{path} (judge: {'; '.join(judges) if judges else 'none, T1 only'})"


def _reason(record: Record) -> str:
    return stated_reason(record.decision, record.reason)


def stated_reason(decision: Decision | None, reason: str) -> str:
    """The reason an outcome stands on: a human decision's note (or that it was decided by a
    person), else the tool's `reason`."""
    if decision is not None:
        note = f": {decision.note}" if decision.note else ""
        return f"decided {decision.verdict} by {decision.reviewer}{note}"
    return reason


def diff_json(diff: Diff) -> bytes:
    """The diff as one JSON document, for machines."""
    return msgspec.json.encode(diff)


class ShownDiff(msgspec.Struct):
    """What the terminal shows of a diff (`render_diff`): the diff with its flips and its pairs
    found on one side only cut to the first ones shown, and how many of each the whole diff has.
    Kept in the index beside the whole diff (`indexed_diff`): a later `diff A B` reads these few
    kilobytes rather than every flip of two large files."""

    diff: Diff
    flips: int
    only_in_a: int
    only_in_b: int


def shown_diff(diff: Diff, *, shown_flips: int, shown_only_in: int) -> ShownDiff:
    """What the terminal shows of `diff`: its first `shown_flips` flips and first `shown_only_in`
    pairs of each side only."""
    cut = msgspec.structs.replace(
        diff,
        flips=diff.flips[:shown_flips],
        only_in_a=diff.only_in_a[:shown_only_in],
        only_in_b=diff.only_in_b[:shown_only_in],
    )
    return ShownDiff(cut, len(diff.flips), len(diff.only_in_a), len(diff.only_in_b))


def summary_lines(diff: Diff, *, counts: tuple[int, int, int] | None = None) -> list[str]:
    """The figures of a diff in a few plain lines (names are not in them: safe to print as is).
    `counts` are the whole diff's flips and pairs of each side only, when `diff` holds the first
    of them alone (`ShownDiff`)."""
    from .outcomes import percent

    flipped, only_a, only_b = counts or (len(diff.flips), len(diff.only_in_a), len(diff.only_in_b))
    kappa = "-" if diff.kappa is None else f"{diff.kappa:.3f}"
    lines = [
        f"pairs in both: {diff.in_both} ({diff.compared} graded on both sides, "
        f"{diff.with_error} with an error on a side: left out of the figures below)",
        f"flipped: {flipped}",
        f"agreement: {diff.agreed} of {diff.compared} ({percent(diff.agreement)}); Cohen's kappa {kappa}",
        f"pass rate: A {percent(diff.a_pass_rate)} ({diff.a_pass}), B {percent(diff.b_pass_rate)} "
        f"({diff.b_pass}); pass -> not {diff.pass_to_not}, not -> pass {diff.not_to_pass}; "
        f"McNemar exact p = {diff.p_value:.4g}",
        f"only in A: {only_a}; only in B: {only_b}",
    ]
    return lines


def render_diff(shown: ShownDiff, *, reason_width: int = 80):
    """The diff as `rich` renderables: the files, the figures, the flips and the pairs found on one
    side only that `shown` holds (`shown_diff`), and how many more there are.

    Names, reasons and paths come from files anyone may have written: each is `display.literal`."""
    from rich.console import Group
    from rich.table import Table

    from ..core.display import literal

    diff = shown.diff
    counts = (shown.flips, shown.only_in_a, shown.only_in_b)
    parts: list = [
        literal(f"A: {_side(diff.a, diff.a_judges)}"),
        literal(f"B: {_side(diff.b, diff.b_judges)}"),
        *map(literal, summary_lines(diff, counts=counts)),
    ]
    if diff.flips:
        flips = Table(title=f"Flipped verdicts ({shown.flips})")
        for name in ("system", "question", "A", "B", "reason A", "reason B"):
            flips.add_column(name, overflow="fold")
        for flip in diff.flips:
            flips.add_row(
                literal(flip.system),
                literal(flip.question),
                flip.a,
                flip.b,
                literal(_cut(flip.reason_a, reason_width)),
                literal(_cut(flip.reason_b, reason_width)),
            )
        parts.append(flips)
        if shown.flips > len(diff.flips):
            parts.append(literal(f"and {shown.flips - len(diff.flips)} more flips (--json lists them all)"))
    for side, pairs, count in (
        ("A", diff.only_in_a, shown.only_in_a),
        ("B", diff.only_in_b, shown.only_in_b),
    ):
        if pairs:
            named = ", ".join(f"{p.system}/{p.question}" for p in pairs)
            more = f" and {count - len(pairs)} more (--json names them all)" if count > len(pairs) else ""
            parts.append(literal(f"only in {side}: {named}{more}"))
    return Group(*parts)


def _cut(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"
