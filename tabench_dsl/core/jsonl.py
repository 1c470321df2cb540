"""One line of a JSONL data file (answers, results, decisions), read as hostile input.

The answers, results and decisions readers all decode their lines through `decode_line`, so they
agree on what a bad line is and none of them can be made to raise anything but `BadLine`:

- a UTF-8 byte order mark at the start of a line is dropped: an editor may save one at the start
  of a file, and `cat a.jsonl b.jsonl` carries it into the middle. No valid JSON line starts with
  one, so dropping it never changes what a good line means;
- bytes that are not UTF-8, and `\\uD800`-style escapes of half a surrogate pair (JSON that names
  no character), are reported at their column, not only as "invalid";
- JSON nested deeper than the decoder can follow is a bad line (msgspec raises `RecursionError`
  there, which no reader should let through);
- anything else msgspec rejects keeps msgspec's own message (it names the field at fault).

Columns are 1-based and count characters of the line as decoded, the BOM left out (an editor does
not show it either).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

import msgspec

#: The UTF-8 byte order mark.
BOM = b"\xef\xbb\xbf"

#: A JSON backslash escape: `\uXXXX` (group 1 holds the hex digits) or a one-character escape. Read
#: left to right, `\\` is consumed whole, so `\\ud800` (an escaped backslash, then text) is no escape.
_ESCAPE = re.compile(r"\\(?:u([0-9a-fA-F]{4})|.)", re.DOTALL)


class BadLine(Exception):
    """Why one line could not be read.

    `message` says what is wrong; `col` is the 1-based column of the fault when it is known (bad
    text), else None; `shape` is True when the line is JSON but not of the shape expected (msgspec's
    `ValidationError`), so a reader can word the two cases as it always has.
    """

    def __init__(self, message: str, *, col: int | None = None, shape: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.col = col
        self.shape = shape


def strip_bom(line: bytes) -> bytes:
    """`line` without a UTF-8 byte order mark at its start."""
    return line[len(BOM) :] if line.startswith(BOM) else line


def numbered_lines(lines: Iterable[bytes]) -> Iterator[tuple[int, bytes]]:
    """The lines that are not blank, each with its 1-based number and without a leading BOM (a
    line holding only a BOM is blank: an empty file saved by an editor that adds one). Each line
    keeps its line break, so a reader can tell a torn last line (one without)."""
    for number, line in enumerate(lines, start=1):
        line = strip_bom(line)
        if line.strip():
            yield number, line


def decode_line(decoder: msgspec.json.Decoder[Any], line: bytes) -> Any:
    """Decode one line with `decoder`, or raise `BadLine` saying why and where."""
    line = strip_bom(line)
    try:
        return decoder.decode(line)
    except msgspec.ValidationError as exc:
        raise BadLine(str(exc), shape=True) from None
    except msgspec.DecodeError as exc:
        raise text_fault(line) or BadLine(str(exc)) from None
    except RecursionError:
        raise BadLine("JSON nested too deeply") from None


_any_decoder = msgspec.json.Decoder()


def is_json(line: bytes) -> bool:
    """True when `line` (a BOM allowed) is one JSON value, of any shape.

    JSON nested too deeply to decode counts as JSON: it is a whole line someone wrote, which a
    reader skips with a warning, never a torn write to cut off.
    """
    try:
        _any_decoder.decode(strip_bom(line))
    except msgspec.DecodeError:
        return False
    except RecursionError:
        return True
    return True


def text_fault(line: bytes) -> BadLine | None:
    """A `BadLine` at the first byte that is not UTF-8, or at the first lone surrogate escape; None
    when the line is good text (its fault, if any, is in the JSON)."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        col = len(line[: exc.start].decode("utf-8")) + 1  # everything before the fault is good UTF-8
        byte = line[exc.start]
        return BadLine(f"not valid UTF-8 (byte 0x{byte:02x}); the file must be UTF-8 text", col=col)
    lone = _lone_surrogate(text)
    if lone is not None:
        col, escape = lone
        return BadLine(f"{escape} is half of a surrogate pair: JSON text must name whole characters", col=col)
    return None


def _lone_surrogate(text: str) -> tuple[int, str] | None:
    """(column, escape) of the first `\\uD800`-`\\uDFFF` escape that is not part of a high-low pair."""
    pending: tuple[int, str] | None = None  # a high half, waiting for its low half right after it
    pending_end = -1
    for match in _ESCAPE.finditer(text):
        digits = match.group(1)
        value = int(digits, 16) if digits else None
        if pending is not None:
            if match.start() == pending_end and value is not None and 0xDC00 <= value <= 0xDFFF:
                pending = None
                continue
            return pending
        if value is None:
            continue
        if 0xD800 <= value <= 0xDBFF:
            pending, pending_end = (match.start() + 1, match.group(0)), match.end()
        elif 0xDC00 <= value <= 0xDFFF:
            return match.start() + 1, match.group(0)
    return pending
