"""A file given where a results file belongs that is not one: said in one line, exit 2.

`tabench totals ANSWERS.jsonl` (an answers file by mistake) once printed a "not a result record"
warning per line and empty tables. Every reader of a results file reports its bad lines through
`light_records.bad_line_reporter`, which asks `foreign_file_problem` at the first bad line: when
that line is the file's first and none of the file's first lines is a record, the file is not a
results file at all, and the command stops with one line saying what it looks like and what to do
(an answers file: grade it first). A results file with a damaged line stays a results file: its bad
lines are reported as ever.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import msgspec

from ..core.display import shown
from ..core.jsonl import BadLine, decode_line, numbered_lines

#: How many of a file's first lines are looked at for a record (as `outputs.holds_records` does).
LINES_LOOKED_AT = 64


class _AnswerShape(msgspec.Struct):
    """An answers-file line: a system, a question and an answer, and none of a record's verdict."""

    system: str
    question: str
    answer: str
    tier: str | None = None
    verdict: str | None = None


def _lines(path: Path) -> list[tuple[int, bytes]]:
    try:
        with open(path, "rb") as f:
            return list(itertools.islice(numbered_lines(f), LINES_LOOKED_AT))
    except OSError:
        return []


def _decodes(decoder: msgspec.json.Decoder, line: bytes) -> object | None:
    try:
        return decode_line(decoder, line)
    except BadLine:
        return None


def foreign_file_problem(path: str | Path, first_bad_line: int, records: msgspec.json.Decoder) -> str | None:
    """The one line to say when `path`, whose first bad line is `first_bad_line`, is not a results
    file at all (none of its first lines decodes with `records`); None when it is one."""
    lines = _lines(Path(path))
    if not lines or lines[0][0] != first_bad_line:
        return None
    if any(_decodes(records, line) is not None for _, line in lines):
        return None
    name = shown(str(path))
    answer = _decodes(msgspec.json.Decoder(_AnswerShape), lines[0][1])
    answers_line = isinstance(answer, _AnswerShape) and answer.tier is None and answer.verdict is None
    if answers_line or Path(path).suffix.lower() in (".csv", ".eval"):
        return (
            f"{name}: this looks like an answers file, not a results file; grade it first: "
            f"tabench grade BATTERY --answers {name}"
        )
    return f"{name}: not a results file: none of its first lines is a record `tabench grade` writes"
