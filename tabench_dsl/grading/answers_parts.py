"""The parts of the answers reader (`answers.AnswerReader`) that other modules name: a skipped
line's problem (`AnswerProblem`) and what a resume's done pairs answer the reader (`DoneFilter`);
and the name an answer left empty (`empty_field`), which its checks word."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

import msgspec

from ..core.records import Answer
from ..store.key_cells import KeyCells


class AnswerProblem(msgspec.Struct, frozen=True):
    """One skipped line of an answers file; `col` is set when the fault's column is known (bad text)."""

    path: str
    line: int
    message: str
    col: int | None = None

    def render(self) -> str:
        where = f"{self.line}" if self.col is None else f"{self.line}:{self.col}"
        return f"{self.path}:{where}: {self.message}"


class DoneFilter(Protocol):
    """The pairs a resumed grading takes out as the answers are read (`resume_skip.ResumeSkip`).

    `passed_over` is asked about each good answer's (system, question) once every check of the
    reader has passed it: True takes the answer out (counted as read, not yielded).
    `passed_over_all` is asked about a JSONL block's pairs at once (their keys, `pair_set`'s, with
    names numbered as `numbers` numbers them, and their systems and questions): True when it took
    them all. `cells`, the done pairs' keys, lays out the pairs seen alike (None: a set)."""

    @property
    def numbers(self) -> Mapping[str, int] | None: ...

    @property
    def cells(self) -> KeyCells | None: ...

    def passed_over(self, system: str, question: str) -> bool: ...

    def passed_over_all(self, keys: list[int], systems: list[str], questions: list[str]) -> bool: ...


def empty_field(answer: Answer) -> str | None:
    """The first name of `answer` with nothing in it, or None. A system or question name of only
    spaces is empty too (it names nothing). An empty answer is an answer: it is graded (the judge
    sees an empty candidate answer), never skipped, or a system could raise its score by leaving
    its hard questions blank."""
    if not answer.system.strip():
        return "system"
    if not answer.question.strip():
        return "question"
    return None
