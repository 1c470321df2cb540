"""The viewer's columns (`columns.Table`), read from a results file once and kept in its index.

The first `tabench view` of a file reads them (`column_read`), and stores them in the index beside
the file (`store.results_index`) under names that carry the hash of the code that made them
(`index_names.code_hash`): the names and the count as one value, each column's array as a value
of its own, so neither keeping nor loading ever holds a second copy of them all (at ten million
records the columns are 480 MB). Later views of the unchanged file load them (every part computed
from the file exactly as it is, byte for byte by its hashes, size, time and inode); any other
file, or parts that do not read back as whole, consistent columns, is read again.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from pathlib import Path

import msgspec

from ...store.results_index import Extent, ResultsIndex, measure, open_index
from ..index_names import code_hash
from ..totals_of import PairCount
from .column_read import read_columns
from .columns import CODE_TYPE, FIELDS, OFFSET_TYPE, SET_FIELDS, Columns, Table, array_of

#: The start of the names the columns are kept under: the head (names, count), then one per column.
VARIANT = "viewer-columns:"
#: The arrays kept beside the head, each as its own value (the kind of value is named before ':').
PARTS = (*FIELDS, "offsets", "lengths")


def standing_columns(results: Path, counting: PairCount | None = None) -> Table:
    """The columns of `results` as it is now: from the index when it holds them for exactly these
    bytes, else read from the file (and kept for the next view), the viewer's totals counted on
    the way when `counting` is given (`read_columns`)."""
    now = measure(results)
    index = open_index(results)
    if index is not None and now is not None:
        table = _loaded(index, now)
        if table is not None:
            return table
    table = read_columns(results, extent=now, counting=counting)
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
