"""A set of (system, question) pairs held as one int a pair, for a million pairs at C speed.

A Python set of a million `(system, question)` tuples costs about 150 bytes a pair and, worse, a
tuple built and hashed for each lookup; `grade --resume` asks of every answer read whether its pair
is done. Here each name is numbered once (`numbers`, one dict entry per distinct name) and a pair is
the int `system * KEY_BASE + question`, held in `key_cells.KeyCells` (a byte a pair where the
pairs are dense); a block of pairs is tested over keys built by `map` (`pair_keys`), with no Python
loop per pair. It reads as any `collections.abc.Set`
of pairs (`in`, `len`, iteration, `==` with a set of tuples), so code that takes a set of pairs
takes one unchanged.
"""

from __future__ import annotations

import operator
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence, Set
from itertools import repeat

from .key_cells import KEY_BASE, KeyCells

#: The number `pair_keys` gives a name it does not know: every key it makes is then negative (for
#: fewer than 2**29 names), and no pair of the set has a negative key.
UNKNOWN = -(1 << 62)


def pair_keys(numbers: Mapping[str, int], systems: Iterable[str], questions: Iterable[str]) -> list[int]:
    """The key of each (system, question) under `numbers`; a pair with a name `numbers` lacks gets
    a negative key."""
    number = numbers.get
    if isinstance(systems, list) and systems and systems.count(systems[0]) == len(systems):
        # One system (a block of a file written system by system): its part of the key once.
        return list(
            map(
                operator.add,
                repeat(number(systems[0], UNKNOWN) * KEY_BASE),
                map(number, questions, repeat(UNKNOWN)),
            )
        )
    return list(
        map(
            operator.add,
            map(operator.mul, map(number, systems, repeat(UNKNOWN)), repeat(KEY_BASE)),
            map(number, questions, repeat(UNKNOWN)),
        )
    )


class PairSet(Set[tuple[str, str]]):
    """The pairs whose keys are `keys`, their names numbered by `numbers` (which the set never
    changes, and may share with other sets numbered alike)."""

    def __init__(self, numbers: Mapping[str, int] | None = None, keys: Iterable[int] = ()) -> None:
        self.numbers: Mapping[str, int] = {} if numbers is None else numbers
        self.keys = keys if isinstance(keys, KeyCells) else KeyCells(keys)

    def __contains__(self, pair: object) -> bool:
        if not (isinstance(pair, tuple) and len(pair) == 2):
            return False
        system, question = pair
        s, q = self.numbers.get(system), self.numbers.get(question)
        return s is not None and q is not None and (s * KEY_BASE + q) in self.keys

    def __len__(self) -> int:
        return len(self.keys)

    @classmethod
    def _from_iterable(cls, pairs: Iterable[object]) -> set:
        """What `Set`'s operators (`&`, `|`, `^`, `set - PairSet`) build: a plain set of the
        pairs (its default, `cls(pairs)`, would take the pairs for `numbers`)."""
        return set(pairs)

    def __iter__(self) -> Iterator[tuple[str, str]]:
        names = {number: name for name, number in self.numbers.items()}
        for key in self.keys:
            s, q = divmod(key, KEY_BASE)
            yield names[s], names[q]

    def has_all(self, systems: Iterable[str], questions: Iterable[str]) -> bool:
        """Whether every (system, question) of the two sequences, taken side by side, is here."""
        return self.keys.issuperset(pair_keys(self.numbers, systems, questions))

    def __sub__(self, other: Iterable[object]) -> PairSet:
        """The pairs here that are not in `other` (any collection of pairs)."""
        if isinstance(other, PairSet) and other.numbers is self.numbers:
            return PairSet(self.numbers, self.keys.difference(other.keys))
        pairs = [pair for pair in other if isinstance(pair, tuple) and len(pair) == 2]
        gone = pair_keys(self.numbers, (p[0] for p in pairs), (p[1] for p in pairs))
        return PairSet(self.numbers, self.keys.difference(gone))


class FirstSeen:
    """Pair key -> where the pair was first given (an int), for the duplicates a reader reports.

    Keys noted a block at a time (`note_block`, a resume's done answers) go into `KeyCells` (laid
    out as `like`'s, the done pairs', when given: a byte a pair), their places kept as the block's
    keys in an array, its first place and step: a place is worked out only when a duplicate asks
    for it, which a clean file never does, so ten million pairs cost a few bytes each."""

    def __init__(self, like: KeyCells | None = None) -> None:
        self.places: dict[int, int] = {}
        self.blocked = KeyCells() if like is None else KeyCells(like=like)
        self._blocks: list[tuple[array, int, int]] = []

    def get(self, key: int) -> int | None:
        place = self.places.get(key)
        if place is None and self._blocks and key in self.blocked:
            for keys, first, step in self._blocks:
                self.places.update(zip(keys, range(first, first + len(keys) * step, step), strict=True))
            self._blocks.clear()
            place = self.places.get(key)
        return place

    def __setitem__(self, key: int, place: int) -> None:
        self.places[key] = place

    def isdisjoint(self, keys: Sequence[int]) -> bool:
        return self.blocked.isdisjoint(keys) and self.places.keys().isdisjoint(keys)

    def blocks(self) -> list[tuple[array, int, int]]:
        """The blocks noted (`note_block`) whose places are not worked out yet: keys, first, step."""
        return list(self._blocks)

    def note_block(self, keys: Sequence[int], first: int, step: int) -> None:
        """`keys` (no two alike), first seen at places `first`, `first + step`, ..."""
        self.blocked.add_all(keys)
        self._blocks.append((array("q", keys), first, step))
