"""Lint's problems as data: a code, a severity and a span each, with `# tabench: ignore[CODE]`
applied. What `lint --format json|sarif` writes and the language server publishes.

A span runs from the problem's column to the end of the word, string or key it stands on
(`end_column` is the column just past its last character, as SARIF counts), on one line.

A comment `# tabench: ignore[W102]` (several codes: `ignore[W102, W103]`) on the line directly
above a warning silences that warning there. Errors are never silenced: a battery with an error
does not compile, whatever a comment says.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import SpecError
from .codes import code_of

#: `# tabench: ignore[CODE, ...]` as a whole comment line.
IGNORE_COMMENT = re.compile(r"^\s*#\s*tabench:\s*ignore\[\s*([A-Z]\d{3}(?:\s*,\s*[A-Z]\d{3})*)\s*\]\s*$")

#: A one-line string at the start of a span, escapes included.
_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"?')

#: A bare word, a key or a number at the start of a span.
_WORD = re.compile(r"[^\s{}\"#,:\[\]]+")


@dataclass(frozen=True)
class Problem:
    """One problem of a battery, as machines read it (columns are 1-based, `end_column` exclusive)."""

    code: str
    severity: str
    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    message: str
    hint: str | None
    source_line: str | None

    def as_json(self) -> dict[str, object]:
        """The problem's fields for `lint --format json` (no source line)."""
        return {
            "code": self.code,
            "severity": self.severity,
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
            "message": self.message,
            "hint": self.hint,
        }


def problem_of(error: SpecError, source_line: str | None = None) -> Problem:
    """`error` as a `Problem`: its code from the table, its span from its source line (or from
    `source_line`, the line as an editor holds it)."""
    line = source_line if source_line is not None else error.source_line
    return Problem(
        code=code_of(error),
        severity=error.severity,
        path=error.path,
        line=error.line,
        column=error.col,
        end_line=error.line,
        end_column=span_end(line, error.col),
        message=error.message,
        hint=error.hint,
        source_line=line,
    )


def span_end(source_line: str | None, col: int) -> int:
    """The column just past the string, word or key starting at `col` of `source_line` (at least
    one character, when the line has one there)."""
    if source_line is None or col < 1 or col > len(source_line):
        return max(col, 1)
    rest = source_line[col - 1 :]
    if rest.startswith("\\"):  # an escape in a string: `\q`, `\ud800`
        length = 6 if rest[1:2] == "u" else 2
    elif rest.startswith('"""'):
        close = rest.find('"""', 3)
        length = len(rest) if close < 0 else close + 3
    else:
        match = _STRING.match(rest) if rest.startswith('"') else _WORD.match(rest)
        length = len(match.group(0)) if match else 1
    return col + max(length, 1)


def silenced(problem: Problem, read_lines: Callable[[str], list[str] | None]) -> bool:
    """True when `problem` is a warning and the line above it is `# tabench: ignore[...]` naming
    its code. `read_lines(path)` gives a file's lines (None when it cannot be read)."""
    if problem.severity == "error" or problem.line < 2:
        return False
    lines = read_lines(problem.path)
    if lines is None or problem.line - 2 >= len(lines):
        return False
    match = IGNORE_COMMENT.match(lines[problem.line - 2])
    if match is None:
        return False
    return problem.code in {c.strip() for c in match.group(1).split(",")}


def coded_problems(errors: Iterable[SpecError], *, texts: dict[str, str] | None = None) -> list[Problem]:
    """`errors` as problems, warnings that an ignore comment silences left out. `texts` gives the
    text of files that are not (or not yet) on disk, by path, as an editor holds them."""
    cache: dict[str, list[str] | None] = {}

    def read_lines(path: str) -> list[str] | None:
        if path not in cache:
            if texts is not None and path in texts:
                cache[path] = texts[path].splitlines()
            else:
                try:
                    cache[path] = Path(path).read_text(encoding="utf-8-sig").splitlines()
                except (OSError, UnicodeDecodeError):
                    cache[path] = None
        return cache[path]

    def held_line(error: SpecError) -> str | None:
        if texts is None or error.path not in texts:
            return None
        lines = read_lines(error.path) or []
        return lines[error.line - 1] if 0 < error.line <= len(lines) else None

    found = [problem_of(e, held_line(e)) for e in errors]
    return [p for p in found if not silenced(p, read_lines)]


def lint_problems(path: str | Path, *, allow_dirs: Iterable[str | Path] = ()) -> list[Problem]:
    """Every problem of the battery at `path` (as `lint.lint_battery` finds them), coded, with the
    ignore comments applied, sorted by path, line and column."""
    from .lint import lint_battery

    return coded_problems(lint_battery(path, allow_dirs=allow_dirs))
