"""The viewer's columns (`columns.Table`), read from a results file once and kept in its index.

The first `tabench view` of a file reads every line with the full record decoder (so exactly the
lines `load_run` takes for records are records here, and the others are named with the same
words), keeps the standing record of each pair as a row of codes and its line's offset and
length, and stores the columns in the index beside the file (`store.results_index`) under names
that carry the hash of the code that made them (`index_names.code_hash`): the names and the
count as one value, each column's array as a value of its own, so neither keeping nor loading
ever holds a second copy of them all (at ten million records the columns are 480 MB). Later views
of the unchanged file load them (every part computed from the file exactly as it is, byte for
byte by its hashes, size, time and inode); any other file, or parts that do not read back as
whole, consistent columns, is read again.

Building holds integers only, in arrays: each record's codes as the file gives them (48 bytes a
record), then the standing ones put in (system, question) order by a counting sort on the system
and, within each system, a table indexed by question (or a sort, where a system answered few of
the questions): no object per record or per pair is made.
"""

from __future__ import annotations

import functools
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator
from itertools import accumulate, pairwise
from operator import itemgetter
from pathlib import Path

import msgspec

from ...core.jsonl import BadLine, decode_line, strip_bom
from ...core.records import Record, record_decoder
from ...store.fast_lines import BLOCK
from ...store.light_records import bad_line_reporter
from ...store.line_ranges import line_ranges, map_ranges, processes_for
from ...store.results_index import Extent, ResultsIndex, measure, open_index
from ..index_names import code_hash
from .columns import CODE_TYPE, FIELDS, OFFSET_TYPE, SET_FIELDS, Columns, Table, array_of

#: The start of the names the columns are kept under: the head (names, count), then one per column.
VARIANT = "viewer-columns:"
#: The arrays kept beside the head, each as its own value (the kind of value is named before ':').
PARTS = (*FIELDS, "offsets", "lengths")
_CODE_BYTES = array(CODE_TYPE).itemsize


def standing_columns(results: Path) -> Table:
    """The columns of `results` as it is now: from the index when it holds them for exactly these
    bytes, else read from the file (and kept for the next view)."""
    now = measure(results)
    index = open_index(results)
    if index is not None and now is not None:
        table = _loaded(index, now)
        if table is not None:
            return table
    table = read_columns(results, extent=now)
    if index is not None and now is not None and not _torn(now.size, now.end):
        for variant, body in _kept_parts(table):
            index.store(variant, now, body)
    return table


def _torn(size: int, end: int) -> bool:
    """A file whose last line has no line break yet (being written): its columns are not kept."""
    return size != end


def _part_variant(part: str | None) -> str:
    """The name part `part` is kept under (None: the head), with the hash of the code."""
    kind = VARIANT if part is None else f"viewer-columns-{part}:"
    return kind + code_hash()


def _kept_parts(table: Table) -> Iterator[tuple[str, bytes]]:
    """(name, value) of each part of `table` as the index keeps it: the head, then each array."""
    sets = len(FIELDS) - SET_FIELDS
    names = [list(names) for names in table.names[:sets]]
    head = Columns(
        names,
        [[list(s) for s in table.names[f]] for f in range(sets, len(FIELDS))],
        len(table),
        table.problems,
    )
    yield _part_variant(None), msgspec.msgpack.encode(head)
    arrays = {**table.columns, "offsets": table.offsets, "lengths": table.lengths}
    for part in PARTS:
        yield _part_variant(part), arrays[part].tobytes()


def _loaded(index: ResultsIndex, now: Extent) -> Table | None:
    """The columns kept for exactly `now`, every part of them, or None."""
    body = index.load_at(_part_variant(None), now)
    if body is None:
        return None
    try:
        head = msgspec.msgpack.decode(body, type=Columns)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    arrays: dict[str, array] = {}
    for part in PARTS:
        data = index.load_at(_part_variant(part), now)
        if data is None:
            return None
        arrays[part] = array_of(OFFSET_TYPE if part == "offsets" else CODE_TYPE, data)
        del data  # one part's bytes at a time
    offsets, lengths = arrays.pop("offsets"), arrays.pop("lengths")
    table = Table(head, arrays, offsets, lengths, now)
    return table if table.valid(head.count, now.size) else None


