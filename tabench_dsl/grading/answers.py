"""The answers file: JSONL, one `{"system", "question", "answer"}` object per line, read as a stream.

A line that does not parse, lacks a field, names a question the battery does not have, or repeats a
(system, question) pair already given is reported as `path:line: message` and skipped; the run goes
on and the CLI exits 1 at the end. Blank lines are ignored. The file is never loaded whole: grading
100,000 answers holds one line at a time (plus the set of pairs seen, to catch duplicates).

Lines are decoded by `jsonl.decode_line`: a byte order mark is dropped, and bytes that are not
UTF-8 or a lone surrogate escape are reported as `path:line:col: message`, at the fault.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from pathlib import Path

import msgspec

from ..core.jsonl import BadLine, decode_line, numbered_lines
from ..core.records import Answer

_decoder = msgspec.json.Decoder(Answer)


class AnswerProblem(msgspec.Struct, frozen=True):
    """One skipped line of an answers file; `col` is set when the fault's column is known (bad text)."""

    path: str
    line: int
    message: str
    col: int | None = None

    def render(self) -> str:
        where = f"{self.line}" if self.col is None else f"{self.line}:{self.col}"
        return f"{self.path}:{where}: {self.message}"


class AnswerReader:
    """Iterate the good answers of `path`; bad lines go to `on_problem` and are counted.

    `questions` is the set of question ids the battery knows. Iterate once.
    """

    def __init__(
        self,
        path: str | Path,
        questions: Collection[str],
        *,
        on_problem: Callable[[AnswerProblem], None] | None = None,
    ) -> None:
        self.path = str(path)
        self.questions = questions
        self.on_problem = on_problem
        #: How many lines were skipped as bad.
        self.problems = 0
        #: How many good answers were yielded.
        self.count = 0

    def _report(self, line: int, message: str, col: int | None = None) -> None:
        self.problems += 1
        if self.on_problem is not None:
            self.on_problem(AnswerProblem(self.path, line, message, col))

    def __iter__(self) -> Iterator[Answer]:
        seen: dict[tuple[str, str], int] = {}
        with open(self.path, "rb") as f:
            for number, raw in numbered_lines(f):
                try:
                    answer = decode_line(_decoder, raw)
                except BadLine as bad:
                    kind = "bad answer" if bad.shape else "not a JSON object"
                    self._report(number, f"{kind}: {bad.message}", bad.col)
                    continue
                if answer.question not in self.questions:
                    self._report(number, f"unknown question {answer.question!r}")
                    continue
                pair = (answer.system, answer.question)
                first = seen.get(pair)
                if first is not None:
                    self._report(
                        number,
                        f"duplicate answer of system {answer.system!r} to question "
                        f"{answer.question!r} (first at line {first}); skipped",
                    )
                    continue
                seen[pair] = number
                self.count += 1
                yield answer


def count_lines(path: str | Path) -> int:
    """Lines in `path`, an upper bound on its answers, for a progress total.

    Counted in 1 MiB chunks: the file is never loaded whole.
    """
    total = 0
    tail = b""
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            total += chunk.count(b"\n")
            tail = chunk
    if tail and not tail.endswith(b"\n"):
        total += 1
    return total
