"""The viewer's totals, kept in the results index: the page's first request answered without a read.

The viewer counts the standing records in its own order ((system, question)), with the decisions
applied and the `--tag` slice taken, as `Index.totals` always has: the order matters (the judges
are listed as first met, and sums of prices are added in it), so these are not the totals
`tabench totals` keeps. They are computed as `counted_records` reads a file (no answer text
decoded unless an audit checks one) and kept under a name made of every input, as
`indexed_totals` keeps its own: the results file's bytes (`load_exact`), the decisions file's
sha256, `--price`, `--tag` and the hash of the code that counts. A decision changes the decisions
file, so the next totals are counted again (the whole file is read then).

While the file is as the viewer's columns read it, the standing records are read at the places
the columns keep, in their order, one at a time (`RecordsOnDisk.each_from_file`): no record is
held beyond the one counted, so ten million records are counted in the memory of the counts.
A file changed since is counted as `counted_records` reads it, its records held.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from pathlib import Path

import msgspec

from ...core.price import Price
from ...core.records import Record, record_decoder
from ...store.light_records import LightLines
from ...store.results_index import measure, open_index
from ..counted_records import counted_records, decisions_beside, reads_whole
from ..indexed_totals import code_hash, decisions_hash
from ..outcomes import latest
from ..slices import select_tagged
from ..streamed_totals import decided_record, decisions_by_pair
from ..totals import Totals, compute_totals, count_standing
from .disk_records import RecordsOnDisk


def viewer_totals(
    results: Path,
    decisions_file: Path,
    *,
    price: Price | None,
    tags: Sequence[str] | None,
    on_disk: RecordsOnDisk | None = None,
) -> Totals:
    """The totals `Index.totals` computes for the run `load_run(results, tags=tags)` at `price`,
    from the index when it holds them for exactly these inputs. `on_disk`: the standing records
    of that run (their `--tag` slice taken), read from the file while it is as they saw it."""
    variant = _variant(decisions_file, price, tags)
    index = open_index(results) if variant is not None else None
    if index is not None and variant is not None:
        body = index.load_exact(variant)
        if body is not None:
            try:
                return msgspec.json.decode(body, type=Totals)
            except (msgspec.DecodeError, msgspec.ValidationError):
                pass
    extent = measure(results)  # before the read: a line appended meanwhile makes it stale
    if on_disk is not None and extent is not None and on_disk.table.extent == extent:
        totals = _counted_in_place(on_disk, decisions_file, price)
    else:
        records = counted_records(results, decisions_file, on_problem=_named_elsewhere)
        standing = select_tagged(latest(records).values(), tags)
        standing.sort(key=lambda record: record.key)
        totals = compute_totals(standing, price=price)
    if index is not None and variant is not None and extent is not None:
        index.store(variant, extent, msgspec.json.encode(totals))
    return totals


def _counted_in_place(on_disk: RecordsOnDisk, decisions_file: Path, price: Price | None) -> Totals:
    """The totals of the records `on_disk` places, read from their lines in its order with the
    decisions file applied, as `counted_records` reads them (whole where an audit checks an
    answer, else light)."""
    decisions = decisions_beside(decisions_file)
    decided = decisions_by_pair(decisions)
    whole = reads_whole(decisions)

    def standing() -> Iterator[Record]:
        decode = record_decoder.decode if whole else LightLines().decode
        return (decided_record(record, decided) for record in on_disk.each_from_file(decode))

    return count_standing(standing, price=price)


def _named_elsewhere(problem: str) -> None:
    """Bad lines are named by the columns' read (`column_store`), once."""


def _variant(decisions_file: Path, price: Price | None, tags: Sequence[str] | None) -> str | None:
    decisions = decisions_hash(decisions_file)
    if decisions is None:
        return None
    inputs = ["viewer-totals", code_hash(), decisions, msgspec.to_builtins(price), list(tags or ())]
    return "viewer-totals:" + hashlib.sha256(msgspec.json.encode(inputs)).hexdigest()
