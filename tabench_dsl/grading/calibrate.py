"""Calibration: grade a battery's own exemplars and compare the verdicts with the expected ones.

Every exemplar becomes an answer of a system named `exemplar.<n>.<kind>` (n counts the question's
exemplars from 1) and goes through the whole grading path of `runner.Grader`: T1, the judge call,
decoding, the re-ask and stern retry, adjudicate. Its expected verdict is `Exemplar.expected` (the
written `expect`, else pass for `correct` and fail otherwise).

Agreement is the share of exemplars whose verdict equals the expected one; `adjudicate` and
`error` never equal it, so they count as disagreement (and show in the confusion table).
Cohen's kappa is computed over the labels pass, fail, adjudicate and error (`core.stats.cohen_kappa`,
the one rule `diff` and the audits use too): when chance agreement is certain (every expected and
every graded verdict the same label) kappa is undefined, None, and the agreement says it all.

With a judge panel, each judge is calibrated as well, side by side with the panel: its own vote on
each exemplar (an exemplar no judge was asked about, a T1 pass or an oversized answer, counts with
the record's verdict for every judge, so every row covers the same exemplars), with its agreement
and kappa (`JudgeCalibration`), and every exemplar's votes in a row (`ExemplarVotes`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from ..core.compiled import CompiledBattery
from ..core.records import Answer, JudgeInfo, Record
from ..core.stats import cohen_kappa
from .causes import CauseCount, CauseTally

if TYPE_CHECKING:
    from .runner import Grader

#: Expected verdicts (rows of the confusion table).
EXPECTED_LABELS: tuple[str, ...] = ("pass", "fail")
#: Graded outcomes (columns of the confusion table).
GOT_LABELS: tuple[str, ...] = ("pass", "fail", "adjudicate", "error")


class Case(msgspec.Struct, frozen=True):
    """One exemplar to grade: where it is, its text, its why and its expected verdict."""

    question: str
    index: int
    kind: str
    answer: str
    why: str
    expected: str
    #: Held out of the judge's prompt (`Exemplar.holdout`): what the headline figures measure.
    holdout: bool = False

    @property
    def system(self) -> str:
        return f"exemplar.{self.index}.{self.kind}"


class Miss(msgspec.Struct, frozen=True):
    """An exemplar whose graded verdict differs from the expected one."""

    question: str
    index: int
    kind: str
    answer: str
    why: str
    expected: str
    got: str
    tier: str
    reason: str
    holdout: bool = False


class JudgeCalibration(msgspec.Struct, frozen=True):
    """One panel judge's agreement with the expected verdicts."""

    judge: str
    agree: int
    agreement: float | None
    kappa: float | None


class ExemplarVotes(msgspec.Struct, frozen=True):
    """One exemplar, expected verdict, each panel judge's vote (by judge name) and the panel's."""

    question: str
    index: int
    kind: str
    expected: str
    votes: dict[str, str]
    panel: str


class Split(msgspec.Struct, frozen=True):
    """Agreement on one part of the exemplars: those shown in the judge's prompt, or held out."""

    n: int
    agree: int
    agreement: float | None
    kappa: float | None


class Calibration(msgspec.Struct, frozen=True):
    """The outcome of calibrating one battery with one judge.

    `n`, `agree`, `agreement`, `kappa`, `confusion` and the panel's figures measure the held-out
    exemplars when the battery has any (`scored_on` "held_out"), else every exemplar ("seen": the
    judge was shown them in its prompt). `seen` and `held_out` give both parts apart; `misses`
    lists every exemplar missed, each marked `holdout` or not."""

    battery: str
    judge: JudgeInfo
    n: int
    agree: int
    agreement: float | None
    kappa: float | None
    confusion: dict[str, dict[str, int]]
    misses: list[Miss]
    #: Why exemplars ended in error or adjudicate: per cause, the count and the first message.
    causes: list[CauseCount] = msgspec.field(default_factory=list)
    #: With a judge panel: each judge's agreement, and every exemplar's votes (empty otherwise).
    judges: list[JudgeCalibration] = msgspec.field(default_factory=list)
    exemplars: list[ExemplarVotes] = msgspec.field(default_factory=list)
    scored_on: str = "seen"
    seen: Split | None = None
    held_out: Split | None = None
    #: With `--repeat K`: the exemplars asked K times, and those whose asks disagreed (`repeats`).
    repeated: int = 0
    flipped: int = 0


def cases(compiled: CompiledBattery) -> list[Case]:
    """Every exemplar of the battery, in question order then written order."""
    out = []
    for question in compiled.questions.values():
        for index, ex in enumerate(question.exemplars, start=1):
            out.append(Case(question.id, index, ex.kind, ex.answer, ex.why, ex.expected, ex.holdout))
    return out


def answers(items: Iterable[Case]) -> list[Answer]:
    """The exemplars as answers, one system per exemplar position and kind."""
    return [Answer(system=c.system, question=c.question, answer=c.answer) for c in items]


