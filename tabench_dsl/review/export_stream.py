"""The standing records of a results file, read one at a time, for `tabench export`.

Holding every record of a large file (answers, reasons and replies) to find the standing one of
each pair needs memory in proportion to the file. CSV is written in one read over the file's
byte ranges, each range by a process of its own (`store.line_ranges`, both cores: the rows'
formatting is most of an export's time): a range writes the row of each of its records, in file
order, to the export itself (the first range) or to a part file of its own (each later one), and
keeps where each row starts and, in a `PairTable`, each pair's last record. A row then stands
unless a later record of its pair follows, in its range (a record its table does not hold) or in
a later one (a pair of that range's table): the first range's rows that do not stand are taken
out of the export, and the parts are copied in after them in order, their rows that do not stand
left out (none, in a file graded once). Memory grows with the pairs and records (a few bytes
each), not with the texts.

Parquet is written from the records themselves: a first pass keeps each pair's last position
(`standing_positions`), the second yields the records at them (`standing_records`). Both ways read
the records as `results.iter_records` does (`fast_lines.decoded_lines` with the record decoder),
so a line that is no record is no record in either.

A decision is applied by `decisions.apply_decisions` to the standing record alone, with the
decisions made on its pair: which decision applies depends on nothing else, so each row is what
applying them to the whole file gives. Records appended after the read starts (a grading still
writing) are left out: the export is of the file as it was measured then.
"""

from __future__ import annotations

import contextlib
import functools
import os
import tempfile
from array import array
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

import msgspec

from ..core.jsonl import BadLine
from ..core.records import Decision, Record, record_decoder
from ..store.fast_lines import decoded_lines
from ..store.light_records import bad_line_reporter
from ..store.line_ranges import line_ranges, processes_for, side_by_side
from ..store.pair_table import PairTable
from ..store.results import iter_records
from .decisions import apply_decisions
from .export import CSV_HEADER, csv_row, row_values

#: Rows formatted before they are written to a part, as one write.
_ROWS_A_WRITE = 4096


class StandingPositions:
    """(system, question) -> the 0-based position, among a file's records, of that pair's last
    record: each name numbered once, the positions in a `PairTable` (a few bytes a pair, where a
    dict of pairs costs a hundred)."""

    def __init__(self) -> None:
        self.numbers: dict[str, int] = {}
        self.table = PairTable()

    def note(self, system: str, question: str, position: int) -> None:
        number, numbers = self.numbers.setdefault, self.numbers
        self.table.put(number(system, len(numbers)), number(question, len(numbers)), position)

    def get(self, pair: tuple[str, str]) -> int | None:
        s, q = self.numbers.get(pair[0]), self.numbers.get(pair[1])
        position = self.table.get(s, q) if s is not None and q is not None else -1
        return position if position >= 0 else None

    def __len__(self) -> int:
        return len(self.table)


def standing_positions(results: Path, *, on_problem: Callable[[str], None]) -> StandingPositions:
    """Each pair's last record's position among the records of `results`. Bad lines go to
    `on_problem`, as `iter_records` reports them."""
    last = StandingPositions()
    note = last.note
    for position, record in enumerate(iter_records(results, on_problem=on_problem)):
        note(record.system, record.question, position)
    return last


def standing_records(
    results: Path, positions: StandingPositions, decisions: list[Decision]
) -> Iterator[Record]:
    """The record at each pair's position in `positions`, in file order, with that pair's
    `decisions` applied (`apply_decisions`)."""
    by_pair = _by_pair(decisions)
    for position, record in enumerate(iter_records(results)):
        key = record.key
        if positions.get(key) != position:
            continue
        mine = by_pair.get(key)
        yield apply_decisions([record], mine)[0] if mine else record


def _by_pair(decisions: list[Decision]) -> dict[tuple[str, str], list[Decision]]:
    by_pair: dict[tuple[str, str], list[Decision]] = {}
    for decision in decisions:
        by_pair.setdefault((decision.system, decision.question), []).append(decision)
    return by_pair


