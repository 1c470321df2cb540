"""Which models answered: the `model` each judge reply named (`Attempt.served`), counted per judge.

A judge is named by the model it was asked for (`gpt-x`); the provider answers as a snapshot
(`gpt-x-2026-01-01`) and may change it during a grading. Totals list every model that served a
call, with its judge and its count of calls, so a results file says what actually graded it. Calls
served from the reply cache and replies that named no model are not counted.
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from ..core.records import Attempt, JudgeInfo, Record
from .costs import judged_attempts


class ServedModel(msgspec.Struct, frozen=True):
    """One model that answered a judge's calls: the judge (as outputs name it), the model the
    replies named, and how many calls it served."""

    judge: str
    model: str
    calls: int


def served_models(records: Iterable[Record]) -> list[ServedModel]:
    """The models that answered the judge calls of `records` (the standing ones), by judge, then
    by most calls."""
    counter = ServedCounter()
    for record in records:
        counter.add(record)
    return counter.models()


class ServedCounter:
    """`served_models` one record at a time (`add`), for a count that streams the records."""

    def __init__(self) -> None:
        self.counts: dict[tuple[str, str], int] = {}

    def add(self, record: Record) -> None:
        """Count the calls of one standing record by the model that served each."""
        self.add_judged(judged_attempts(record))

    def add_judged(self, judged: Iterable[tuple[JudgeInfo, Attempt]], change: int = 1) -> None:
        """`add` of a record's `costs.judged_attempts`, when the caller has them already (`change`
        -1: take them back)."""
        counts = self.counts
        for judge, attempt in judged:
            served = attempt.served
            if served is not None and served.model and not attempt.cache_hit:
                key = (judge.describe(), served.model)
                calls = counts.get(key, 0) + change
                if calls:
                    counts[key] = calls
                else:
                    del counts[key]

    def merge(self, other: ServedCounter) -> None:
        """Add the calls `other` counted (over a later part of the file)."""
        for key, calls in other.counts.items():
            self.counts[key] = self.counts.get(key, 0) + calls

    def models(self) -> list[ServedModel]:
        """The models counted, by judge, then by most calls."""
        ordered = sorted(self.counts.items(), key=lambda item: (item[0][0], -item[1], item[0][1]))
        return [ServedModel(judge, model, calls) for (judge, model), calls in ordered]
