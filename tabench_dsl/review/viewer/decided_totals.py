"""The viewer's totals after a decision, worked out from the totals before it, without a read.

A decision made in the viewer settles one adjudicated answer (`Index.decide` takes no other): its
outcome goes from adjudicate, or an earlier decision's verdict, to the person's. Counted again
from the file, at a million records, that is half a minute with every request waiting. What the
decision changes is a few counts: its system's row, its question's row and its tags' rows, whose
scores, intervals and error ranges are then worked out by the functions that first worked them
out, and the pairwise comparisons, worked out again from each system's graded and passed
questions as bit sets (`Outcomes`: built once from the viewer's columns, then one bit changed per
decision). Nothing else in the totals depends on an adjudicated answer's outcome: calls, tokens,
cost, judges, facets, served models and T1's audit (of T1 passes, never adjudicated) stay as
they are. Totals holding what only the records read whole can count (a panel's agreement, repeats'
stability, people's blind audits) are not worked out here: the caller counts them again.
"""

from __future__ import annotations

import msgspec

from ...core.records import Record
from ..compare import Graded, compare_graded
from ..error_range import error_range
from ..outcomes import OutcomeCounts, outcome, score_interval, score_of
from ..totals import SystemTotals, Totals
from .columns import Table


class Outcomes:
    """Each system's graded questions and passes (`compare.Graded`) over the viewer's standing
    records, from its columns: bit q stands for the question of code q. `decided` changes one."""

    def __init__(self, table: Table) -> None:
        systems, questions = table.table("system"), table.table("question")
        verdicts, humans = table.table("verdict"), table.table("human")
        self.question_bit = {name: code for code, name in enumerate(questions)}
        graded: dict[int, bytearray] = {}
        passed: dict[int, bytearray] = {}
        width = (len(questions) + 7) // 8
        columns = (table.columns[field] for field in ("system", "question", "verdict", "human"))
        for s, q, v, h in zip(*columns, strict=True):
            verdict = humans[h] or verdicts[v]
            if verdict == "error":
                continue
            bits = graded.get(s)
            if bits is None:
                bits = graded[s] = bytearray(width)
                passed[s] = bytearray(width)
            bits[q >> 3] |= 1 << (q & 7)
            if verdict == "pass":
                passed[s][q >> 3] |= 1 << (q & 7)
        self.graded = {
            systems[s]: Graded(int.from_bytes(bits, "little"), int.from_bytes(passed[s], "little"))
            for s, bits in graded.items()
        }

    def decided(self, system: str, question: str, verdict: str) -> None:
        """The pair's outcome is now `verdict` (pass or fail: a graded outcome, as adjudicate was)."""
        bit = 1 << self.question_bit[question]
        held = self.graded[system]
        passed = held.passed | bit if verdict == "pass" else held.passed & ~bit
        self.graded[system] = Graded(held.questions, passed)


def countable(totals: Totals) -> bool:
    """Whether `with_decision` can work out these totals after a decision (module docstring)."""
    if totals.panel is not None or totals.stability is not msgspec.UNSET:
        return False
    if totals.usage.audit is not msgspec.UNSET or totals.usage.validated_score is not msgspec.UNSET:
        return False
    return all(s.audit is msgspec.UNSET and s.validated_score is msgspec.UNSET for s in totals.systems)


def with_decision(totals: Totals, before: Record, after: Record, outcomes: Outcomes) -> Totals:
    """`totals` (of `countable` kind) with `before`, a standing record, replaced by `after`, the
    same record decided; `outcomes` is told of it. The rows changed are changed in place."""
    was, now = outcome(before), outcome(after)
    outcomes.decided(after.system, after.question, now)
    system = next(row for row in totals.systems if row.system == after.system)
    question = next(row for row in totals.questions if row.question == after.question)
    for row in (system, question):
        _move(row, was, now)
    if before.decision is not None:
        _human(system, before.decision.verdict, -1)
    if after.decision is not None:
        _human(system, after.decision.verdict, 1)
    if after.tier == "t1":  # a T1 record's pass counts as T1's
        system.t1_passes += (now == "pass") - (was == "pass")
    system.score, question.score = score_of(system), score_of(question)
    system.ci_low, system.ci_high = score_interval(system)
    system.if_errors = error_range(system)
    for tag in totals.tags:
        if tag.tag in after.tags:
            cell = next(cell for cell in tag.systems if cell.system == after.system)
            for _ in range(after.tags.count(tag.tag)):  # as often as a count counts it (a tag twice)
                for counts in (tag, cell):
                    _move(counts, was, now)
            tag.score, cell.score = score_of(tag), score_of(cell)
            tag.ci_low, tag.ci_high = score_interval(tag)
    totals.comparisons = compare_graded(outcomes.graded)
    return totals


#: The count of each outcome in a row, by the outcome's name.
_COUNTS = {"pass": "passed", "fail": "fail", "adjudicate": "adjudicate", "error": "error"}


def _move(row: OutcomeCounts, was: str, now: str) -> None:
    """One answer of `row` counted under `now` instead of `was`."""
    setattr(row, _COUNTS[was], getattr(row, _COUNTS[was]) - 1)
    setattr(row, _COUNTS[now], getattr(row, _COUNTS[now]) + 1)


def _human(row: SystemTotals, verdict: str, change: int) -> None:
    if verdict == "pass":
        row.human_pass += change
    elif verdict == "fail":
        row.human_fail += change
