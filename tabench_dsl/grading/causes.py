"""Why answers ended in `error` or `adjudicate`, counted per cause: what a run says at its end.

A dead judge URL used to end a run with "2 error(s)" and nothing more; the why was only inside the
results file. A `CauseTally` is fed every record a run writes and gives, per (verdict, cause), the
count and the first message (the record's reason), which `grade` and `calibrate` print and put in
their JSON. Only the first message is kept: one per cause is enough to act on, and a run of a
million errors must not hold a million messages.
"""

from __future__ import annotations

import msgspec

from ..core.records import Record

#: The outcomes whose causes are summarised; `pass` and `fail` need no explaining.
EXPLAINED = ("error", "adjudicate")
#: The cause named when a record has none (a record written before causes were recorded).
UNKNOWN = "unknown"


class CauseCount(msgspec.Struct, frozen=True):
    """How many answers ended in `verdict` for `cause`, and the first of their messages."""

    verdict: str
    cause: str
    count: int
    first: str


class CauseTally:
    """Counts the records of a run per (verdict, cause), keeping the first message of each."""

    def __init__(self) -> None:
        self._counts: dict[tuple[str, str], int] = {}
        self._first: dict[tuple[str, str], str] = {}

    def add(self, record: Record) -> None:
        """Count `record` when it ended in `error` or `adjudicate`."""
        if record.verdict in EXPLAINED:
            self.count(record.verdict, record.cause or UNKNOWN, record.reason)

    def count(self, verdict: str, cause: str, message: str) -> None:
        """Count one answer that ended in `verdict` for `cause` with `message`."""
        key = (verdict, cause)
        self._counts[key] = self._counts.get(key, 0) + 1
        self._first.setdefault(key, message)

    def summary(self) -> list[CauseCount]:
        """Errors first, then adjudicates; within each, the most frequent cause first."""
        order = sorted(self._counts, key=lambda key: (EXPLAINED.index(key[0]), -self._counts[key], key[1]))
        return [
            CauseCount(verdict, cause, self._counts[(verdict, cause)], self._first[(verdict, cause)])
            for verdict, cause in order
        ]
