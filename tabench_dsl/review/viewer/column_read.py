"""The viewer's columns (`columns.Table`) read from a results file: the standing record of each
pair as a row of codes, with its line's offset and length, in (system, question) order.

Two passes, so that each line is decoded whole at most once. The first decodes each line only as
far as its pair (and names the lines that are not records, in the words of the whole record's
decoder), which settles the standing records; the second decodes those whole, in (system,
question) order, for the other columns and, as it has each record anyway, the viewer's totals
(`totals_of.PairCount`). Exactly the lines `load_run` takes for records are records here: a line
the first pass took for one that the whole decoder refuses (a pair's earlier line, each decoded
whole to check, or a standing one) makes the first pass run again with the whole decoder.

Building holds integers only, in arrays: each record's pair codes as the file gives them, then
the standing ones put in (system, question) order by a counting sort on the system and, within
each system, a table indexed by question (or a sort, where a system answered few of the
questions); the other fields are coded as the tuple of their values (a file holds few distinct
ones), expanded into a column each at the end: no object per record or per pair is made.
"""

from __future__ import annotations

import functools
import os
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator
from itertools import accumulate, pairwise
from operator import itemgetter
from pathlib import Path

import msgspec

from ...core.errors import UsageError
from ...core.jsonl import BadLine, decode_line, strip_bom
from ...core.records import Record, record_decoder
from ...store.fast_lines import decoded_again, lines_at
from ...store.light_records import bad_line_reporter
from ...store.line_ranges import line_ranges, map_ranges, processes_for
from ...store.results_index import Extent
from ..totals_of import PairCount
from .columns import CODE_TYPE, FIELDS, OFFSET_TYPE, SET_FIELDS, Columns, Table

_CODE_BYTES = array(CODE_TYPE).itemsize


def read_columns(results: Path, *, extent: Extent | None = None, counting: PairCount | None = None) -> Table:
    """Read every line of `results` into the columns of its standing records ((system, question)
    order); the lines that are not records named in `problems` (`line: message`). `extent` is
    the file as measured before the read, kept with the columns. `counting`, when given, counts
    the viewer's totals from the standing records as they are decoded (`totals_of.PairCount`).

    Two passes: the first decodes each line only as far as its pair (and names the lines that are
    none), which settles the standing records; the second decodes those whole, in (system,
    question) order, for the other columns and the count. The lines the first pass took for
    records and the second does not read (each pair's earlier records) are decoded whole too:
    when any of them, or a standing record, is no whole record, the first pass is made again with
    the whole decoder, so exactly the lines a whole read takes are records."""
    for whole in (False, True):
        read = _Read.of(results, whole=whole)
        systems, questions = (list(table) for table in read.tables)
        ranks = [_ranks(systems), _ranks(questions)]
        order = _standing_order(read.codes[0], read.codes[1], ranks, len(questions))
        places, read.offsets = read.offsets, array(OFFSET_TYPE)
        offsets = array(OFFSET_TYPE, map(places.__getitem__, order))
        lengths_read, read.lengths = read.lengths, array(CODE_TYPE)
        lengths = array(CODE_TYPE, map(lengths_read.__getitem__, order))
        if not whole and not _earlier_whole(results, order, places, lengths_read):
            continue
        del places, lengths_read
        placed = _Placed.of(results, offsets, lengths, counting)
        if placed is not None:
            break
    else:  # a whole first pass took only whole records: their lines changed since
        raise UsageError(f"{results}: the file changed while the viewer read it (was it rewritten?)")
    # The list shows (system, question) order: system and question codes become ranks among the
    # sorted names. Each column is put in that order in turn, the one it came from let go.
    columns: dict[str, array] = {}
    for f, field in enumerate(FIELDS[:2]):
        source, read.codes[f] = read.codes[f], array(CODE_TYPE)
        rank = ranks[f]
        columns[field] = array(CODE_TYPE, map(rank.__getitem__, map(source.__getitem__, order)))
        del source
    rest, tables = placed.columns()
    columns.update(zip(FIELDS[2:], rest, strict=True))
    names = [sorted(systems), sorted(questions), *tables]
    sets = len(FIELDS) - SET_FIELDS
    head = Columns(
        names[:sets], [[list(s) for s in table] for table in names[sets:]], len(order), read.problems
    )
    return Table(head, columns, offsets, lengths, extent)


