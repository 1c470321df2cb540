"""The verdict of each pair's last record, kept in the results index and extended as results grow.

`grade --resume` needs only the (system, question) pairs whose last record is final. Reading a
million records for that takes tens of seconds; the index beside the results file
(`results_index`) keeps the map pair -> last verdict for the bytes it was computed from, and a
later call reads only the lines appended since (the normal case after a grading), then stores the
map again for the whole file. What it returns is always what `results.last_verdicts` gives for the
file as it is now: the map is used only when the bytes it covers are unchanged, and a torn last line
(no final line break) is read from the file every time and never kept.

The map is kept as its distinct names and, per pair, three numbers into them, so loading it builds
no string twice: a million pairs load in well under a second and a few hundred megabytes.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Iterable
from pathlib import Path

import msgspec

from .fast_lines import decoded_lines
from .light_records import light_record_decoder
from .results_index import Extent, measure, open_index

#: The index's name for this value.
VARIANT = "last-verdicts:1"


class _KeptVerdicts(msgspec.Struct, array_like=True):
    """The map as kept: `names`, and `rows` of (system, question, verdict) positions in it, flat."""

    names: list[str]
    rows: list[int]


def _ignore(number: int, bad: object) -> None:
    """Bad lines are no pair's record; `totals` names them (resume never did)."""


#: How a pair whose standing record is a missing answer's (`cause` "missing") is kept: its verdict
#: after this mark, so one map answers both `done_pairs` and `recorded_missing`.
MISSING_MARK = "missing:"


def _read_into(last: dict[tuple[str, str], str], path: Path, start: int, stop: int | None) -> None:
    for record in decoded_lines(path, light_record_decoder, _ignore, start=start, stop=stop):
        verdict = record.verdict
        last[(record.system, record.question)] = (
            MISSING_MARK + verdict if record.cause == "missing" else verdict
        )


def _standing(path: Path, *, keep: bool = True) -> dict[tuple[str, str], str]:
    """(system, question) -> the last record's verdict (after `MISSING_MARK` for a missing
    answer's), through the index beside `path`, which is brought up to date on the way. The same
    map is given again to the next call while the file is unchanged: callers never change it.
    Without `keep` the index is read but never written."""
    now = measure(path)
    return _standing_at(path, now, keep) if now is not None else _read_whole(path)


def _read_whole(path: Path) -> dict[tuple[str, str], str]:
    last: dict[tuple[str, str], str] = {}
    _read_into(last, path, 0, None)
    return last


@functools.lru_cache(maxsize=1)
def _standing_at(path: Path, now: Extent, keep: bool) -> dict[tuple[str, str], str]:
    index = open_index(path)
    if index is None:
        return _read_whole(path)
    found = index.load_prefix(VARIANT)
    kept = _decode(found[1]) if found is not None else None
    last, start = (kept, found[0].end) if kept is not None and found is not None else ({}, 0)
    _read_into(last, path, start, now.end)
    if keep and (kept is None or start != now.end):
        index.store(VARIANT, now, _encode(last.items()))
    if now.size > now.end:  # a torn last line: read as the stream reads it, never kept
        _read_into(last, path, now.end, None)
    return last


def indexed_last_verdicts(path: str | Path) -> dict[tuple[str, str], str]:
    """(system, question) -> verdict of the last record of that pair, as `results.last_verdicts`
    gives it, read through the index beside `path`."""
    return {pair: verdict.removeprefix(MISSING_MARK) for pair, verdict in _standing(Path(path)).items()}


def done_pairs(path: str | Path, *, keep: bool = True) -> set[tuple[str, str]]:
    """The pairs whose last record is final (anything but `error`); a missing file has none.
    The same set as `results.done_pairs`, through the index (read only, without `keep`: a dry
    run writes nothing)."""
    if not Path(path).exists():
        return set()
    errors = ("error", MISSING_MARK + "error")
    standing = _standing(Path(path), keep=keep)
    if not any(kind in errors for kind in set(standing.values())):
        return set(standing)  # no error stands (the usual file): every pair, without a test each
    done = set(standing)  # every pair, then the few whose error stands taken out: half the time
    done.difference_update([pair for pair, verdict in standing.items() if verdict in errors])
    return done


def recorded_missing(path: str | Path) -> set[tuple[str, str]]:
    """The pairs whose standing record is a missing answer's; none when there is no file. The
    same set as `grading.missing.recorded_missing` reads from the whole file, through the index."""
    if not Path(path).exists():
        return set()
    standing = _standing(Path(path))
    if not any(kind.startswith(MISSING_MARK) for kind in set(standing.values())):
        return set()  # no missing answer's record stands (the usual file): no test per pair
    return {pair for pair, verdict in standing.items() if verdict.startswith(MISSING_MARK)}


def _encode(items: Iterable[tuple[tuple[str, str], str]]) -> bytes:
    numbers: dict[str, int] = {}
    rows: list[int] = []
    for (system, question), verdict in items:
        for name in (system, question, verdict):
            rows.append(numbers.setdefault(name, len(numbers)))
    return msgspec.msgpack.encode(_KeptVerdicts(list(numbers), rows))


def _decode(body: bytes) -> dict[tuple[str, str], str] | None:
    """The kept map, or None when the bytes are not one (then it is computed again)."""
    try:
        kept = msgspec.msgpack.decode(body, type=_KeptVerdicts)
        names, rows = kept.names, kept.rows
        if len(rows) % 3 or (rows and not (min(rows) >= 0 and max(rows) < len(names))):
            return None
        name = names.__getitem__
        keys = zip(map(name, rows[0::3]), map(name, rows[1::3]), strict=True)
        # A million new tuples would each count towards the cycle collector's next pass, which
        # walks every object there is: paused, the map builds in a fraction of the time.
        collecting = gc.isenabled()
        gc.disable()
        try:
            return dict(zip(keys, map(name, rows[2::3]), strict=True))
        finally:
            if collecting:
                gc.enable()
    except (msgspec.DecodeError, msgspec.ValidationError, ValueError):
        return None
