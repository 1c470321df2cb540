"""The answers file: JSONL, one `{"system", "question", "answer"}` object per line, read as a stream.

A line that does not parse, lacks a field, names a question the battery does not have, or repeats a
(system, question) pair already given is reported as `path:line: message` and skipped; the run goes
on and the CLI exits 1 at the end. Blank lines are ignored. The file is never loaded whole: grading
100,000 answers holds one line at a time (plus the set of pairs seen, to catch duplicates).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from pathlib import Path

import msgspec

from ..core.records import Answer

_decoder = msgspec.json.Decoder(Answer)


class AnswerProblem(msgspec.Struct, frozen=True):
    """One skipped line of an answers file."""

    path: str
    line: int
    message: str

    def render(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


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

    def _report(self, line: int, message: str) -> None:
        self.problems += 1
        if self.on_problem is not None:
            self.on_problem(AnswerProblem(self.path, line, message))

    def __iter__(self) -> Iterator[Answer]:
        seen: dict[tuple[str, str], int] = {}
        with open(self.path, "rb") as f:
            for number, raw in enumerate(f, start=1):
                if not raw.strip():
                    continue
                try:
                    answer = _decoder.decode(raw)
                except msgspec.ValidationError as exc:
                    self._report(number, f"bad answer: {exc}")
                    continue
                except msgspec.DecodeError as exc:
                    self._report(number, f"not a JSON object: {exc}")
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
