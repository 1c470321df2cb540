"""`grade --resume`'s done pairs, taken out as the answers are read.

An answer whose (system, question) already has its final record is graded no more: it is only noted
as answered (for the account of missing answers) and, when the slice takes it, counted as skipped.
Done in the answers reader itself (`AnswerReader(done=...)`, `answers.DoneFilter`), one set lookup after the
reader's own checks (a block of JSONL lines at once, `passed_over_all`, when all of them are done),
so a resume with nothing left to grade reads the file without passing each done answer through
the coverage, the slice and the grader's queue; every bad line is still reported, as the reader
reports it in any run.

The progress bar hears of skipped answers in batches (`BATCH`), and always before the next answer
that is graded, so it counts them in the order they were read.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping, Set
from typing import TYPE_CHECKING

from ..store.key_cells import KeyCells
from ..store.pair_set import PairSet
from .answer_slice import AnswerSlice

if TYPE_CHECKING:
    from ..core.records import Answer
    from .missing import Coverage

#: Skipped answers told to the progress bar at a time (it redraws on its own clock anyway).
BATCH = 4096


class ResumeSkip:
    """The done pairs `skip` of one run: `passed_over` for the reader, `count` of those skipped."""

    def __init__(
        self,
        skip: Set[tuple[str, str]],
        chosen: AnswerSlice,
        coverage: Coverage | None,
        on_skipped: Callable[[int], None],
    ) -> None:
        self.skip = skip
        self.chosen = chosen
        self.coverage = coverage
        self.on_skipped = on_skipped
        #: Whether the slice filters at all (most runs take every answer: no test per pair).
        self._filtered = any(
            part is not None for part in (chosen.questions, chosen.tagged, chosen.systems, chosen.shard)
        )
        #: Answers skipped as done that the slice takes (the run's `skipped`).
        self.count = 0
        self._untold = 0

    def passed_over(self, system: str, question: str) -> bool:
        """True for a done pair (noted, and counted when the slice takes it): not to be graded."""
        if (system, question) not in self.skip:
            return False
        if self.coverage is not None:
            self.coverage.note(system, question)
        if not self._filtered or self.chosen.takes(system, question):
            self.count += 1
            self._untold += 1
            if self._untold >= BATCH:
                self.flush()
        return True

    @property
    def numbers(self) -> Mapping[str, int] | None:
        """How the done pairs number names (a `PairSet`'s), for the reader's keys; None for a set."""
        return self.skip.numbers if isinstance(self.skip, PairSet) else None

    @property
    def cells(self) -> KeyCells | None:
        """The done pairs' keys (a `PairSet`'s), whose rows the reader lays the pairs it sees out
        in; None for a set."""
        return self.skip.keys if isinstance(self.skip, PairSet) else None

    def passed_over_all(self, keys: list[int], systems: list[str], questions: list[str]) -> bool:
        """`passed_over` of each (system, question) of the two lists side by side, in one go, when
        every one is done (True); False, with nothing noted, when any is not (the reader then asks
        of each answer in turn). `keys` are the pairs' keys under `numbers`."""
        skip = self.skip
        if isinstance(skip, PairSet):
            if not skip.keys.issuperset(keys):
                return False
        elif not all(map(skip.__contains__, zip(systems, questions, strict=True))):
            return False
        if self.coverage is not None:
            start = 0
            runs = [(systems[0], len(systems))] if len(set(systems)) == 1 else _runs(systems)
            for system, length in runs:
                stop = start + length
                self.coverage.note_all(system, questions if len(runs) == 1 else questions[start:stop])
                start = stop
        if self._filtered:
            taken = sum(1 for pair in zip(systems, questions, strict=True) if self.chosen.takes(*pair))
        else:
            taken = len(systems)
        self.count += taken
        self._untold += taken
        if self._untold >= BATCH:
            self.flush()
        return True

    def absorb(self, skipped: int, answered: dict[str, bytearray] | None) -> None:
        """What a read of other answers of the file (its second half, `answers_halves`) passed
        over: `skipped` answers the slice takes, and each system's questions `answered` (its
        coverage's rows, `Coverage.rows`)."""
        if self.coverage is not None and answered is not None:
            self.coverage.merge(answered)
        self.count += skipped
        self._untold += skipped
        if self._untold >= BATCH:
            self.flush()

    def flush(self) -> None:
        """Tell the progress bar of the skipped answers it has not heard of yet."""
        if self._untold:
            untold, self._untold = self._untold, 0
            self.on_skipped(untold)

    def taken_out(self, answers: Iterable[Answer]) -> Iterator[Answer]:
        """`answers` without the done pairs (`passed_over`), for answers no reader read."""
        return (answer for answer in answers if not self.passed_over(answer.system, answer.question))

    def told(self, answers: Iterable[Answer]) -> Iterator[Answer]:
        """`answers` unchanged, the skipped answers read before each told first, and the rest when
        reading ends (or stops: `--limit`)."""
        try:
            for answer in answers:
                self.flush()
                yield answer
        finally:
            self.flush()


def _runs(names: list[str]) -> list[tuple[str, int]]:
    """Each run of equal names in `names`, as (name, its length)."""
    return [(name, len(list(group))) for name, group in itertools.groupby(names)]
