"""Which record of a results file is the last of its (system, question) pair, held in arrays.

A dict from pair to record number costs about a hundred bytes a pair (a tuple or a big int key, an
int value, the table's slot): at ten million pairs, a gigabyte. Here each system and each question
is numbered once (one dict entry per name), and each system has an `array` of 8-byte slots indexed
by question number, holding the number of the pair's last record: a battery's systems answer the
same questions, so ten million pairs take about 80 MB. Systems answering questions of their own
would leave most slots empty; when the slots outgrow the records by far (`SPARSE_SLOTS`), the pairs
move to a dict keyed by one int per pair, which holds them at the dict's cost.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from itertools import compress, repeat
from operator import sub

#: Most runs of consecutive numbers a merge moves whole (`number_runs`: `LastRecords.merge`,
#: `graded_bits.GradedBits.merge`); each costs a pass, so past this many, one at a time.
MOST_RUNS = 64


def number_runs(mapping: list[int]) -> list[tuple[int, int, int]] | None:
    """`mapping` as runs (start, stop, where start goes) of numbers mapped onto consecutive
    numbers; None past `MOST_RUNS` of them."""
    runs: list[tuple[int, int, int]] = []
    start = 0
    for at in range(1, len(mapping) + 1):
        if at == len(mapping) or mapping[at] != mapping[at - 1] + 1:
            runs.append((start, at, mapping[start]))
            if len(runs) > MOST_RUNS:
                return None
            start = at
    return runs


class ResultsChanged(Exception):
    """A second read of a results file did not find the records the first read numbered: the file
    was truncated or rewritten in between."""


#: Empty slots allowed per record noted (plus `SPARSE_FLOOR`) before the pairs move to a dict.
SPARSE_SLOTS = 4
SPARSE_FLOOR = 1 << 20
#: Bits of a question's number in a pair's key, once the pairs are in a dict.
_QUESTION_BITS = 40


class LastRecords:
    """Record numbers (0-based, in file order) noted pair by pair (`note`); `is_last` says whether
    a record is its pair's last. `count` is how many were noted."""

    def __init__(self) -> None:
        self.systems: dict[str, int] = {}
        self.questions: dict[str, int] = {}
        self.rows: list[array] = []  # per system: slot q holds 1 + the last record's number, 0 none
        self.slots = 0
        self.keyed: dict[int, int] | None = None  # the pairs, once sparse: key -> record number
        self.count = 0

    def note(self, system: str, question: str) -> bool:
        """Note the next record, of this pair; True when the pair had a record before."""
        number = self.count
        self.count += 1
        return self._put(system, question, number)

    def _put(self, system: str, question: str, number: int) -> bool:
        """Record `number` as this pair's last; True when the pair had a record before."""
        s = self.systems.get(system)
        if s is None:
            s = self.systems[system] = len(self.systems)
            self.rows.append(array("q"))
        q = self.questions.get(question)
        if q is None:
            q = self.questions[question] = len(self.questions)
        if self.keyed is None:
            row = self.rows[s]
            if q < len(row):
                before = row[q]
                row[q] = number + 1
                return before != 0
            self._grow(row, q)
            if self.keyed is None:  # still in arrays: a slot past the row's end had no record
                row[q] = number + 1
                return False
        key = (s << _QUESTION_BITS) | q
        before = self.keyed.get(key)
        self.keyed[key] = number
        return before is not None

    def merge(self, other: LastRecords) -> bool:
        """Note `other`'s records after these (it numbered, from 0, the lines that come right
        after the ones noted here); True when one of its pairs had a record here. Rows in arrays
        are laid over these, its questions numbered as they are numbered here: a run of questions
        numbered in the same order that holds a record each (a battery's systems answer the same
        questions) as one slice, at C speed (at ten million pairs a pair at a time took seconds,
        which a first read over two cores pays alone, after both ranges are read), else slot by
        slot."""
        offset = self.count
        self.count += other.count
        if self.keyed is not None or other.keyed is not None:
            systems, questions = list(other.systems), list(other.questions)
            repeated = False
            for s, q, number in other._noted():
                repeated |= self._put(systems[s], questions[q], number + offset)
            return repeated
        numbered = self.questions
        mapping = [numbered.setdefault(name, len(numbered)) for name in other.questions]
        runs = number_runs(mapping)
        repeated = False
        for system, s in other.systems.items():
            at = self.systems.get(system)
            if at is None:
                at = self.systems[system] = len(self.systems)
                self.rows.append(array("q"))
            row, theirs = self.rows[at], other.rows[s]
            filled = (len(theirs.tobytes().rstrip(b"\0")) + 7) // 8  # past its last record: room grown
            for start, stop, to in runs if runs is not None else [(0, filled, -1)]:
                part = theirs[start : min(stop, filled)]
                if to >= 0 and part and not part.count(0):  # a whole run: laid over at C speed
                    repeated |= self._lay(row, to, array("q", map(offset.__add__, part)))
                else:
                    placed = [(mapping[q], slot + offset) for q, slot in enumerate(part, start) if slot]
                    repeated |= self._place(row, placed)
        return repeated

    def _lay(self, row: array, to: int, slots: array) -> bool:
        """`slots` laid over `row` from question `to` on; True when one of them had a record."""
        end = to + len(slots)
        if len(row) < end:
            self.slots += end - len(row)
            row.frombytes(bytes(8 * (end - len(row))))
        repeated = row[to:end].count(0) != len(slots)
        row[to:end] = slots
        return repeated

    def _place(self, row: array, placed: list[tuple[int, int]]) -> bool:
        """Each (question, slot) of `placed` put on `row`; True when one of them had a record."""
        need = 1 + max((q for q, _ in placed), default=-1)
        if len(row) < need:
            self.slots += need - len(row)
            row.frombytes(bytes(8 * (need - len(row))))
        repeated = False
        for q, slot in placed:
            repeated |= row[q] != 0
            row[q] = slot
        return repeated

    def _noted(self) -> Iterator[tuple[int, int, int]]:
        """(system id, question id, record number) of each pair noted."""
        if self.keyed is not None:
            mask = (1 << _QUESTION_BITS) - 1
            for key, number in self.keyed.items():
                yield key >> _QUESTION_BITS, key & mask, number
            return
        for s, row in enumerate(self.rows):
            for q, slot in enumerate(row):
                if slot:
                    yield s, q, slot - 1

    def by_system(self) -> Iterator[tuple[int, list[int], list[int]]]:
        """Each system's id with the ids of its questions noted and their last records' numbers,
        systems and questions in id order (a row at C speed: no loop of Python a pair)."""
        if self.keyed is not None:
            grouped: dict[int, tuple[list[int], list[int]]] = {}
            for s, q, number in sorted(self._noted()):
                questions, numbers = grouped.setdefault(s, ([], []))
                questions.append(q)
                numbers.append(number)
            for s in sorted(grouped):
                yield s, *grouped[s]
            return
        for s, row in enumerate(self.rows):
            questions = list(compress(range(len(row)), row))
            yield s, questions, list(map(sub, map(row.__getitem__, questions), repeat(1)))

    def _grow(self, row: array, q: int) -> None:
        """Slots up to question `q` on a system's row, and an eighth more (a file written system by
        system brings each row a new question a record: grown one at a time, a call a record); the
        pairs move to a dict when sparse."""
        grow = max(q + 1, len(row) + (len(row) >> 3) + 16) - len(row)
        row.frombytes(bytes(8 * grow))
        self.slots += grow
        if self.slots > SPARSE_SLOTS * self.count + SPARSE_FLOOR:
            self._to_keyed()

    def _to_keyed(self) -> None:
        keyed: dict[int, int] = {}
        for s, row in enumerate(self.rows):
            for q, slot in enumerate(row):
                if slot:
                    keyed[(s << _QUESTION_BITS) | q] = slot - 1
        self.keyed, self.rows, self.slots = keyed, [], 0

    def is_last(self, number: int, system: str, question: str) -> bool:
        """Whether record `number` (of this pair) is its pair's last; `ResultsChanged` when the
        pair or the number was never noted."""
        s, q = self.systems.get(system), self.questions.get(question)
        if s is None or q is None or number >= self.count:
            raise ResultsChanged
        if self.keyed is not None:
            last = self.keyed.get((s << _QUESTION_BITS) | q)
        else:
            row = self.rows[s]
            last = row[q] - 1 if q < len(row) and row[q] else None
        if last is None or last < number:
            raise ResultsChanged
        return last == number
