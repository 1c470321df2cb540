"""`tabench fmt` and the language server's formatting: a rubric or policy file in its canonical
layout (`format_rubric`, `format_policy`), never a changed meaning.

`format_text` parses the text first (a file with a syntax error is reported, never formatted),
formats it, and parses the result again: when the two do not read the same (same questions, same
fields, same argument values; same rules), the text is returned unchanged with an error rather
than written. So formatting never changes a prompt, whatever a bug in the layout code might do.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from ..core.errors import SpecError
from .files import decode_spec_bytes
from .format_policy import format_policy
from .format_rubric import format_rubric
from .parse import parse_policy, parse_rubric

#: The file endings `fmt` formats.
FORMATTED_SUFFIXES = (".rubric", ".policy")


def format_text(text: str, path: str | Path) -> str:
    """`text` (the file at `path`, whose ending says rubric or policy) in its canonical layout.

    Raises `SpecError` for a syntax error (the parser's), and when the layout would read
    differently (never expected: a guard).
    """
    path = str(path)
    if path.endswith(".policy"):
        before = _policy_meaning(text, path)
        formatted = format_policy(text)
        after = _policy_meaning(formatted, path)
    else:
        before = _rubric_meaning(text, path)
        formatted = format_rubric(text)
        after = _rubric_meaning(formatted, path)
    if before != after:
        raise SpecError(
            "formatting would change what this file says; it is left as it is",
            path=path,
            line=1,
            col=1,
            hint="please report this file to tabench's authors",
        )
    return formatted


def _rubric_meaning(text: str, path: str) -> list[object]:
    parsed = parse_rubric(text, path)
    return [
        (q.id, [(f.name, [(a.kind, a.value) for a in f.args]) for f in q.fields]) for q in parsed.questions
    ]


def _policy_meaning(text: str, path: str) -> list[object]:
    return [(r.text, r.id) for r in parse_policy(text, path).rules]


def read_formattable(path: Path) -> str:
    """The text of `path` as `fmt` reads it: UTF-8 with a leading byte order mark dropped.
    Raises `SpecError` for bytes that are not UTF-8 and `OSError` as the system gives it."""
    return decode_spec_bytes(path.read_bytes(), path, "file")


def formattable_files(paths: Iterable[str | Path]) -> Iterator[Path]:
    """The files `fmt` formats for `paths`: each file as given, and under each folder every
    `.rubric` and `.policy` file at any depth, in sorted order (symlinked folders not entered)."""
    for given in paths:
        path = Path(given)
        if path.is_dir() and not path.is_symlink():
            found: list[Path] = []
            for root, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                found.extend(Path(root) / f for f in files if f.endswith(FORMATTED_SUFFIXES))
            yield from sorted(found)
        else:
            yield path