class _Part(msgspec.Struct):
    """What a range's process hands back: its names (numbered in order), each pair's last record
    among the range's (`PairTable`), where each row starts in its part file, and its bad lines:
    the first range's worded as `iter_records` words them (`worded`: its numbers are the file's),
    a later range's numbered from the range's first line (`bad`)."""

    names: list[str]
    last: PairTable
    starts: array
    bad: list[tuple[int, BadLine]]
    worded: list[str]


def write_standing_csv(
    results: Path,
    decisions: list[Decision],
    sink: BinaryIO,
    *,
    parts_in: Path,
    on_problem: Callable[[str], None],
) -> int:
    """Write the export's CSV of `results` (header and the standing records' rows, `decisions`
    applied) to `sink`, a file open for writing at its start (the first range's rows written to
    it as they are read, each later range's first to a part file in the folder `parts_in`); the
    rows written. Bad lines go to `on_problem`, in file order, as `iter_records` reports them,
    before a later range's rows are copied in (a file that is no results file at all stops at its
    first line: `bad_line_reporter`)."""
    ranges = line_ranges(results, processes_for(results))
    by_pair = _by_pair(decisions)
    sink.write(CSV_HEADER)
    sink.flush()  # nothing left in the buffer for the forked processes to inherit
    base = sink.tell()
    with contextlib.ExitStack() as stack:
        # The first range (read in this process) writes its rows to the export itself; each later
        # one to an unnamed file beside the export (its disk has room for it), gone when closed,
        # copied in after. At ten million records every byte not written twice is disk time saved.
        files = [sink, *(stack.enter_context(tempfile.TemporaryFile(dir=parts_in)) for _ in ranges[1:])]
        works = [
            functools.partial(_write_range, results, by_pair, file, start, stop)
            for file, (start, stop) in zip(files, ranges, strict=True)
        ]
        parts = side_by_side(works)
        _report(results, ranges, parts, on_problem)
        written = 0
        for n, (part, file) in enumerate(zip(parts, files, strict=True)):
            dropped = _not_standing(part, parts[n + 1 :])
            written += len(part.starts) - len(dropped)
            if file is sink:
                _drop_rows(sink, base, part.starts, dropped)
            else:
                _copy_rows(file, sink, part.starts, dropped)
        return written


def _write_range(
    results: Path, by_pair: dict[tuple[str, str], list[Decision]], file: BinaryIO, start: int, stop: int
) -> _Part:
    """Write the row of every record from byte `start` to `stop` of `results` to `file` (each with
    its pair's decisions applied); what the range holds (`_Part`)."""
    numbers: dict[str, int] = {}
    number = numbers.setdefault
    last, starts = PairTable(), array("Q")
    bad: list[tuple[int, BadLine]] = []
    worded: list[str] = []
    # The file's first range says each problem as `iter_records` does at once: a file that is no
    # results file at all (an answers file by mistake) stops at its first line, not its last.
    on_bad = bad_line_reporter(results, worded.append) if start == 0 else lambda n, why: bad.append((n, why))
    rows: list[bytes] = []
    at = 0
    for position, record in enumerate(decoded_lines(results, record_decoder, on_bad, start=start, stop=stop)):
        system, question = record.system, record.question
        last.put(number(system, len(numbers)), number(question, len(numbers)), position)
        if by_pair:
            mine = by_pair.get((system, question))
            record = apply_decisions([record], mine)[0] if mine else record
        row = csv_row(row_values(record)).encode("utf-8")
        starts.append(at)
        at += len(row)
        rows.append(row)
        if len(rows) == _ROWS_A_WRITE:
            file.write(b"".join(rows))
            rows.clear()
    file.write(b"".join(rows))
    file.flush()
    return _Part(list(numbers), last, starts, bad, worded)


