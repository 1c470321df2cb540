"""A results file's lines with the offsets they start at, and whole records read again at those
offsets only.

A first read decodes every line light (`light_records`: no answer, reason or reply texts), and a
reader that then needs a few of its records whole (the answers `report --html` shows in full) would
read the file a second time to find them: at a million records, a tenth of the command. Read with
their offsets (`iter_light_structs_at`), the lines it keeps are read again where they start
(`records_at`), lines close together in one read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from ..core.jsonl import BadLine
from ..core.records import Record, record_decoder
from .fast_lines import decoded_again, decoded_blocks_at, lines_starting_at
from .light_records import LightRecord, bad_line_reporter, light_record_decoder


def iter_light_structs_at(
    path: str | Path,
    on_bad: Callable[[int, BadLine], None] | None = None,
    start: int = 0,
    stop: int | None = None,
) -> Iterator[tuple[int, LightRecord]]:
    """`light_records.iter_light_structs` (the same lines, bad ones handed to `on_bad`), each
    with the offset its line starts at."""
    report = bad_line_reporter(path, None) if on_bad is None else on_bad
    for offsets, records in decoded_blocks_at(path, light_record_decoder, report, start=start, stop=stop):
        yield from zip(offsets, records, strict=True)


def records_at(path: str | Path, offsets: Iterable[int]) -> dict[int, Record | None]:
    """The record of the line starting at each of `offsets`, decoded whole (a byte order mark
    dropped, as a first read drops it), by offset; None for a line that holds no whole record (one
    only the light decoder takes, or a file rewritten since)."""
    wanted = sorted(set(offsets))
    lines = lines_starting_at(path, wanted)
    return {at: decoded_again(record_decoder, line) for at, line in zip(wanted, lines, strict=True)}
