"""The verdict of each pair's last record, kept in the results index and extended as results grow.

`grade --resume` needs only the (system, question) pairs whose last record is final. Reading a
million records for that takes tens of seconds; the index beside the results file
(`results_index`) keeps the map pair -> last verdict for the bytes it was computed from, and a
later call reads only the lines appended since (the normal case after a grading), then stores the
map again for the whole file. What it returns is always what `results.last_verdicts` gives for the
file as it is now: the map is used only when the bytes it covers are unchanged, and a torn last line
(no final line break) is read from the file every time and never kept.

The map is kept as its distinct names and two arrays into them: each pair's key (its system's and
its question's numbers, `pair_set.KEY_BASE` apart) and its verdict's number. `done_pairs` builds its
set of keys from the first array at C speed (no tuple, no dict of a million pairs), so a resume
learns what is done from a million records in a tenth of a second; the dict is built only when the
map must be extended by the lines appended since it was kept.
"""

from __future__ import annotations

import functools
import gc
import itertools
import operator
from array import array
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import msgspec

from .fast_lines import decoded_lines
from .light_records import light_record_decoder
from .pair_set import KEY_BASE, PairSet
from .results_index import Extent, measure, open_index

#: The index's name for this value.
VARIANT = "last-verdicts:3"


class _Kept(msgspec.Struct, array_like=True):
    """The map as kept: `names`, each pair's key (`pair_set.KEY_BASE` times its system's, plus its
    question's positions in `names`) and its verdict's position there, as the bytes of arrays of
    unsigned 64- and 32-bit numbers, in the order the pairs first came."""

    names: list[str]
    keys: bytes
    verdicts: bytes


#: How a pair whose standing record is a missing answer's (`cause` "missing") is kept: its verdict
#: after this mark, so one map answers both `done_pairs` and `recorded_missing`.
MISSING_MARK = "missing:"
#: The standing verdicts that leave a pair to grade again.
ERRORS = frozenset({"error", MISSING_MARK + "error"})