class _Pair(msgspec.Struct, gc=False):
    """What the first pass decodes of a line: its pair (the decoder skips the rest)."""

    system: str
    question: str


_pair_decoder = msgspec.json.Decoder(_Pair)


class _Read:
    """Every record of a file as codes in arrays, in file order: `codes[f]` the code of its system
    (f = 0) and question (1), into `tables[f]`, their values in the order first met, with each
    line's offset and length, and the lines that were not records in `problems`. `whole`: each
    line decoded whole (else only as far as its pair: a line that is not even that is no record).
    A large file is read over the machine's cores (`line_ranges`): each range read on its own,
    then put after the ranges before it (`merge`), which gives the codes one read gives."""

    def __init__(self) -> None:
        self.tables: list[dict] = [{}, {}]
        self.codes = [array(CODE_TYPE), array(CODE_TYPE)]
        self.offsets, self.lengths = array(OFFSET_TYPE), array(CODE_TYPE)
        self.problems: list[str] = []
        self.clean = True

    @classmethod
    def of(cls, results: Path, *, whole: bool) -> _Read:
        processes = processes_for(results)
        if processes > 1:
            work = functools.partial(cls.of_range, results, whole)
            reads = map_ranges(work, line_ranges(results, processes))
            if all(read.clean for read in reads):
                first, *later = reads or [cls()]
                for read in later:
                    first.merge(read)
                return first
        read = cls()  # one process, or a range with a line that is no record: named in file order
        prefix = f"{results}:"

        def named(problem: str) -> None:
            read.problems.append(problem.removeprefix(prefix))

        read.take(results, whole, bad_line_reporter(results, named))
        return read

    @classmethod
    def of_range(cls, results: Path, whole: bool, start: int, stop: int) -> _Read:
        """The lines from `start` to `stop`, their bad lines only noted (`clean`)."""
        read = cls()

        def note(number: int, bad: BadLine) -> None:
            read.clean = False

        read.take(results, whole, note, start, stop)
        return read

    def take(self, results: Path, whole: bool, report, start: int = 0, stop: int | None = None) -> None:
        (systems, questions), (system_codes, question_codes) = self.tables, self.codes
        offsets, lengths = self.offsets, self.lengths
        decoder = record_decoder if whole else _pair_decoder
        decode = decoder.decode
        number = 0
        pair: _Pair | Record | None
        for offset, line in lines_at(results, start, stop):
            number += 1
            try:
                pair = decode(line)
            except (msgspec.DecodeError, RecursionError):
                pair = _checked(decoder, line, number, report)
                if pair is None:
                    continue
            system_codes.append(systems.setdefault(pair.system, len(systems)))
            question_codes.append(questions.setdefault(pair.question, len(questions)))
            offsets.append(offset)
            lengths.append(len(line))

    def merge(self, later: _Read) -> None:
        """Put `later`'s records (the lines right after these) after these, its codes numbered as
        these are."""
        _put_after(self.tables, self.codes, later.tables, later.codes)
        self.offsets.extend(later.offsets)
        self.lengths.extend(later.lengths)


def _put_after(tables: list[dict], codes: list[array], their_tables: list[dict], their_codes: list[array]):
    """Each of `their_codes` (into `their_tables`) put after `codes`, numbered as `tables` number."""
    for table, column, theirs, added in zip(tables, codes, their_tables, their_codes, strict=True):
        mapping = [table.setdefault(value, len(table)) for value in theirs]
        column.extend(array(CODE_TYPE, map(mapping.__getitem__, added)))


