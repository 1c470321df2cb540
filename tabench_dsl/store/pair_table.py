"""A map from a pair of small ids (a system's and a question's) to a non-negative int, in arrays.

A dict of ten million pairs costs about a hundred bytes a pair (a key object, a value object and
a slot each). The pairs of a results file are dense (most systems answer most questions), so here
each system has a row of 4-byte cells indexed by question id (0: no value, else the value + 1),
grown as ids come. Where the rows would hold far more cells than there are pairs (many systems,
each answering a few of many questions), the table moves once to a dict from the pair's number:
either way a pair costs a few cells, never a row of every question there is.
"""

from __future__ import annotations

import operator
from array import array
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import compress, repeat

#: The rows' cells may come to this many for each pair held, plus `_SLACK`, before the table
#: moves to a dict (a row grows to twice its length, so a dense file stays well below it).
_CELLS_A_PAIR = 4
_SLACK = 1 << 16
#: A pair's number in the dict: its system's id above these bits, its question's below.
_QUESTION_BITS = 32
#: Runs an iterator to its end, keeping nothing (the cells set by `map`).
_consume: Callable[[Iterable[None]], None] = deque[None](maxlen=0).extend


class PairTable:
    """(system id, question id) -> value (an int >= 0, below 2**32 - 1); -1 for a pair not held."""

    def __init__(self) -> None:
        self.rows: dict[int, array] = {}
        self.cells = 0
        self.count = 0
        self.spread: dict[int, int] | None = None
        self._grouped: dict[int, list[int]] | None = None  # the dict's questions by system, once asked

    def __len__(self) -> int:
        return self.count

    def get(self, s: int, q: int) -> int:
        if self.spread is not None:
            return self.spread.get(s << _QUESTION_BITS | q, -1)
        row = self.rows.get(s)
        return row[q] - 1 if row is not None and q < len(row) else -1

    def put(self, s: int, q: int, value: int) -> None:
        if self.spread is not None:
            self._grouped = None
            key = s << _QUESTION_BITS | q
            self.count += key not in self.spread
            self.spread[key] = value
            return
        row = self.rows.get(s)
        if row is None:
            row = self.rows[s] = array("I")
        if q >= len(row):
            more = max(q + 1, 2 * len(row)) - len(row)
            if self.cells + more > _CELLS_A_PAIR * self.count + _SLACK:
                self._spread()
                self.put(s, q, value)
                return
            self.cells += more
            row.frombytes(bytes(row.itemsize * more))
        self.count += not row[q]
        row[q] = value + 1

    def put_many(self, systems: Sequence[int], questions: Sequence[int], values: Sequence[int]) -> None:
        """`put` of each (`systems[i]`, `questions[i]`, `values[i]`) in order, a pair put twice
        keeping its later value: a system's pairs a row at a time, their cells set in C, rather
        than a `put` a pair (a table in a dict, or a row that would grow too sparse, takes them
        one `put` each)."""
        for s, qs, vs in _by_system(systems, questions, values):
            if self.spread is None and self._fill_row(s, qs, vs):
                continue
            for q, value in zip(qs, vs, strict=True):
                self.put(s, q, value)

    def _fill_row(self, s: int, questions: Sequence[int], values: Sequence[int]) -> bool:
        """Put the pairs of system `s` in its row, grown once to hold them all; False, with nothing
        put, when that growth could leave the rows far larger than the pairs (as `put` decides it,
        counting every question given as new)."""
        row = self.rows.get(s)
        length = 0 if row is None else len(row)
        top = max(questions)
        if top >= length:
            more = max(top + 1, 2 * length) - length
            if self.cells + more > _CELLS_A_PAIR * (self.count + len(set(questions))) + _SLACK:
                return False
            if row is None:
                row = self.rows[s] = array("I")
            self.cells += more
            row.frombytes(bytes(row.itemsize * more))
        assert row is not None
        self.count += len(set(compress(questions, map(operator.not_, map(row.__getitem__, questions)))))
        _consume(map(row.__setitem__, questions, map(operator.add, values, repeat(1))))
        return True

    def cells_at(self, s: int, questions: list[int]) -> list[int]:
        """For each question id of `questions`, the value of (`s`, q) + 1, 0 for a pair not held:
        a system's values in one call (a row read in C), rather than one `get` a pair."""
        if self.spread is not None:
            get, base = self.spread.get, s << _QUESTION_BITS
            return [get(base | q, -1) + 1 for q in questions]
        row = self.rows.get(s)
        if row is None or not questions:
            return [0] * len(questions)
        beyond = max(questions) + 1 - len(row)
        if beyond > 0:  # questions the row never reached: none held
            row = row + array("I", bytes(row.itemsize * beyond))
        return list(map(row.__getitem__, questions))

    def mapped(self, values: Sequence[int]) -> PairTable:
        """The same pairs, each value `v` as `values[v]` (a table of record numbers made the table
        of what each pair's record says, in one pass over the rows rather than a `put` a record)."""
        table = PairTable()
        table.cells, table.count = self.cells, self.count
        if self.spread is not None:
            table.spread = {key: values[value] for key, value in self.spread.items()}
        if self.rows:
            cells = array("I", [0])  # by a cell (a value + 1, 0: none), the cell it is mapped to
            cells.extend(map(operator.add, values, repeat(1)))
            for s, row in self.rows.items():
                table.rows[s] = array("I", map(cells.__getitem__, row))
        return table

    def renumbered(self, systems: list[int], questions: list[int]) -> PairTable:
        """The same pairs and values with system id `s` as `systems[s]` and question id `q` as
        `questions[q]` (a table read with names numbered otherwise, put in another's numbering)."""
        table = PairTable()
        for s in sorted(self.systems()):
            row = self.rows.get(s) if self.spread is None else None
            if row is not None:
                held = [(q, cell - 1) for q, cell in enumerate(row) if cell]
            else:
                held = [(q, self.get(s, q)) for q in self.questions_of(s)]
            system = systems[s]
            for q, value in held:
                table.put(system, questions[q], value)
        return table

    def systems(self) -> set[int]:
        """The ids of the systems with a pair held."""
        if self.spread is not None:
            return set(self._by_system())
        return set(self.rows)  # a row is made by the put that fills one of its cells

    def questions_of(self, s: int) -> list[int]:
        """The ids of the questions held for system `s`, ascending."""
        if self.spread is not None:
            return self._by_system().get(s, [])
        row = self.rows.get(s)
        return list(compress(range(len(row)), row)) if row is not None else []

    def _by_system(self) -> dict[int, list[int]]:
        if self._grouped is None:
            grouped: dict[int, list[int]] = {}
            mask = (1 << _QUESTION_BITS) - 1
            for key in sorted(self.spread or ()):
                grouped.setdefault(key >> _QUESTION_BITS, []).append(key & mask)
            self._grouped = grouped
        return self._grouped

    def _spread(self) -> None:
        self.spread = {
            s << _QUESTION_BITS | q: cell - 1
            for s, row in self.rows.items()
            for q, cell in enumerate(row)
            if cell
        }
        self.rows.clear()
        self.cells = 0


def _by_system(
    systems: Sequence[int], questions: Sequence[int], values: Sequence[int]
) -> Iterator[tuple[int, Sequence[int], Sequence[int]]]:
    """The pairs given (`systems[i]`, `questions[i]`, `values[i]`) as each system's questions and
    values, in the order given (a stable sort by system id when there are several)."""
    if not systems:
        return
    first = systems[0]
    if systems.count(first) == len(systems):  # a block of one system's records: the usual case
        yield first, questions, values
        return
    order = sorted(range(len(systems)), key=systems.__getitem__)
    pick = operator.itemgetter(*order)  # two or more: a tuple
    questions, values = pick(questions), pick(values)
    start = 0
    for s, count in sorted(Counter(systems).items()):
        yield s, questions[start : start + count], values[start : start + count]
        start += count
