"""The viewer's columns (`columns.Table`), read from a results file once and kept in its index.

The first `tabench view` of a file reads them (`column_read`), and stores them in the index beside
the file (`store.results_index`) under names that carry the hash of the code that made them
(`index_names.code_hash`): the names, the count and the answers awaiting a decision as one value
(the head), each column in pages of `column_pages.PAGE_VALUES` values, each page a value of its
own, so neither keeping nor loading ever holds a second copy of them all (at ten million records
the columns are 480 MB). Later views of the unchanged file load the head, then each page when a
request first reads it (every part computed from the file exactly as it is, byte for byte by its
hashes, size, time and inode); a file without a head kept for it is read again, and so is one
whose page is missing or not signed, when that page is asked for (`_Pages`).
"""

from __future__ import annotations

import functools
from array import array
from collections.abc import Iterator
from pathlib import Path

import msgspec

from ...store.results_index import Extent, ResultsIndex, measure, open_index
from ..index_names import code_hash
from ..totals_of import PairCount
from . import column_pages
from .column_pages import Column, page_count
from .column_read import read_columns
from .columns import CODE_TYPE, FIELDS, OFFSET_TYPE, SET_FIELDS, Columns, Table, array_of

#: The start of the names the columns are kept under: the head (names, count), then each page of
#: each column (`viewer-columns-verdict-3:...`); storing them replaces every name that starts so.
VARIANT = "viewer-columns:"
KIND = "viewer-columns"
#: The arrays kept beside the head, each in pages of values of their own.
PARTS = (*FIELDS, "offsets", "lengths")


def standing_columns(results: Path, counting: PairCount | None = None) -> Table:
    """The columns of `results` as it is now: from the index when it holds them for exactly these
    bytes (each page loaded when first asked for), else read from the file (and kept for the next
    view), the viewer's totals counted on the way when `counting` is given (`read_columns`)."""
    now = measure(results)
    index = open_index(results)
    if index is not None and now is not None:
        table = _loaded(index, now, results)
        if table is not None:
            return table
    table = read_columns(results, extent=now, counting=counting)
    if index is not None and now is not None and not _torn(now.size, now.end):
        index.store_many(now, lambda: _kept_parts(table), replacing=KIND)
    return table


def _torn(size: int, end: int) -> bool:
    """A file whose last line has no line break yet (being written): its columns are not kept."""
    return size != end


def _part_variant(part: str | None, page: int = 0) -> str:
    """The name page `page` of part `part` is kept under (None: the head), with the code's hash."""
    kind = VARIANT if part is None else f"{KIND}-{part}-{page}:"
    return kind + code_hash()


def _kept_parts(table: Table) -> Iterator[tuple[str, bytes]]:
    """(name, value) of each part of `table` as the index keeps it: each page of each array, then
    the head."""
    sets = len(FIELDS) - SET_FIELDS
    names = [list(names) for names in table.names[:sets]]
    head = Columns(
        names,
        [[list(s) for s in table.names[f]] for f in range(sets, len(FIELDS))],
        len(table),
        table.problems,
        table.awaiting,
    )
    arrays = {**table.columns, "offsets": table.offsets, "lengths": table.lengths}
    for part in PARTS:
        values = memoryview(arrays[part].whole()).cast("B")
        size = column_pages.PAGE_VALUES * arrays[part].whole().itemsize
        for page in range(page_count(len(table))):
            yield _part_variant(part, page), bytes(values[page * size : (page + 1) * size])
        values.release()
    yield _part_variant(None), msgspec.msgpack.encode(head)  # last: kept once every page is


def _loaded(index: ResultsIndex, now: Extent, results: Path) -> Table | None:
    """The columns kept for exactly `now`, their pages loaded as they are asked for, or None."""
    body = index.load_at(_part_variant(None), now)
    if body is None:
        return None
    try:
        head = msgspec.msgpack.decode(body, type=Columns)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    if head.count < 0 or head.awaiting is None:
        return None
    pages = _Pages(index, now, results)
    columns = {
        part: Column(count=head.count, load=functools.partial(pages.load, part), source=str(results))
        for part in PARTS
    }
    offsets, lengths = columns.pop("offsets"), columns.pop("lengths")
    table = Table(head, columns, offsets, lengths, now)
    return table if table.valid(head.count) else None


class _Pages:
    """The pages of the columns kept for exactly `now`, loaded one at a time. A page the index
    does not hold as kept (deleted, damaged, not signed by this user) is served from the columns
    read again from the file, when the file is still exactly `now` (those are the columns the
    index kept: the same codes, read by the same code), which are then kept again; else None."""

    def __init__(self, index: ResultsIndex, now: Extent, results: Path) -> None:
        self.index, self.now, self.results = index, now, results
        self.read_again: Table | None = None

    def load(self, part: str, pages: list[int]) -> list[array | None]:
        """The values of each of `pages` of `part` (one connection to the index for them all)."""
        bodies = self.index.load_many_at([_part_variant(part, page) for page in pages], self.now)
        return [self._values(part, page, body) for page, body in zip(pages, bodies, strict=True)]

    def _values(self, part: str, page: int, body: bytes | None) -> array | None:
        kind = OFFSET_TYPE if part == "offsets" else CODE_TYPE
        if body is not None and self.read_again is None:
            values = array_of(kind, body)
            # A place (offset or length) lies within the file's bytes, as every line does.
            if not (
                part in ("offsets", "lengths")
                and values
                and max(values) >= self.now.size + (part == "lengths")
            ):
                return values
        if self.read_again is None:
            if measure(self.results) != self.now:
                return None
            again = self.read_again = read_columns(self.results, extent=self.now)
            self.index.store_many(self.now, lambda: _kept_parts(again), replacing=KIND)
        table = self.read_again
        whole = {**table.columns, "offsets": table.offsets, "lengths": table.lengths}[part].whole()
        return whole[page * column_pages.PAGE_VALUES : (page + 1) * column_pages.PAGE_VALUES]
