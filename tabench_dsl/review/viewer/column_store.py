"""The viewer's columns (`columns.Columns`), read from a results file once and kept in its index.

The first `tabench view` of a file reads every line with the full record decoder (so exactly the
lines `load_run` takes for records are records here, and the others are named with the same
words), keeps the standing record of each pair as a row of codes and its line's offset and
length, and stores the columns in the index beside the file (`core.results_index`) under a name
that carries the hash of the code that made them (`indexed_totals.code_hash`). Later views of the
unchanged file load them (`load_exact`: the whole file as it was, byte for byte by its hashes,
size, time and inode); any other file, or a value that does not read back as whole, consistent
columns, is read again. Building holds the rows as integers only: a million records build in a
few hundred megabytes.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from pathlib import Path

import msgspec

from ...core.fast_lines import BLOCK
from ...core.jsonl import BadLine, decode_line, strip_bom
from ...core.light_records import bad_line_reporter
from ...core.records import Record, record_decoder
from ...core.results_index import measure, open_index
from ..indexed_totals import code_hash
from .columns import CODE_TYPE, FIELDS, OFFSET_TYPE, SET_FIELDS, Columns, Table

#: The start of the index's name for the columns (one such value per index).
VARIANT = "viewer-columns:"


def standing_columns(results: Path) -> Table:
    """The columns of `results` as it is now: from the index when it holds them for exactly these
    bytes, else read from the file (and kept for the next view)."""
    now = measure(results)
    index = open_index(results)
    variant = VARIANT + code_hash()
    if index is not None and now is not None:
        table = _decoded(index.load_exact(variant), now.size)
        if table is not None:
            return table
    kept = read_columns(results)
    if index is not None and now is not None and not _torn(now.size, now.end):
        index.store(variant, now, msgspec.msgpack.encode(kept))
    return Table(kept)


def _torn(size: int, end: int) -> bool:
    """A file whose last line has no line break yet (being written): its columns are not kept."""
    return size != end


def _decoded(body: bytes | None, size: int) -> Table | None:
    if body is None:
        return None
    try:
        table = Table(msgspec.msgpack.decode(body, type=Columns))
    except (msgspec.DecodeError, msgspec.ValidationError, ValueError):
        return None
    return table if table.valid(size) else None


def read_columns(results: Path) -> Columns:
    """Read every line of `results` into the columns of its standing records ((system, question)
    order); the lines that are not records named in `problems` (`line: message`)."""
    tables: list[dict] = [{} for _ in FIELDS]
    rows: dict[tuple[int, int], tuple[int, ...]] = {}
    problems: list[str] = []
    prefix = f"{results}:"
    report = bad_line_reporter(results, lambda problem: problems.append(problem.removeprefix(prefix)))
    for offset, length, record in _records(results, report):
        codes = [
            table.setdefault(value, len(table)) for table, value in zip(tables, _values(record), strict=True)
        ]
        key = (codes[0], codes[1])
        rows.pop(key, None)
        rows[key] = (offset, length, *codes[2:])
    names = [list(table) for table in tables]
    # The list shows (system, question) order: codes become ranks among the sorted names.
    ranks = [_ranks(names[0]), _ranks(names[1])]
    names[0], names[1] = sorted(names[0]), sorted(names[1])
    order = sorted(rows, key=lambda key: (ranks[0][key[0]], ranks[1][key[1]]))
    columns = [array(CODE_TYPE, (ranks[f][key[f]] for key in order)) for f in (0, 1)]
    standing = [rows[key] for key in order]
    columns += [array(CODE_TYPE, (row[f] for row in standing)) for f in range(2, len(FIELDS))]
    sets = len(FIELDS) - SET_FIELDS
    return Columns(
        names[:sets],
        [[list(members) for members in table] for table in names[sets:]],
        [column.tobytes() for column in columns],
        array(OFFSET_TYPE, (row[0] for row in standing)).tobytes(),
        array(CODE_TYPE, (row[1] for row in standing)).tobytes(),
        problems,
    )


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


def _records(results: Path, report) -> Iterator[tuple[int, int, Record]]:
    """Each record of `results` with its line's offset and length, as `decoded_lines` decodes
    them (a line the decoder refuses is checked for a BOM and for being blank, else reported)."""
    decode = record_decoder.decode
    for number, (offset, line) in enumerate(lines_at(results), start=1):
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


def lines_at(path: Path) -> Iterator[tuple[int, bytes]]:
    """Each line of `path` with the offset it starts at, without its line break, read in blocks."""
    with open(path, "rb") as f:
        position, rest = 0, b""
        while block := f.read(BLOCK):
            lines = (rest + block).split(b"\n")
            rest = lines.pop()
            for line in lines:
                yield position, line
                position += len(line) + 1
        if rest:
            yield position, rest
