"""A resume's done pairs as the answers reader asks of them (`AnswerReader(done=...)`, an
`answers.DoneFilter`), noting each pair passed over and each block taken whole."""

from __future__ import annotations

from collections.abc import Mapping, Set
from pathlib import Path

from tabench_dsl.store.key_cells import KeyCells
from tabench_dsl.store.results import iter_records


def read_done_pairs(path: str | Path) -> set[tuple[str, str]]:
    """The pairs whose last record is final (anything but `error`), worked out by reading every
    record: what the index's `standing_verdicts.done_pairs` must give."""
    if not Path(path).exists():
        return set()
    last = {(record.system, record.question): record.verdict for record in iter_records(path)}
    return {pair for pair, verdict in last.items() if verdict != "error"}


class DonePairs:
    """`passed_over` and `passed_over_all` for the pairs `done`; `passed` lists the pairs passed
    over in the order the reader asked, `taken` the size of each block taken whole. Without
    `blocks`, no block is taken whole (each answer is asked about alone); `numbers` and `cells` are
    the done pairs' numbering and layout, when the test gives them."""

    def __init__(
        self,
        done: Set[tuple[str, str]],
        *,
        blocks: bool = True,
        numbers: Mapping[str, int] | None = None,
        cells: KeyCells | None = None,
    ) -> None:
        self.done = done
        self.blocks = blocks
        self.numbers = numbers
        self.cells = cells
        self.passed: list[tuple[str, str]] = []
        self.taken: list[int] = []

    def passed_over(self, system: str, question: str) -> bool:
        if (system, question) in self.done:
            self.passed.append((system, question))
            return True
        return False

    def passed_over_all(self, keys: list[int], systems: list[str], questions: list[str]) -> bool:
        if not self.blocks:
            return False
        pairs = list(zip(systems, questions, strict=True))
        if all(pair in self.done for pair in pairs):
            self.passed.extend(pairs)
            self.taken.append(len(pairs))
            return True
        return False
