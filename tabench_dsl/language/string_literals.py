"""The two string forms of rubric files, decoded: `"..."` with JSON's escapes, and `\"\"\"...\"\"\"` text.

A `"..."` string reads as JSON reads it (docs/language.md section 4.3); a bad escape or a lone
surrogate is a `SpecError` at its own column (`decode_string`). The coarse reader of `parse` first
tries `escaped_string`, which says None where the error must come from the token grammar's reader.
A `\"\"\"...\"\"\"` string is raw text, its first and last line breaks and its common indentation
dropped (`decode_long_string`, section 4.3).
"""

from __future__ import annotations

import re
import textwrap
from json import JSONDecodeError, JSONDecoder
from json.decoder import scanstring  # type: ignore[attr-defined]  # public, but not in typeshed

from ..core.errors import SpecError
from .files import SURROGATE
from .syntax import HINT_ESCAPE, source_line


def decode_long_string(raw: str) -> str:
    """The text of a `\"\"\"...\"\"\"` string (quotes included in `raw`), by the rule of
    docs/language.md section 4.3.

    A line break right after the opening quotes is dropped; so is a last line break that only
    white space separates from the closing quotes (with that white space); then the common
    indentation is removed as `textwrap.dedent` does.
    """
    body = raw[3:-3]
    if body.startswith("\n"):
        body = body[1:]
    head, newline, last = body.rpartition("\n")
    if newline and not last.strip(" \t"):
        body = head
    return _dedent(body)


def _dedent(text: str) -> str:
    """`textwrap.dedent(text)`, at a fifth of its cost when every line is empty or indented with
    spaces only before its first visible character (the usual case); else textwrap itself."""
    lines = text.split("\n")
    margin = None
    for line in lines:
        rest = line.lstrip(" ")
        if not rest:
            if line:
                return textwrap.dedent(text)  # a line of spaces only: textwrap empties it
            continue
        if rest[0].isspace():
            return textwrap.dedent(text)  # a tab or other white space in the indentation
        indent = len(line) - len(rest)
        if margin is None or indent < margin:
            margin = indent
    if not margin:
        return text
    return "\n".join([line[margin:] for line in lines])


def escaped_string(raw: str) -> str | None:
    """The text of `raw`, a `"..."` string with an escape (quotes included), by JSON's string
    scanner; None for a bad escape or a lone surrogate, which `decode_string` reports at its column.
    (A string without an escape is simply the text between its quotes.)"""
    try:
        value, end = scanstring(raw, 1, False)
    except ValueError:
        return None
    if end != len(raw) or SURROGATE.search(value):
        return None
    return value


#: json.loads of one "..." string: the strict=False decoder's own string scanner.
_JSON = JSONDecoder(strict=False)


def decode_string(raw: str, path: str, line: int, column: int, lines: list[str]) -> str:
    """The text of `raw`, a `"..."` string (quotes included) written at `line` and `column` of the
    file `path` whose `lines` these are; a `SpecError` at the escape for a bad escape or a lone
    surrogate."""
    try:
        value = _JSON.decode(raw)
    except JSONDecodeError as exc:
        # json points at the backslash of a bad escape, at the `u` of a bad `\uXXXX`.
        start = exc.pos - 1 if exc.msg.startswith("Invalid \\uXXXX") else exc.pos
        width = 6 if raw[start + 1 : start + 2] == "u" else 2
        escape = raw[start : start + width].rstrip('"')
        raise SpecError(
            f"bad escape '{escape}' in string",
            path=path,
            line=line,
            col=column + start,
            hint=HINT_ESCAPE,
            source_line=source_line(lines, line),
        ) from None
    if SURROGATE.search(value):
        start = lone_surrogate_at(raw) or 0
        raise SpecError(
            f"lone surrogate escape '{raw[start : start + 6]}' in string",
            path=path,
            line=line,
            col=column + start,
            hint="a \\uD800-\\uDFFF escape is half of a character: write its pair after it "
            "(\\ud83d\\ude00), or the character itself",
            source_line=source_line(lines, line),
        )
    return value


#: One escape of a "..." string: a `\\uXXXX` surrogate pair, another `\\uXXXX` (its code in group
#: 1), or a backslash and the character after it.
_ESCAPE = re.compile(r"\\(?:ud[89ab][0-9a-f]{2}\\ud[c-f][0-9a-f]{2}|u([0-9a-f]{4})|.)", re.IGNORECASE)


def lone_surrogate_at(raw: str) -> int | None:
    """The offset in `raw` (a "..." string as written) of its first `\\uXXXX` escape that is half of
    a surrogate pair without the other half (a D800-DBFF escape right before a DC00-DFFF one is a
    pair, as JSON reads them), or None."""
    for match in _ESCAPE.finditer(raw):
        if match.group(1) and 0xD800 <= int(match.group(1), 16) <= 0xDFFF:
            return match.start()
    return None
