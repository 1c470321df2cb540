"""The verdict of each pair's last record, kept in the results index and extended as results grow.

`grade --resume` needs only the (system, question) pairs whose last record is final. Reading a
million records for that takes tens of seconds; the index beside the results file
(`results_index`) keeps the map pair -> last verdict for the bytes it was computed from, and a
later call reads only the lines appended since (the normal case after a grading), then stores the
map again for the whole file. What it returns is always what reading every record of the file as
it is now gives: the map is used only when the bytes it covers are unchanged, and a torn last line
(no final line break) is read from the file every time and never kept.

The map is kept as its distinct names and two arrays into them: each pair's key (its system's and
its question's numbers, `pair_set.KEY_BASE` apart) and its verdict's number. `done_pairs` builds its
set of keys from the first array at C speed (no tuple, no dict of a million pairs), so a resume
learns what is done from a million records in a tenth of a second. Reading lines builds the same
arrays directly (`_Growing`, each pair's place in a `pair_table.PairTable`), and the lines appended
since the map was kept are read into arrays of their own, then put into a copy of the kept ones
(`_extended`): no dict of pairs is built on either path, so the first resume of ten million
records holds arrays, not gigabytes of tuples and strings.
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
from .key_cells import DENSE_FROM, KEY_BASE
from .light_records import light_record_decoder
from .line_ranges import line_ranges, map_ranges, processes_for
from .pair_set import PairSet
from .pair_table import PairTable
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
        growing = _Growing()
        for (system, question), verdict in last.items():
            growing.note(system, question, verdict)
        return growing.standing()

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
        kept = itertools.compress(self.keys, map(picked.__contains__, self.verdicts))
        # Few pairs: straight into the set they are held in; many: an array, laid out in rows.
        return PairSet(self.numbers, set(kept) if len(self.keys) < DENSE_FROM else array("Q", kept))

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


class _Growing:
    """The map as a read builds it: each name numbered once, each pair's key and verdict number
    appended where the pair first comes, and where each pair is in them (`PairTable`), so a later
    record of the pair changes its verdict in place. No tuple, string or dict entry is kept for a
    pair: ten million records are read in the memory of their arrays, not of a dict of pairs."""

    def __init__(self) -> None:
        self.numbers: dict[str, int] = {}
        self.keys, self.verdicts = array("Q"), array("I")
        self.places = PairTable()

    def note(self, system: str, question: str, verdict: str) -> None:
        numbers = self.numbers
        number = numbers.setdefault
        s, q = number(system, len(numbers)), number(question, len(numbers))
        v = number(verdict, len(numbers))
        at = self.places.get(s, q)
        if at < 0:
            self.places.put(s, q, len(self.keys))
            self.keys.append(s * KEY_BASE + q)
            self.verdicts.append(v)
        else:
            self.verdicts[at] = v

    def standing(self) -> Standing:
        """The map read so far (its arrays are this builder's: taken once the read is done)."""
        return Standing(list(self.numbers), self.keys, self.verdicts)


def _extended(kept: Standing, appended: Standing) -> Standing:
    """`kept` with the pairs of `appended` (read from the lines after it) put in: a pair it holds
    takes its new verdict where it is, a new one comes after, as a dict of pairs updated in order
    would hold them. Only the appended pairs are looked for among the kept keys (`compress`)."""
    names, numbers = list(kept.names), dict(kept.numbers)  # the kept map is shared: never changed
    number = []  # each appended name's number among the kept ones
    for name in appended.names:
        if name not in numbers:
            numbers[name] = len(names)
            names.append(name)
        number.append(numbers[name])
    new_keys = [number[key // KEY_BASE] * KEY_BASE + number[key % KEY_BASE] for key in appended.keys]
    wanted = set(new_keys)
    keys, verdicts = array("Q", kept.keys), array("I", kept.verdicts)
    places = {keys[at]: at for at in itertools.compress(range(len(keys)), map(wanted.__contains__, keys))}
    for key, verdict in zip(new_keys, appended.verdicts, strict=True):
        at = places.get(key)
        if at is None:
            keys.append(key)
            verdicts.append(number[verdict])
        else:
            verdicts[at] = number[verdict]
    return Standing(names, keys, verdicts)


def kept_any(path: Path) -> bool:
    """Whether the index of `path` holds a map of its standing verdicts, for any extent (one that
    still holds is extended by the lines appended since, rather than read whole)."""
    index = open_index(path)
    return index is not None and index.holds(VARIANT)


def keep_read(path: Path, extent: Extent, standing: Standing) -> None:
    """Keep the `standing` verdicts another read found in `path` as it was at `extent` (measured
    before that read: the totals' first read, `review.streamed_totals.standing_of`) in its index,
    when the file is still exactly that and has no torn last line (a map is kept only for whole
    lines); the next `done_pairs` then reads no line."""
    index = open_index(path)
    if index is None or extent.size != extent.end or measure(path) != extent:
        return
    index.store(VARIANT, extent, standing.encode())
    _just_kept[:] = [(path, extent, standing)]


#: The map `keep_read` kept last, with its file and extent: the next `_standing_at` of that very
#: file takes it as it is, rather than read back and check what was just written (at ten million
#: records, 135 MB).
_just_kept: list[tuple[Path, Extent, Standing]] = []


def _read_into(growing: _Growing, path: Path, start: int, stop: int | None) -> None:
    for record in decoded_lines(path, light_record_decoder, _ignore, start=start, stop=stop):
        verdict = record.verdict
        growing.note(
            record.system, record.question, MISSING_MARK + verdict if record.cause == "missing" else verdict
        )


def _read_range(path: Path, start: int, stop: int) -> Standing:
    growing = _Growing()
    _read_into(growing, path, start, stop)
    return growing.standing()


def _read(path: Path, start: int, stop: int | None) -> Standing:
    """The standing verdicts of the lines from `start` to `stop` (None: the end), read over the
    processes `line_ranges.processes_for` gives, each range's map put into the one before it."""
    ranges = line_ranges(path, processes_for(path, start, stop), start, stop)
    maps = map_ranges(functools.partial(_read_range, path), ranges)
    if not maps:
        return _Growing().standing()
    standing = maps[0]
    for later in maps[1:]:
        standing = _extended(standing, later)
    return standing


def _standing(path: Path, *, keep: bool = True) -> Standing:
    """The standing verdicts of `path`, through the index beside it, which is brought up to date on
    the way. The same map is given again to the next call while the file is unchanged: callers
    never change it. Without `keep` the index is read but never written."""
    now = measure(path)
    return _standing_at(path, now, keep) if now is not None else _read(path, 0, None)


@functools.lru_cache(maxsize=1)
def _standing_at(path: Path, now: Extent, keep: bool) -> Standing:
    index = open_index(path)
    if index is None:
        return _read(path, 0, None)
    just = _just_kept.pop() if _just_kept else None  # held no longer than the next look
    if just is not None and just[:2] == (path, now) and now.size == now.end:
        return just[2]
    found = index.load_prefix(VARIANT)
    kept = Standing.decode(found[1]) if found is not None else None
    start = found[0].end if kept is not None and found is not None else 0
    if kept is not None and start == now.end == now.size:
        return kept  # nothing appended since, no torn line: the arrays as kept
    appended = _read(path, start, now.end)
    whole = appended if kept is None else _extended(kept, appended)
    if keep and (kept is None or start != now.end):
        index.store(VARIANT, now, whole.encode())
    if now.size > now.end:  # a torn last line: read as the stream reads it, never kept
        whole = _extended(whole, _read(path, now.end, None))
    return whole


def done_pairs(path: str | Path, *, keep: bool = True) -> PairSet:
    """The pairs whose last record is final (anything but `error`); a missing file has none. Read
    through the index (read only, without `keep`: a dry run writes nothing); the one place a
    grading learns what is done (`grading.plan`)."""
    if not Path(path).exists():
        return PairSet()
    return _standing(Path(path), keep=keep).pairs_where(lambda verdict: verdict not in ERRORS)


def recorded_missing(path: str | Path, *, keep: bool = True) -> PairSet:
    """The pairs whose standing record is a missing answer's; none when there is no file. The
    same set as `grading.missing.recorded_missing` reads from the whole file, through the index.
    Numbered as `done_pairs` numbers them while the file is unchanged; the index read only without
    `keep`, as `done_pairs` reads it."""
    if not Path(path).exists():
        return PairSet()
    return _standing(Path(path), keep=keep).pairs_where(lambda verdict: verdict.startswith(MISSING_MARK))