def read_columns(results: Path, *, extent: Extent | None = None) -> Table:
    """Read every line of `results` into the columns of its standing records ((system, question)
    order); the lines that are not records named in `problems` (`line: message`). `extent` is
    the file as measured before the read, kept with the columns."""
    read = _Read.of(results)
    systems, questions = (list(table) for table in read.tables[:2])
    ranks = [_ranks(systems), _ranks(questions)]
    order = _standing_order(read.codes[0], read.codes[1], ranks, len(questions))
    # The list shows (system, question) order: system and question codes become ranks among the
    # sorted names. Each column is put in that order in turn, the one it came from let go.
    columns: dict[str, array] = {}
    for f, field in enumerate(FIELDS):
        source, read.codes[f] = read.codes[f], array(CODE_TYPE)
        if f < 2:
            rank = ranks[f]
            columns[field] = array(CODE_TYPE, (rank[source[i]] for i in order))
        else:
            columns[field] = array(CODE_TYPE, map(source.__getitem__, order))
        del source
    places, read.offsets = read.offsets, array(OFFSET_TYPE)
    offsets = array(OFFSET_TYPE, map(places.__getitem__, order))
    places, read.lengths = read.lengths, array(CODE_TYPE)
    lengths = array(CODE_TYPE, map(places.__getitem__, order))
    del places
    names = [sorted(systems), sorted(questions), *(list(table) for table in read.tables[2:])]
    sets = len(FIELDS) - SET_FIELDS
    head = Columns(
        names[:sets], [[list(s) for s in table] for table in names[sets:]], len(order), read.problems
    )
    return Table(head, columns, offsets, lengths, extent)


class _Read:
    """Every record of a file as codes in arrays, in file order: `codes[f]` the code of field
    `FIELDS[f]` (into `tables[f]`, its values in the order first met), with each line's offset
    and length, and the lines that were not records in `problems`. A large file is read over
    the machine's cores (`line_ranges`): each range read on its own, then put after the ranges
    before it (`merge`), which gives the codes one read gives."""

    def __init__(self) -> None:
        self.tables: list[dict] = [{} for _ in FIELDS]
        self.codes = [array(CODE_TYPE) for _ in FIELDS]
        self.offsets, self.lengths = array(OFFSET_TYPE), array(CODE_TYPE)
        self.problems: list[str] = []
        self.clean = True

    @classmethod
    def of(cls, results: Path) -> _Read:
        processes = processes_for(results)
        if processes > 1:
            reads = map_ranges(functools.partial(cls.of_range, results), line_ranges(results, processes))
            if all(read.clean for read in reads):
                first, *later = reads or [cls()]
                for read in later:
                    first.merge(read)
                return first
        read = cls()  # one process, or a range with a line that is no record: named in file order
        prefix = f"{results}:"

        def named(problem: str) -> None:
            read.problems.append(problem.removeprefix(prefix))

        read.take(results, bad_line_reporter(results, named))
        return read

    @classmethod
    def of_range(cls, results: Path, start: int, stop: int) -> _Read:
        """The lines from `start` to `stop`, their bad lines only noted (`clean`)."""
        read = cls()

        def note(number: int, bad: BadLine) -> None:
            read.clean = False

        read.take(results, note, start, stop)
        return read

    def take(self, results: Path, report, start: int = 0, stop: int | None = None) -> None:
        pairs = list(zip(self.tables, self.codes, strict=True))
        for offset, length, record in _records(results, report, start, stop):
            for (table, column), value in zip(pairs, _values(record), strict=True):
                column.append(table.setdefault(value, len(table)))
            self.offsets.append(offset)
            self.lengths.append(length)

    def merge(self, later: _Read) -> None:
        """Put `later`'s records (the lines right after these) after these, its codes numbered as
        these are."""
        for table, codes, theirs, their_codes in zip(
            self.tables, self.codes, later.tables, later.codes, strict=True
        ):
            mapping = [table.setdefault(value, len(table)) for value in theirs]
            codes.extend(array(CODE_TYPE, map(mapping.__getitem__, their_codes)))
        self.offsets.extend(later.offsets)
        self.lengths.extend(later.lengths)


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
    """A record's value of each of `FIELDS`."""
    return (
        record.system,
        record.question,
        record.verdict,
        record.tier,
        record.cause or "",
        "" if record.decision is None else record.decision.verdict,
        "" if record.audited is None else record.audited.verdict,
        tuple(name for name, seen in record.facets.items() if seen),
        tuple(record.tags),
    )


def _records(
    results: Path, report, start: int = 0, stop: int | None = None
) -> Iterator[tuple[int, int, Record]]:
    """Each record of `results` (its lines from `start` to `stop`) with its line's offset and
    length, as `decoded_lines` decodes them (a line the decoder refuses is checked for a BOM and
    for being blank, else reported with its number, counted from `start`)."""
    decode = record_decoder.decode
    for number, (offset, line) in enumerate(lines_at(results, start, stop), start=1):
        try:
            yield offset, len(line), decode(line)
            continue
        except (msgspec.DecodeError, RecursionError):
            pass
        stripped = strip_bom(line)
        if not stripped.strip():
            continue
        try:
            yield offset, len(line), decode_line(record_decoder, stripped)
        except BadLine as bad:
            report(number, bad)


def lines_at(path: Path, start: int = 0, stop: int | None = None) -> Iterator[tuple[int, bytes]]:
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
