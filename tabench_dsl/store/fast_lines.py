"""Decoding the lines of a large JSONL file at the decoder's speed, with `jsonl`'s rules kept.

`numbered_lines` and `decode_line` check every line for a byte order mark and for being blank
before decoding it: at a million lines that Python work costs as much as the decoding. A good line
needs neither check (JSON never starts with a BOM, and a blank line is not JSON), so
`decoded_lines` first hands each line to the decoder as it is, and only a line the decoder
rejects goes through `numbered_lines`' and `decode_line`'s checks, which then decide exactly as
they always have: the BOM dropped, a blank line skipped, a bad line reported with its column.
"""

from __future__ import annotations

import bisect
import operator
from collections.abc import Callable, Iterator, Sequence
from itertools import accumulate, repeat
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from ..core.jsonl import BadLine, decode_line, strip_bom

T = TypeVar("T")

#: Bytes read at a time: lines are split from blocks rather than read one `readline` each. A
#: block of a megabyte is reused by the allocator; one of 4 MB costs a fresh mapping of memory each
#: (its pages faulted in: 40% more time splitting a file into lines).
BLOCK = 1 << 20
#: Lines picked by their offsets (`lines_starting_at`) within this many bytes share a read; a
#: line's first `PROBE` bytes are read with it (most lines end within them).
SPAN, PROBE = 1 << 18, 1 << 12
#: Lines decoded together by `decoded_blocks_at`: few enough that their values stay in the CPU's
#: cache while the caller takes them apart (a block of 4 MB of lines decoded at once is read back
#: from memory, at twice the cost).
BATCH = 128


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


def decoded_blocks_at(
    path: str | Path,
    decoder: msgspec.json.Decoder[Any],
    on_bad: Callable[[int, BadLine], None],
    *,
    stop: int | None,
    start: int = 0,
) -> Iterator[tuple[list[int], list[Any]]]:
    """`decoded_lines` of the bytes of `path` from `start` to `stop` (None: the end), `BATCH` lines
    at a time: each batch's values and the offsets their lines start at (for a reader that reads
    some of the lines again, `lines_starting_at`), as two lists. A batch whose every line decodes
    as it is is decoded in one call (`map`, no Python work a line); a batch with a line the decoder
    refuses is decoded again line by line, each such line checked as `decoded_lines` checks it, so
    the values and the bad lines are the same either way."""
    decode = decoder.decode
    number = 0  # lines before the batch
    for at, block in line_blocks(path, start, stop):
        for first in range(0, len(block), BATCH):
            lines = block[first : first + BATCH]
            offsets = list(accumulate(map(operator.add, map(len, lines), repeat(1)), initial=at))
            at = offsets.pop()  # where the next batch starts
            try:
                values = list(map(decode, lines))
            except (msgspec.DecodeError, RecursionError):
                offsets, values = _checked_block(decoder, lines, offsets, number, on_bad)
            number += len(lines)
            yield offsets, values


def _checked_block(
    decoder: msgspec.json.Decoder[Any], lines: list[bytes], offsets: list[int], number: int, on_bad
) -> tuple[list[int], list[Any]]:
    """The offsets and values of a batch of lines (after `number` lines) decoded one by one, each
    line the decoder refuses checked (`_checked`)."""
    decode = decoder.decode
    kept_offsets, values = [], []
    for place, (at, line) in enumerate(zip(offsets, lines, strict=True), start=number + 1):
        try:
            value = decode(line)
        except (msgspec.DecodeError, RecursionError):
            value = _checked(decoder, line, place, on_bad)
            if value is _NO_VALUE:
                continue
        kept_offsets.append(at)
        values.append(value)
    return kept_offsets, values


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


def decoded_again(decoder: msgspec.json.Decoder[T], line: bytes) -> T | None:
    """The value of a line read again at its offset (`lines_starting_at`), a byte order mark
    dropped as a first read drops it; None when the line holds none (a file rewritten since, or
    a line only a lighter decoder took)."""
    for text in (line, strip_bom(line)):
        try:
            return decoder.decode(text)
        except (msgspec.DecodeError, RecursionError):
            continue
    return None


def lines_at(path: str | Path, start: int = 0, stop: int | None = None) -> Iterator[tuple[int, bytes]]:
    """Each line of `path` (from byte `start`, a line's start, to `stop`, None: the end) with the
    offset it starts at, without its line break, read in blocks."""
    for position, lines in line_blocks(path, start, stop):
        for line in lines:
            yield position, line
            position += len(line) + 1


def lines_starting_at(path: str | Path, offsets: Sequence[int]) -> Iterator[bytes]:
    """The line of `path` that starts at each of `offsets` (ascending), without its line break, in
    order. A read takes the lines within `SPAN` bytes of the first it is made for, and no more
    than reaches the last of them (plus `PROBE` bytes for that line): lines close together share
    a read, a line far from the others is a read of its own of a few kilobytes, and no byte is
    read twice but the end of a line longer than its probe."""
    with open(path, "rb", buffering=0) as f:
        block, base = b"", 0
        for place, at in enumerate(offsets):
            end = block.find(b"\n", at - base) if base <= at < base + len(block) else -1
            if end < 0:  # not in the block, or running past its end
                last = offsets[bisect.bisect_right(offsets, at + SPAN, place) - 1]
                f.seek(at)
                block, base = f.read(last - at + PROBE), at
                end = block.find(b"\n")
                while end < 0 and (more := f.read(SPAN)):  # a line longer than its probe
                    searched = len(block)
                    block += more
                    end = block.find(b"\n", searched)
                if end < 0:  # the file's last line, with no line break
                    end = len(block)
            yield block[at - base : end]


def line_blocks(
    path: str | Path, start: int = 0, stop: int | None = None
) -> Iterator[tuple[int, list[bytes]]]:
    """The lines of `path` (from byte `start`, a line's start, to `stop`, None: the end) without
    their line breaks, a block's at a time: each block's lines and the offset the first starts at
    (a final line break ends the last line; it starts no empty one)."""
    with open(path, "rb", buffering=0) as f:
        f.seek(start)
        position, rest = start, b""
        left = -1 if stop is None else stop - start
        while left and (block := f.read(BLOCK if left < 0 else min(BLOCK, left))):
            left -= len(block) if left > 0 else 0
            lines = block.split(b"\n")
            if rest:  # the line the block before ended in: only it is copied again, not the block
                lines[0] = rest + lines[0]
            rest = lines.pop()
            if lines:
                yield position, lines
                position += sum(map(len, lines)) + len(lines)
        if rest:
            yield position, [rest]


def _lines(path: str | Path, start: int = 0, stop: int | None = None) -> Iterator[bytes]:
    """The lines of `path` (from byte `start` to `stop`, else the end) without their line breaks."""
    for _, lines in line_blocks(path, start, stop):
        yield from lines
