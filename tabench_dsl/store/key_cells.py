"""A set of pair keys held as a byte a key, for ten million pairs in megabytes, not gigabytes.

A pair's key is its system's number times `KEY_BASE`, plus its question's (`pair_set`). A Python
set of ten million such ints costs about seventy bytes a key (the int object and its slot in the
table), and `grade --resume` holds two of them: the done pairs and the pairs the answers reader
has seen. The pairs of a results file are dense (most systems answer most questions), so here each
system with a key gets a row of `width` bytes, one per question number below `width`, laid end to
end in one bytearray; a key outside the rows (another system, a question numbered later, a name
not numbered at all) is kept in a plain set beside them. Where the rows would hold far more cells
than there are keys (many systems, each answering a few of many questions), and below `DENSE_FROM`
keys, every key goes to the set.

The tests of many keys at once (`issuperset`, `isdisjoint`, `add_all`) find each key's cell with
`map` over C functions, no Python loop a key; a block of one system's keys (a file written system
by system) costs one addition a key.
"""

from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from itertools import compress, islice, repeat
from operator import add, floordiv, mod

#: A pair's key is its system's number times this, plus its question's (numbers below 2**32, so
#: `divmod(key, KEY_BASE)` gives both back). Not a power of two: a set finds an int at the slot its
#: low bits name, and `system << 32 | question` would put the pairs of every system with the same
#: question at the same slot (50 systems: probe chains 50 long, three times slower); the golden
#: ratio's bits spread each system's questions over the table.
KEY_BASE = (1 << 32) + 0x9E3779B1
#: Keys from which a set is laid out in rows. Fewer are all kept in the set: a set of a million
#: ints costs 70 MB, and its lookups take a third of the time the rows' take (no key is shifted to
#: its cell), so a million-record resume stays well inside its two seconds.
DENSE_FROM = 1 << 21
#: The rows may hold this many cells for each key, plus `_SLACK`, or every key goes to the set.
_CELLS_A_KEY = 4
_SLACK = 1 << 16
#: Keys handled at a time, a list of their cells built for each: bounded memory for any count, and
#: most pieces of a file written system by system hold one system's keys (`_cells_of`'s fast way).
_PIECE = 4096
#: Added to a key whose system has no row: its cell is then negative, which no row's is.
_OUTSIDE = -(1 << 100)