def _earlier_whole(results: Path, order: array, offsets: array, lengths: array) -> bool:
    """Whether every line the first pass took for a record and left out of `order` (a pair's
    earlier records) is a whole record."""
    if len(order) == len(offsets):
        return True
    standing = bytearray(len(offsets))
    for position in order:
        standing[position] = 1
    earlier = [position for position, kept in enumerate(standing) if not kept]
    with open(results, "rb", buffering=0) as f:
        lines = (os.pread(f.fileno(), lengths[position], offsets[position]) for position in earlier)
        return all(decoded_again(record_decoder, line) is not None for line in lines)


class _Placed:
    """The second pass: the standing records at `offsets` (in (system, question) order) decoded
    whole, each as the code of its shape (`shapes`: its values of the fields after the pair, as
    a tuple; a file has few distinct ones), and counted (`counter`, when the read counts). Shared
    over the cores by positions, each part put after the one before it; `columns` then gives
    each field's codes."""

    def __init__(self, counting: PairCount | None) -> None:
        self.shapes: dict[tuple, int] = {}
        self.codes = array(CODE_TYPE)
        self.counter = None if counting is None else counting.new_counter()
        self.whole = True

    @classmethod
    def of(cls, results: Path, offsets: array, lengths: array, counting: PairCount | None) -> _Placed | None:
        """The second pass over every standing record; None when one of them is no whole record."""
        processes = processes_for(results)
        cuts = [len(offsets) * part // processes for part in range(processes + 1)]
        work = functools.partial(cls.of_part, results, offsets, lengths, counting)
        parts = map_ranges(work, [(a, b) for a, b in pairwise(cuts) if a < b]) or [cls(counting)]
        if not all(part.whole for part in parts):
            return None
        first, *later = parts
        for part in later:
            _put_after([first.shapes], [first.codes], [part.shapes], [part.codes])
            if first.counter is not None and part.counter is not None:
                first.counter.merge(part.counter)
        if counting is not None:
            counting.counter = first.counter
        return first

    @classmethod
    def of_part(
        cls, results: Path, offsets: array, lengths: array, counting: PairCount | None, start: int, stop: int
    ) -> _Placed:
        """The standing records from position `start` to `stop`."""
        placed = cls(counting)
        shapes, codes, counter = placed.shapes, placed.codes, placed.counter
        decode = record_decoder.decode
        # Without decisions to apply, each record is counted as it is (`PairCount.add` otherwise).
        count = None if counter is None or counting is None else counting.add
        plain = None if counter is None or counting is None or counting.decided else counter.add
        for line in _lines_placed(results, offsets, lengths, start, stop):
            try:
                record = decode(line)
            except (msgspec.DecodeError, RecursionError):
                whole = decoded_again(record_decoder, line)
                if whole is None:
                    placed.whole = False
                    break
                record = whole
            codes.append(shapes.setdefault(_values(record), len(shapes)))
            if plain is not None:
                plain(record)
            elif count is not None and counter is not None:
                count(counter, record)
        return placed

    def columns(self) -> tuple[list[array], list[list]]:
        """Each field's codes (after the pair) and the table of values they stand for (in the
        order first met)."""
        tables: list[dict] = [{} for _ in FIELDS[2:]]
        by_shape = [
            [table.setdefault(value, len(table)) for table, value in zip(tables, shape, strict=True)]
            for shape in self.shapes
        ]
        codes, self.codes = self.codes, array(CODE_TYPE)
        columns = [
            # A field of one value (no T1 audit, no tag, no decision in the file) is all zeros.
            array(CODE_TYPE, bytes(len(codes) * _CODE_BYTES))
            if len(table) == 1
            else array(CODE_TYPE, map([shape[f] for shape in by_shape].__getitem__, codes))
            for f, table in enumerate(tables)
        ]
        return columns, [list(table) for table in tables]


#: Bytes read at once of standing lines that follow one another in the file.
_RUN = 1 << 20


def _lines_placed(results: Path, offsets: array, lengths: array, start: int, stop: int) -> Iterator[bytes]:
    """The lines at `offsets[start:stop]` (of `lengths`), in that order: lines that follow one
    another in the file read in one `pread`, up to `_RUN` bytes."""
    with open(results, "rb", buffering=0) as f:
        fd = f.fileno()
        at = start
        while at < stop:
            first = offsets[at]
            end, following = first + lengths[at], at + 1
            while following < stop and offsets[following] == end + 1 and end - first < _RUN:
                end = offsets[following] + lengths[following]
                following += 1
            block = os.pread(fd, end - first, first)
            for position in range(at, following):
                begin = offsets[position] - first
                yield block[begin : begin + lengths[position]]
            at = following


def _standing_order(systems: array, questions: array, ranks: list[list[int]], count: int) -> array:
    """The positions (in file order) of each pair's last record, in (system, question) order:
    the records counted into buckets by their system's rank, then each bucket's questions put
    in order (`count`: how many questions there are)."""
    system_rank, question_rank = ranks
    sizes = [0] * (len(system_rank) + 1)
    for code, size in Counter(systems).items():
        sizes[system_rank[code] + 1] = size
    starts = list(accumulate(sizes))
    by_system = array(CODE_TYPE, bytes(len(systems) * _CODE_BYTES))
    fill = starts[:-1]
    for position, code in enumerate(systems):
        rank = system_rank[code]
        by_system[fill[rank]] = position
        fill[rank] += 1
    order = array(CODE_TYPE)
    for first, end in pairwise(starts):
        bucket = by_system[first:end]
        order.extend(_last_by_question(bucket, [question_rank[questions[p]] for p in bucket], count))
    return order


def _last_by_question(positions: array, ranks: list[int], count: int) -> Iterable[int]:
    """Of one system's `positions` (ascending) with their questions' `ranks`, the last position
    of each question, in question order. A table of `count` slots where the system answered a
    good part of the questions (walking it costs no more than the answers), else a stable sort."""
    if len(positions) * 4 >= count:
        slots = array(CODE_TYPE, bytes(count * _CODE_BYTES))
        for position, rank in zip(positions, ranks, strict=True):
            slots[rank] = position + 1  # 0: no answer; a later record of the pair overwrites
        return [slot - 1 for slot in slots if slot]
    keyed = sorted(zip(ranks, positions, strict=True), key=itemgetter(0))  # stable: file order kept
    last = [position for (rank, position), (following, _) in pairwise(keyed) if rank != following]
    return [*last, keyed[-1][1]] if keyed else last


def _ranks(names: list) -> list[int]:
    rank = {name: r for r, name in enumerate(sorted(names))}
    return [rank[name] for name in names]


def _values(record: Record) -> tuple:
    """A record's value of each of `FIELDS` after the pair."""
    return (
        record.verdict,
        record.tier,
        record.cause or "",
        "" if record.decision is None else record.decision.verdict,
        "" if record.audited is None else record.audited.verdict,
        tuple(name for name, seen in record.facets.items() if seen),
        tuple(record.tags),
    )


def _checked(decoder: msgspec.json.Decoder, line: bytes, number: int, report) -> _Pair | Record | None:
    """A line `decoder` refused as it was, checked as `decoded_lines` checks it: its value once a
    byte order mark is dropped, else None (a blank line skipped, a bad one reported with its
    number, counted from the range's start, in the words of the whole record's decoder, which
    refuses whatever `_pair_decoder` refuses)."""
    stripped = strip_bom(line)
    if not stripped.strip():
        return None
    try:
        return decode_line(decoder, stripped)
    except BadLine:
        try:
            return decode_line(record_decoder, stripped)
        except BadLine as bad:
            report(number, bad)
            return None
