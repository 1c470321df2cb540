"""The battery's questions a system gave no answer to, and their `fail` records (`--missing-as-fail`).

An answers file may leave questions out. Scored only on what it answered, a system that skips its
hard questions scores higher than one that tries them, while the shipped prompt says "Missing answer
= fail". So `grade` watches every answer it reads (`Coverage`): every system with an answer in the
files (of those `--system` picks) is expected to answer every question of the slice being graded
(`--question`, `--tag`), and what it did not answer is reported per system. With
`--missing-as-fail` each such pair gets one record, verdict `fail`, cause `missing`
(`missing_record`), that nobody judged (`NO_JUDGE`).

Decided where the spec is silent:
- a system is one that has at least one answer in the files read, to any question: one that answered
  no question of a `--tag` slice has all of that slice missing; a system with no answer at all is
  unknown to the grading and so has nothing missing;
- a missing record is written once: a resumed grading finds it (`recorded_missing`) and writes no
  second one, and an answer given later for that pair is graded over it (the missing record is not
  "done" for `--resume`), its record standing as the last one of the pair.
"""

from __future__ import annotations

import operator
from collections import deque
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence, Set
from itertools import compress, repeat
from pathlib import Path

from ..core.compiled import CompiledQuestion
from ..core.records import Answer, JudgeInfo, Record
from ..store import standing_verdicts

#: Who "judged" a missing answer: nobody, and every output that names the judge says so.
NO_JUDGE = JudgeInfo(backend="none", model="no answer", language_model=False, label="nobody was asked")
#: The reason a missing record carries.
MISSING_REASON = "no answer was given to this question (--missing-as-fail): counted as fail"


class Coverage:
    """Which of `questions` (the slice's question ids, in battery order) each system answered,
    learnt from the answers passed through `watch` and those noted (`note_all`).

    Each system's answers are one byte a question of the slice (`bytearray`, set to 1 when
    answered), not a set of names: 50 systems over 200,000 questions take 10 MB, where sets of
    the names took 40 times as much."""

    def __init__(self, questions: Sequence[str], systems: Collection[str] | None = None) -> None:
        self.questions = tuple(questions)
        #: The systems being graded (`--system`), None for every system seen.
        self.systems = systems
        #: Question -> its place in `questions`; an answer to another question (outside the slice)
        #: marks the spare place at the end, which only says its system was seen.
        self._places = dict(zip(self.questions, range(len(self.questions)), strict=True))
        self._spare = len(self.questions)
        self._answered: dict[str, bytearray] = {}

    def _row(self, system: str) -> bytearray:
        row = self._answered.get(system)
        if row is None:
            row = self._answered[system] = bytearray(self._spare + 1)
        return row

    def watch(self, answers: Iterable[Answer]) -> Iterator[Answer]:
        """Yield `answers` unchanged, noting each (system, question)."""
        answered, place, spare = self._answered, self._places.get, self._spare
        for answer in answers:
            row = answered.get(answer.system)
            if row is None:
                row = self._row(answer.system)
            row[place(answer.question, spare)] = 1
            yield answer

    def rows(self) -> dict[str, bytearray]:
        """Each system's answered questions, a byte a question (for `merge`)."""
        return self._answered

    def merge(self, rows: dict[str, bytearray]) -> None:
        """Note the questions each system answered in `rows` (another coverage's, over the same
        questions) as answered here too."""
        for system, row in rows.items():
            mine = self._row(system)
            either = int.from_bytes(mine, "little") | int.from_bytes(row, "little")
            mine[:] = either.to_bytes(len(mine), "little")

    def note(self, system: str, question: str) -> None:
        """Note `system` as having answered `question` (an answer not passed through `watch`)."""
        self._row(system)[self._places.get(question, self._spare)] = 1

    def note_all(self, system: str, questions: Iterable[str]) -> None:
        """Note `system` as having answered each of `questions` (answers not passed through
        `watch`: --resume's done answers, `resume_skip`), at C speed."""
        row = self._row(system)
        places = map(self._places.get, questions, repeat(self._spare))
        deque(map(row.__setitem__, places, repeat(1)), maxlen=0)

    def missing(self) -> dict[str, list[str]]:
        """Each system seen that left questions unanswered -> those questions, in battery order;
        systems by name."""
        result: dict[str, list[str]] = {}
        for system in sorted(self._answered):
            if self.systems is not None and system not in self.systems:
                continue
            row = self._answered[system]
            if row.count(0, 0, self._spare) == 0:  # answered them all (the usual system)
                continue
            result[system] = list(compress(self.questions, map(operator.not_, row)))
        return result


def missing_record(system: str, question: CompiledQuestion, *, battery: str, time: str) -> Record:
    """The `fail` record of a question `system` did not answer (cause `missing`)."""
    return Record(
        system=system,
        question=question.id,
        tier="t2",
        verdict="fail",
        reason=MISSING_REASON,
        prompt_sha256=question.sha256,
        judge=NO_JUDGE,
        answer="",
        cause="missing",
        battery=battery,
        time=time,
        tags=list(question.tags),
    )


def missing_records(
    missing: Mapping[str, Sequence[str]],
    questions: Mapping[str, CompiledQuestion],
    *,
    battery: str,
    time: str,
    already: Set[tuple[str, str]],
) -> Iterator[Record]:
    """The records `--missing-as-fail` writes for `missing` (`Coverage.missing`), leaving out the
    pairs `already` recorded as missing by an earlier run."""
    for system, left in missing.items():
        for qid in left:
            if (system, qid) not in already:
                yield missing_record(system, questions[qid], battery=battery, time=time)


def recorded_missing(path: str | Path, *, keep: bool = True) -> Set[tuple[str, str]]:
    """The pairs of the results file at `path` whose standing (last) record is a missing answer's;
    none when there is no file. Read through the index beside the results (a resume reads the
    whole file here otherwise: `store.standing_verdicts`)."""
    return standing_verdicts.recorded_missing(path, keep=keep)


#: The questions `missing_line` names of a system's unanswered ones.
NAMED = 10


def missing_line(system: str, left: Sequence[str], of: int, *, recorded: bool) -> str:
    """What `grade` says of a system's unanswered questions (`left`, of `of` in the slice)."""
    more = len(left) - NAMED
    shown = ", ".join(left[:NAMED]) + (f", ... ({more} more)" if more > 0 else "")
    then = (
        "recorded as fail (cause missing)"
        if recorded
        else "not in its score; --missing-as-fail records them as fail"
    )
    return f"system {system!r} has no answer to {len(left)} of the {of} question(s): {shown}; {then}"
