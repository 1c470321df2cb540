"""Decoding the lines of a large JSONL file at the decoder's speed, with `jsonl`'s rules kept.

`numbered_lines` and `decode_line` check every line for a byte order mark and for being blank
before decoding it: at a million lines that Python work costs as much as the decoding. A good line
needs neither check (JSON never starts with a BOM, and a blank line is not JSON), so
`decoded_lines` first hands each line to the decoder as it is, and only a line the decoder
rejects goes through `numbered_lines`' and `decode_line`'s checks, which then decide exactly as
they always have: the BOM dropped, a blank line skipped, a bad line reported with its column.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec

from ..core.jsonl import BadLine, decode_line, strip_bom

#: Bytes read at a time: lines are split from large blocks rather than read one `readline` each.
BLOCK = 1 << 22


def decoded_lines(
    path: str | Path,
    decoder: msgspec.json.Decoder[Any],
    on_bad: Callable[[int, BadLine], None],
    *,
    start: int = 0,
    stop: int | None = None,
) -> Iterator[Any]:
    """Each line of `path` that decodes, decoded, in file order; each line that does not (blank
    lines aside) is given to `on_bad` with its 1-based number, as `numbered_lines` + `decode_line`
    would report it. A line is decoded without its line break, which JSON reads as whitespace.

    `start` and `stop` read only the bytes between those offsets (each the start of a line: the
    lines appended after an index's extent); numbers then count from the line at `start`."""
    decode = decoder.decode
    number = 0
    for line in _lines(path, start, stop):
        number += 1
        try:
            value = decode(line)
        except (msgspec.DecodeError, RecursionError):
            value = _checked(decoder, line, number, on_bad)
            if value is _NO_VALUE:
                continue
        yield value


def decoded_lines_at(
    path: str | Path,
    decoder: msgspec.json.Decoder[Any],
    on_bad: Callable[[int, BadLine], None],
    *,
    stop: int | None,
    start: int = 0,
) -> Iterator[tuple[int, Any]]:
    """`decoded_lines` of the bytes of `path` from `start` to `stop` (None: the end), each value
    with the offset its line starts at (for a reader that reads some of the lines again)."""
    decode = decoder.decode
    number = 0
    for at, line in lines_at(path, start, stop):
        number += 1
        try:
            value = decode(line)
        except (msgspec.DecodeError, RecursionError):
            value = _checked(decoder, line, number, on_bad)
            if value is _NO_VALUE:
                continue
        yield at, value


#: What `_checked` gives for a line that holds no value.
_NO_VALUE: Any = object()


def _checked(decoder: msgspec.json.Decoder[Any], line: bytes, number: int, on_bad) -> Any:
    """A line the decoder refused as it was, checked as `numbered_lines` and `decode_line` check
    it: its value once a byte order mark is dropped, else `_NO_VALUE` (a blank line skipped, a
    bad one given to `on_bad` with its number)."""
    line = strip_bom(line)
    if not line.strip():
        return _NO_VALUE
    try:
        return decode_line(decoder, line)
    except BadLine as bad:
        on_bad(number, bad)
        return _NO_VALUE


def lines_at(path: str | Path, start: int = 0, stop: int | None = None) -> Iterator[tuple[int, bytes]]:
    """Each line of `path` (from byte `start`, a line's start, to `stop`, None: the end) with the
    offset it starts at, without its line break, read in blocks."""
    with open(path, "rb") as f:
        f.seek(start)
        position, rest = start, b""
        left = -1 if stop is None else stop - start
        while left and (block := f.read(BLOCK if left < 0 else min(BLOCK, left))):
            left -= len(block) if left > 0 else 0
            lines = (rest + block).split(b"\n")
            rest = lines.pop()
            for line in lines:
                yield position, line
                position += len(line) + 1
        if rest:
            yield position, rest


def _lines(path: str | Path, start: int = 0, stop: int | None = None) -> Iterator[bytes]:
    """The lines of `path` (from byte `start` to `stop`, else the end) without their line breaks,
    read in blocks (a final line break ends the last line; it starts no empty one)."""
    with open(path, "rb") as f:
        f.seek(start)
        left = -1 if stop is None else stop - start
        rest = b""
        while left and (block := f.read(BLOCK if left < 0 else min(BLOCK, left))):
            left -= len(block) if left > 0 else 0
            block = rest + block
            lines = block.split(b"\n")
            rest = lines.pop()
            yield from lines
        if rest:
            yield rest
