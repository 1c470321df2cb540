"""The totals of a results file counted while a grading writes it, so `grade` need not read it back.

`grade` ends by printing the totals of its whole results file, which `totals_of` counts by
reading the file again (`streamed_totals`): about a third of a second per 20,000 records of a
process that otherwise spends its time on judge calls. When the grading opened the file empty,
every record in it is one the grading wrote and passed to `on_record`: `RunTotals` counts each
then, with the `StandingCounter` the read of the file uses, and gives the `Totals` that read
gives. Counting a record as written and as read back gives the same figures because the counter
reads no text (answer, reason, replies: what a light record drops), only fields the file keeps
as they were.

No totals are given (the file is read as before) when the grading did not open the file empty
(`--resume`, an earlier run's records), a decisions file is beside it (decisions change what
stands), the file is longer than the writer left it (another grading appended once this one let go:
the file's totals are then the ones its heading promises), a pair came twice (the last record
stands, and the first was counted), or not every record written was counted. What a record must be
read whole for (a panel, audits, repeats) is read from the file, as the streamed count reads it
(`StandingCounter.totals`).
"""

from __future__ import annotations

from pathlib import Path

from ..core.records import Record
from ..store.decisions import decisions_path
from ..store.light_records import iter_light_records
from .totals import StandingCounter, Totals


class RunTotals:
    """Counts the records a grading writes (`add`, its `on_record`); `totals` gives the file's
    totals once the writer is closed, or None when the file must be read to know them."""

    def __init__(self) -> None:
        self.counter: StandingCounter | None = StandingCounter(None)
        #: Bytes the results file held when the grading opened it, and the records it wrote
        #: (`follow`); the file is counted here only when the first is 0 and the second all counted.
        self.opened_size: int | None = None
        self.written = 0
        #: Where the writer's last line ended: the totals are kept only for a file of that size.
        self.end = 0
        # A bit per pair seen (question numbers, a bit array per system), to notice a pair twice.
        self._numbers: dict[str, int] = {}
        self._seen: dict[str, bytearray] = {}

    def follow(self, opened_size: int) -> None:
        """The results file held `opened_size` bytes when its writer opened it (after a repair)."""
        self.opened_size = opened_size
        if opened_size:
            self.counter = None

    def add(self, record: Record) -> None:
        """Count one record just written."""
        counter = self.counter
        if counter is None:
            return
        if self._again(record.system, record.question):
            self.counter = None  # the last record of the pair stands, and the first was counted
            self._seen.clear()
            return
        counter.add(record)

    def _again(self, system: str, question: str) -> bool:
        bit = self._numbers.setdefault(question, len(self._numbers))
        bits = self._seen.get(system)
        if bits is None:
            bits = self._seen[system] = bytearray()
        byte, mask = bit >> 3, 1 << (bit & 7)
        if byte >= len(bits):
            bits.extend(bytes(max(byte + 1 - len(bits), len(bits))))  # doubling: amortised growth
        elif bits[byte] & mask:
            return True
        bits[byte] |= mask
        return False

    def totals(self, results: Path) -> Totals | None:
        """The totals of `results` (closed), or None when they must be counted from the file
        (`totals_of`, which keeps them in the index when given these)."""
        counter = self.counter
        if counter is None or self.opened_size != 0 or counter.records != self.written:
            return None
        decisions = decisions_path(results)
        if decisions.exists() or _size(results) != self.end:  # another grading appended since
            return None
        return counter.totals(lambda: iter_light_records(results))


def _size(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except OSError:
        return None
