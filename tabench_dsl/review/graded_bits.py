"""Each system's graded and passed questions as bit sets, built one standing record at a time.

`compare.successes` gathers the same sets from a list of records; a count that streams the
standing records from a file (`totals.count_standing`) adds them here instead, one bit per record
in a bytearray per system, so ten million records cost about ten million bits, not a list entry
each. The bits number the questions in the order they first come (`successes` numbers those
with a graded outcome); the comparisons only count the bits two sets share, so any numbering
gives them the same figures.
"""

from __future__ import annotations

from .compare import Graded
from .last_records import number_runs


class GradedBits:
    """system -> the questions it has a graded outcome for, and those it passed (`add`, `table`)."""

    def __init__(self) -> None:
        self.number: dict[str, int] = {}
        self.graded: dict[str, bytearray] = {}
        self.passed: dict[str, bytearray] = {}

    def add(self, system: str, question: str, verdict: str) -> None:
        """One standing record's outcome (an `error` is no graded outcome: left out, its question
        numbered all the same, so parts of a file number their questions in the order they met
        them, and their bits merge as a run or two, `merge`)."""
        number = self.number
        bit = number.get(question)
        if bit is None:
            bit = number[question] = len(number)
        if verdict == "error":
            return
        graded = self.graded.get(system)
        if graded is None:
            graded = self.graded[system] = bytearray()
            self.passed[system] = bytearray()
        byte, mask = bit >> 3, 1 << (bit & 7)  # `_set`'s, without its call: a first read makes millions
        if byte >= len(graded):
            _grow(graded, byte)
        graded[byte] |= mask
        if verdict == "pass":
            passed = self.passed[system]
            if byte >= len(passed):
                _grow(passed, byte)
            passed[byte] |= mask

    def remove(self, system: str, question: str, verdict: str) -> None:
        """Take back one standing record's outcome (`add` was given it; its pair has no other)."""
        if verdict == "error":
            return
        bit = self.number[question]
        _clear(self.graded[system], bit)
        if verdict == "pass":
            _clear(self.passed[system], bit)

    def merge(self, other: GradedBits) -> None:
        """Add the outcomes `other` noted (over a later part of the file, of other pairs), its
        questions numbered as they are numbered here. Its numbers fall in runs that map onto runs
        of these (the same numbers where a battery's systems answer the same questions in the
        same order; a run or two moved where a later part met its questions first), so each run
        of bits is moved whole, as numbers; past `last_records.MOST_RUNS` runs, bit by bit."""
        numbered = self.number
        mapping = [numbered.setdefault(name, len(numbered)) for name in other.number]
        runs = number_runs(mapping)
        for system, bits in other.graded.items():
            passed = other.passed[system]
            if runs is not None:
                _or(self.graded, system, _moved(bits, runs))
                _or(self.passed, system, _moved(passed, runs))
                continue
            graded = self.graded.setdefault(system, bytearray())
            mine = self.passed.setdefault(system, bytearray())
            for bit in _set_bits(bits):
                _set(graded, mapping[bit])
                if _is_set(passed, bit):
                    _set(mine, mapping[bit])

    def table(self) -> dict[str, Graded]:
        """What `compare.successes` gives for the same records."""
        passed = self.passed
        return {name: Graded(_number(bits), _number(passed[name])) for name, bits in self.graded.items()}


def _set(bits: bytearray, bit: int) -> None:
    byte = bit >> 3
    if byte >= len(bits):
        _grow(bits, byte)
    bits[byte] |= 1 << (bit & 7)


def _grow(bits: bytearray, byte: int) -> None:
    """Room for `byte`, at least doubling: amortised growth."""
    bits.extend(bytes(max(byte + 1 - len(bits), len(bits))))


def _clear(bits: bytearray, bit: int) -> None:
    bits[bit >> 3] &= ~(1 << (bit & 7)) & 0xFF


def _or(table: dict[str, bytearray], system: str, value: int) -> None:
    """Or the bits of `value` into `system`'s bits."""
    mine = table.get(system, bytearray())
    value |= _number(mine)
    table[system] = bytearray(value.to_bytes(max(len(mine), (value.bit_length() + 7) // 8), "little"))


def _moved(bits: bytearray, runs: list[tuple[int, int, int]]) -> int:
    """The bits of `bits` as a number, each run moved where it goes."""
    value, moved = _number(bits), 0
    for start, stop, to in runs:
        moved |= (value >> start & ((1 << (stop - start)) - 1)) << to
    return moved


def _is_set(bits: bytearray, bit: int) -> bool:
    return (bit >> 3) < len(bits) and bool(bits[bit >> 3] >> (bit & 7) & 1)


def _set_bits(bits: bytearray) -> list[int]:
    return [at * 8 + k for at, byte in enumerate(bits) if byte for k in range(8) if byte >> k & 1]


def _number(bits: bytearray) -> int:
    return int.from_bytes(bits, "little")