def _report(
    results: Path, ranges: list[tuple[int, int]], parts: list[_Part], on_problem: Callable[[str], None]
) -> None:
    """Each range's bad lines, numbered from the file's first line, to `on_problem` in order."""
    report = bad_line_reporter(results, on_problem)
    for (start, _), part in zip(ranges, parts, strict=True):
        for problem in part.worded:
            on_problem(problem)
        before = _lines_before(results, start) if part.bad else 0
        for number, why in part.bad:
            report(before + number, why)


def _lines_before(results: Path, offset: int) -> int:
    """The lines of `results` before byte `offset` (the start of a line)."""
    count, left = 0, offset
    with open(results, "rb") as f:
        while left and (block := f.read(min(left, 1 << 22))):
            count += block.count(b"\n")
            left -= len(block)
    return count


def _not_standing(part: _Part, later: list[_Part]) -> set[int]:
    """The positions of `part`'s records that do not stand: a later record of the pair follows,
    in the part itself (its table holds the pair's last one) or in a `later` part."""
    table, rows = part.last, len(part.starts)
    dropped: set[int] = set()
    if len(table) < rows:  # some pair has two records here: only its last stands
        dropped = set(range(rows)) - _held(table)
    numbers = {name: n for n, name in enumerate(part.names)}
    systems = table.systems()
    for after in later:
        for s_after in after.last.systems():
            s = numbers.get(after.names[s_after])
            if s is None or s not in systems:
                continue
            for q_after in after.last.questions_of(s_after):
                q = numbers.get(after.names[q_after])
                position = table.get(s, q) if q is not None else -1
                if position >= 0:
                    dropped.add(position)
    return dropped


def _held(table: PairTable) -> set[int]:
    """Every value `table` holds."""
    held: set[int] = set()
    for s in table.systems():
        held.update(table.get(s, q) for q in table.questions_of(s))
    return held


def _kept_spans(starts: array, dropped: set[int], end: int) -> list[tuple[int, int]]:
    """The (start, stop) byte spans of the rows that starting at `starts` (the last ending at
    `end`) but those `dropped`, in order, each as long as it can be."""
    spans: list[tuple[int, int]] = []
    begin = 0
    for position in sorted(dropped):
        row_end = starts[position + 1] if position + 1 < len(starts) else end
        spans.append((begin, starts[position]))
        begin = row_end
    spans.append((begin, end))
    return [(start, stop) for start, stop in spans if start < stop]


def _copy_rows(file: BinaryIO, sink: BinaryIO, starts: array, dropped: set[int]) -> None:
    """Copy the rows of the part `file` (starting at `starts`) to `sink`, but those `dropped`."""
    end = file.seek(0, os.SEEK_END)
    source, target = file.fileno(), sink.fileno()
    for offset, stop in _kept_spans(starts, dropped, end):
        while offset < stop:
            if hasattr(os, "sendfile"):  # copied by the kernel, never through this process
                sent = os.sendfile(target, source, offset, stop - offset)
            else:
                sent = os.write(target, os.pread(source, min(stop - offset, 1 << 22), offset))
            if sent == 0:
                raise OSError(f"a part of the export ended early at byte {offset}")
            offset += sent


def _drop_rows(sink: BinaryIO, base: int, starts: array, dropped: set[int]) -> None:
    """Take the rows `dropped` out of those written to `sink` from byte `base` on (starting at
    `starts`, from `base`): each later row moved down over them, the file cut after the last. Rows
    only move towards the start, and each block is read before any byte is written over it."""
    sink.flush()
    end = sink.seek(0, os.SEEK_END) - base
    if not dropped:
        return
    fd, at = sink.fileno(), base
    for offset, stop in _kept_spans(starts, dropped, end):
        offset += base
        stop += base
        while offset < stop:
            block = os.pread(fd, min(stop - offset, 1 << 22), offset)
            if not block:
                raise OSError(f"the export ended early at byte {offset}")
            offset += len(block)
            while block:
                wrote = os.pwrite(fd, block, at)
                at += wrote
                block = block[wrote:]
    os.ftruncate(fd, at)
    sink.seek(at)