class KeyCells:
    """A set of pair keys: each in its system's row of cells when it has one and its
    question is numbered below `width`, else in `loose`."""

    def __init__(self, keys: Iterable[int] = (), *, like: KeyCells | None = None) -> None:
        """The set of `keys`, in rows laid out for them; with `like`, in `like`'s rows (the same
        systems and width, cells of its own). A set of fewer than `DENSE_FROM` keys is kept, not
        copied."""
        self.loose: set[int] = set()
        self.width = 0
        #: What a system's key adds to reach its cell: its row's start, less its part of the key.
        self._shift: dict[int, int] = {}
        self._cells = bytearray()
        if like is not None:
            self.width, self._shift = like.width, like._shift
            self._cells = bytearray(len(like._cells))
            self.add_all(keys)
            return
        if isinstance(keys, set) and len(keys) < DENSE_FROM:
            self.loose = keys  # taken as it is: a set of few keys stays one
            return
        held = keys if isinstance(keys, array) else array("q", keys)
        layout = _layout(held, _CELLS_A_KEY * len(held) + _SLACK) if len(held) >= DENSE_FROM else None
        if layout is not None:
            systems, width, ones = layout
            self.width = width
            self._shift = {s: row * width - s * KEY_BASE for row, s in enumerate(sorted(systems))}
            self._cells = bytearray(len(systems) * width)
            put = self._cells.__setitem__
            for piece, one in zip(_pieces(held), ones, strict=True):
                if one is None:
                    self.add_all(piece)
                else:  # every key has a cell: one shift for the piece
                    deque(map(put, map(add, piece, repeat(self._shift[one])), repeat(1)), maxlen=0)
        else:
            self.loose.update(held)

    def _cells_of(self, keys: Sequence[int]) -> list[int] | None:
        """Each key's cell when every one has a cell; None when any has not (or none has rows)."""
        shift = self._shift
        if not shift or not keys:
            return None
        low, high = min(keys), max(keys)
        system = low // KEY_BASE
        if system == high // KEY_BASE:  # one system's keys: one shift for all
            step = shift.get(system)
            if step is None or high % KEY_BASE >= self.width:
                return None
            return list(map(add, keys, repeat(step)))
        if max(map(mod, keys, repeat(KEY_BASE))) >= self.width:
            return None
        steps = map(shift.get, map(floordiv, keys, repeat(KEY_BASE)), repeat(_OUTSIDE))
        cells = list(map(add, keys, steps))
        return cells if min(cells) >= 0 else None

    def _cell(self, key: int) -> int | None:
        system, question = divmod(key, KEY_BASE)
        step = self._shift.get(system)
        return key + step if step is not None and question < self.width else None

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, int):
            return False
        cell = self._cell(key)
        return bool(self._cells[cell]) if cell is not None else key in self.loose

    def __len__(self) -> int:
        return len(self._cells) - self._cells.count(0) + len(self.loose)

    def __iter__(self) -> Iterator[int]:
        width = self.width
        for system, step in self._shift.items():
            start = system * KEY_BASE + step
            row = self._cells[start : start + width]
            yield from map(add, compress(range(width), row), repeat(system * KEY_BASE))
        yield from self.loose

    def add(self, key: int) -> None:
        cell = self._cell(key)
        if cell is None:
            self.loose.add(key)
        else:
            self._cells[cell] = 1

    def discard(self, key: int) -> None:
        cell = self._cell(key)
        if cell is None:
            self.loose.discard(key)
        else:
            self._cells[cell] = 0

    def add_all(self, keys: Iterable[int]) -> None:
        self._set_all(keys, 1)

    def _set_all(self, keys: Iterable[int], value: int) -> None:
        if not self._shift:  # no rows (fewer than `DENSE_FROM` keys): every key is loose, in C
            if value:
                self.loose.update(keys)
            else:
                self.loose.difference_update(keys)
            return
        items = iter(keys)
        while chunk := list(islice(items, _PIECE)):
            cells = self._cells_of(chunk)
            if cells is not None:
                deque(map(self._cells.__setitem__, cells, repeat(value)), maxlen=0)
            else:
                for key in chunk:
                    if value:
                        self.add(key)
                    else:
                        self.discard(key)

    def issuperset(self, keys: Sequence[int]) -> bool:
        """Whether every key of `keys` is here."""
        if not self._shift:
            return self.loose.issuperset(keys)
        for piece in _pieces(keys):
            cells = self._cells_of(piece)
            if cells is None:
                if not all(map(self.__contains__, piece)):
                    return False
            elif 0 in bytes(map(self._cells.__getitem__, cells)):
                return False
        return True

    def isdisjoint(self, keys: Sequence[int]) -> bool:
        """Whether no key of `keys` is here."""
        if not self._shift:
            return self.loose.isdisjoint(keys)
        for piece in _pieces(keys):
            cells = self._cells_of(piece)
            if cells is None:
                if any(map(self.__contains__, piece)):
                    return False
            elif any(map(self._cells.__getitem__, cells)):
                return False
        return True

    def difference(self, keys: Iterable[int]) -> KeyCells:
        """The keys here that are not in `keys`, in the same rows."""
        left = KeyCells(like=self)
        left._cells[:] = self._cells
        left.loose = set(self.loose)
        left._set_all(keys, 0)
        return left


def _layout(keys: Sequence[int], cells: int) -> tuple[set[int], int, list[int | None]] | None:
    """The systems of `keys`, the width their rows need (one more than the highest question),
    and the system of each of `_pieces(keys)` that holds one system's keys only (else None);
    None when there are no keys or the rows would hold more than `cells` cells (found out as
    soon as the pieces read so far need more)."""
    systems: set[int] = set()
    width = 0
    ones: list[int | None] = []
    for piece in _pieces(keys):
        low, high = min(piece), max(piece)
        one = low // KEY_BASE if low // KEY_BASE == high // KEY_BASE else None
        ones.append(one)
        if one is not None:  # its system and width from its least and greatest keys
            systems.add(one)
            width = max(width, high % KEY_BASE + 1)
        else:
            systems.update(map(floordiv, piece, repeat(KEY_BASE)))
            width = max(width, max(map(mod, piece, repeat(KEY_BASE))) + 1)
        if len(systems) * width > cells:
            return None
    return (systems, width, ones) if systems else None


def _pieces(keys: Sequence[int]) -> Iterator[Sequence[int]]:
    """`keys` in pieces of `_PIECE` keys (as they are, when no more; none when empty)."""
    if not keys:
        return
    if len(keys) <= _PIECE:
        yield keys
        return
    for start in range(0, len(keys), _PIECE):
        yield keys[start : start + _PIECE]