def summarise(
    battery: str, judge: JudgeInfo, items: list[Case], records: Iterable[Record], *, labels: bool = False
) -> Calibration:
    """Compare the standing record of each case with its expected verdict.

    A case without a record (the grading stopped before it) counts as `error`, cause `no record`.
    The headline figures cover the held-out cases when there are any, else every case; with
    `labels` the cases are people's verdicts on an earlier grading (`scored_on` "labels").
    """
    standing = {(r.system, r.question): r for r in records}
    held_out = [case for case in items if case.holdout]
    scored = held_out or items
    confusion = {e: dict.fromkeys(GOT_LABELS, 0) for e in EXPECTED_LABELS}
    misses = []
    causes = CauseTally()
    for case in items:
        record = standing.get((case.system, case.question))
        got = _got(case, standing)
        if record is None:
            causes.count("error", "no record", "no record was written")
        else:
            causes.add(record)
        if got != case.expected:
            misses.append(_miss(case, got, record))
    for case in scored:
        confusion[case.expected][_got(case, standing)] += 1
    headline = _split(scored, standing)
    judges, rows = _side_by_side(scored, standing)
    seen = [case for case in items if not case.holdout]
    repeated = [r.repetitions for case in items if (r := standing.get((case.system, case.question)))]
    repeated = [asks for asks in repeated if len(asks) > 1]
    return Calibration(
        battery=battery,
        judge=judge,
        n=headline.n,
        agree=headline.agree,
        agreement=headline.agreement,
        kappa=headline.kappa,
        confusion=confusion,
        misses=misses,
        causes=causes.summary(),
        judges=judges,
        exemplars=rows,
        scored_on="labels" if labels else "held_out" if held_out else "seen",
        seen=_split(seen, standing) if seen else None,
        held_out=_split(held_out, standing) if held_out else None,
        repeated=len(repeated),
        flipped=sum(len({vote.verdict for vote in asks}) > 1 for asks in repeated),
    )


def _got(case: Case, standing: dict[tuple[str, str], Record]) -> str:
    record = standing.get((case.system, case.question))
    return record.verdict if record is not None else "error"


def _split(items: Sequence[Case], standing: dict[tuple[str, str], Record]) -> Split:
    pairs = [(case.expected, _got(case, standing)) for case in items]
    agree = sum(1 for expected, got in pairs if expected == got)
    return Split(len(pairs), agree, agree / len(pairs) if pairs else None, cohen_kappa(pairs))


def _miss(case: Case, got: str, record: Record | None) -> Miss:
    return Miss(
        question=case.question,
        index=case.index,
        kind=case.kind,
        answer=case.answer,
        why=case.why,
        expected=case.expected,
        got=got,
        tier=record.tier if record is not None else "-",
        reason=record.reason if record is not None else "no record was written",
        holdout=case.holdout,
    )


def _side_by_side(
    items: list[Case], standing: dict[tuple[str, str], Record]
) -> tuple[list[JudgeCalibration], list[ExemplarVotes]]:
    """Each panel judge's calibration and every exemplar's votes; empty when no panel graded."""
    names = list(dict.fromkeys(v.judge.describe() for r in standing.values() for v in r.votes))
    if not names:
        return [], []
    pairs: dict[str, list[tuple[str, str]]] = {name: [] for name in names}
    rows = []
    for case in items:
        record = standing.get((case.system, case.question))
        got = record.verdict if record is not None else "error"
        votes: dict[str, str] = {}
        if record is not None:
            votes = {v.judge.describe(): v.verdict for v in record.votes}
        # No judge asked (T1, oversized): every judge counts with the record's verdict.
        each = {name: votes.get(name, got if not votes else "error") for name in names}
        for name in names:
            pairs[name].append((case.expected, each[name]))
        rows.append(ExemplarVotes(case.question, case.index, case.kind, case.expected, each, got))
    judges = []
    for name in names:
        agree = sum(1 for expected, got in pairs[name] if expected == got)
        n = len(pairs[name])
        judges.append(JudgeCalibration(name, agree, agree / n if n else None, cohen_kappa(pairs[name])))
    return judges, rows


async def calibrate(
    compiled: CompiledBattery, grader: Grader, *, out: Path, labelled: list[Case] | None = None
) -> Calibration:
    """Grade every exemplar of `compiled` with `grader` (`session.open_grader`), writing the
    records to the results file `out` (appended), and summarise them against the expected
    verdicts. With `labelled`, grade those cases (people's verdicts on an earlier grading,
    `labelled_case`) instead of the exemplars."""
    from ..store.results import ResultsWriter, iter_records

    items = cases(compiled) if labelled is None else labelled
    with ResultsWriter(out) as writer:
        grader.writer = writer
        try:
            await grader.run(answers(items))
        finally:
            grader.writer = None
    return summarise(compiled.name, grader.judge.info, items, iter_records(out), labels=labelled is not None)


def labelled_case(question: str, index: int, answer: str, verdict: str, who: str) -> Case:
    """A person's verdict on an earlier grading's answer as a case to calibrate on: the answer
    graded again as system `exemplar.<index>.label`, expected to get `verdict`; `why` names who
    decided it (and their note)."""
    return Case(question, index, "label", answer, who, verdict, holdout=True)


def calibration_json(result: Calibration) -> bytes:
    """One JSON object: battery, judge (as the records carry it), n, agree, agreement, kappa,
    confusion, misses, causes."""
    return msgspec.json.encode(result)