class Standing:
    """The map pair -> last verdict (after `MISSING_MARK` for a missing answer's) as arrays: each
    name numbered once (`numbers`), each pair's key and its verdict's number."""

    def __init__(self, names: list[str], keys: array, verdicts: array) -> None:
        self.names = names
        self.keys = keys
        self.verdicts = verdicts
        self.numbers = dict(zip(names, range(len(names)), strict=True))

    @classmethod
    def of(cls, last: Mapping[tuple[str, str], str]) -> Standing:
        numbers: dict[str, int] = {}
        number = numbers.setdefault
        keys, verdicts = array("Q"), array("I")
        for (system, question), verdict in last.items():
            keys.append(number(system, len(numbers)) * KEY_BASE + number(question, len(numbers)))
            verdicts.append(number(verdict, len(numbers)))
        return cls(list(numbers), keys, verdicts)

    def encode(self) -> bytes:
        return msgspec.msgpack.encode(_Kept(self.names, self.keys.tobytes(), self.verdicts.tobytes()))

    @classmethod
    def decode(cls, body: bytes) -> Standing | None:
        """The kept map, or None when the bytes are not one (then it is computed again)."""
        try:
            kept = msgspec.msgpack.decode(body, type=_Kept)
            keys, verdicts = array("Q"), array("I")
            keys.frombytes(kept.keys)
            verdicts.frombytes(kept.verdicts)
        except (msgspec.DecodeError, msgspec.ValidationError, ValueError):
            return None
        size = len(kept.names)
        if len(keys) != len(verdicts) or len(set(kept.names)) != size:
            return None
        if keys and (max(keys) // KEY_BASE >= size or max(verdicts) >= size or max(_questions(keys)) >= size):
            return None
        return cls(kept.names, keys, verdicts)

    def pairs_where(self, wanted: Callable[[str], bool]) -> PairSet:
        """The pairs whose verdict (as kept) `wanted` takes, numbered by `numbers`."""
        present = set(self.verdicts)
        picked = {number for number in present if wanted(self.names[number])}
        if picked == present:  # every verdict that stands (the usual file): no test per pair
            return PairSet(self.numbers, self.keys)
        if not picked:
            return PairSet(self.numbers)
        return PairSet(self.numbers, itertools.compress(self.keys, map(picked.__contains__, self.verdicts)))

    def as_dict(self) -> dict[tuple[str, str], str]:
        """The map as a dict (pair -> verdict as kept), in the order the pairs first came."""
        name = self.names.__getitem__
        systems = map(name, map(operator.floordiv, self.keys, itertools.repeat(KEY_BASE)))
        pairs = zip(systems, map(name, _questions(self.keys)), strict=True)
        # A million new tuples would each count towards the cycle collector's next pass, which
        # walks every object there is: paused, the map builds in a fraction of the time.
        collecting = gc.isenabled()
        gc.disable()
        try:
            return dict(zip(pairs, map(name, self.verdicts), strict=True))
        finally:
            if collecting:
                gc.enable()


def _questions(keys: array) -> Iterator[int]:
    return map(operator.mod, keys, itertools.repeat(KEY_BASE))


def _ignore(number: int, bad: object) -> None:
    """Bad lines are no pair's record; `totals` names them (resume never did)."""


def _read_into(last: dict[tuple[str, str], str], path: Path, start: int, stop: int | None) -> None:
    for record in decoded_lines(path, light_record_decoder, _ignore, start=start, stop=stop):
        verdict = record.verdict
        last[(record.system, record.question)] = (
            MISSING_MARK + verdict if record.cause == "missing" else verdict
        )


def _standing(path: Path, *, keep: bool = True) -> Standing:
    """The standing verdicts of `path`, through the index beside it, which is brought up to date on
    the way. The same map is given again to the next call while the file is unchanged: callers
    never change it. Without `keep` the index is read but never written."""
    now = measure(path)
    return _standing_at(path, now, keep) if now is not None else Standing.of(_read_whole(path))


def _read_whole(path: Path) -> dict[tuple[str, str], str]:
    last: dict[tuple[str, str], str] = {}
    _read_into(last, path, 0, None)
    return last


@functools.lru_cache(maxsize=1)
def _standing_at(path: Path, now: Extent, keep: bool) -> Standing:
    index = open_index(path)
    if index is None:
        return Standing.of(_read_whole(path))
    found = index.load_prefix(VARIANT)
    kept = Standing.decode(found[1]) if found is not None else None
    start = found[0].end if kept is not None and found is not None else 0
    if kept is not None and start == now.end == now.size:
        return kept  # nothing appended since, no torn line: the arrays as kept, no dict built
    last = kept.as_dict() if kept is not None else {}
    _read_into(last, path, start, now.end)
    standing = Standing.of(last)
    if keep and (kept is None or start != now.end):
        index.store(VARIANT, now, standing.encode())
    if now.size > now.end:  # a torn last line: read as the stream reads it, never kept
        _read_into(last, path, now.end, None)
        standing = Standing.of(last)
    return standing


def indexed_last_verdicts(path: str | Path) -> dict[tuple[str, str], str]:
    """(system, question) -> verdict of the last record of that pair, as `results.last_verdicts`
    gives it, read through the index beside `path`."""
    standing = _standing(Path(path)).as_dict()
    return {pair: verdict.removeprefix(MISSING_MARK) for pair, verdict in standing.items()}


def done_pairs(path: str | Path, *, keep: bool = True) -> PairSet:
    """The pairs whose last record is final (anything but `error`); a missing file has none.
    The same set as `results.done_pairs`, through the index (read only, without `keep`: a dry
    run writes nothing)."""
    if not Path(path).exists():
        return PairSet()
    return _standing(Path(path), keep=keep).pairs_where(lambda verdict: verdict not in ERRORS)


def recorded_missing(path: str | Path) -> PairSet:
    """The pairs whose standing record is a missing answer's; none when there is no file. The
    same set as `grading.missing.recorded_missing` reads from the whole file, through the index.
    Numbered as `done_pairs` numbers them while the file is unchanged."""
    if not Path(path).exists():
        return PairSet()
    return _standing(Path(path)).pairs_where(lambda verdict: verdict.startswith(MISSING_MARK))
