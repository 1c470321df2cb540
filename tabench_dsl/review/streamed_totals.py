"""Totals of a results file counted as its records stream by, never all of them held at once.

`compute_totals` takes a list of records and keeps the standing one of each pair in a dict: at ten
million records, gigabytes. Here the file is read as a stream (`light_records.iter_light_records`)
and each record is counted as it comes (`totals.StandingCounter`), which holds only per-system,
per-question and per-judge counts and a bit per pair; what is held per pair is the number of its
last record (`last_records.LastRecords`, 8 bytes a pair).

A record counts only if it is its pair's last, which a stream cannot know before the end. The
first read counts every record as standing while no pair has come twice; most files have one
record a pair, and then that read is the count. Once a pair comes again, the first read only
numbers the pairs' last records, and a second read counts those. What some record has that must be
read whole (a panel, audits, repeats: rare) is counted by the same functions
`compute_totals` calls, over a further read of the standing records (`totals.count_standing`).

Every read after the first checks it finds the records the first numbered (each record's pair
noted, no fewer records, the file still beginning with the bytes measured before the first read):
a file truncated or rewritten in between raises `ResultsChanged`, and the caller counts again.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

from ..core.price import Price
from ..core.records import Decision, Record
from ..store.light_records import iter_light_records
from ..store.results_index import Extent, starts_with
from .decisions import apply_decisions
from .last_records import LastRecords, ResultsChanged
from .slices import check_tags
from .totals import StandingCounter, Totals, count_standing

__all__ = ["ResultsChanged", "TagSlice", "decided_record", "decisions_by_pair", "streamed_totals"]


def streamed_totals(
    results: Path,
    decisions: list[Decision],
    *,
    price: Price | None,
    extent: Extent | None,
    on_problem: Callable[[str], None],
    tags: Sequence[str] | None = None,
) -> Totals:
    """What `compute_totals(apply_decisions(records, decisions))` gives for the records of
    `results` (bad lines to `on_problem`, as `iter_light_records` words them). `decisions` holds
    no blind audit (those need the records whole: `counted_records`). `extent` is the file as
    measured before this read; a file that no longer begins with it raises `ResultsChanged`.
    With `tags`, only the standing records of those tags count (`slices.select_tagged`, whose
    `UsageError` an unknown tag raises)."""
    decided = decisions_by_pair(decisions)
    last = LastRecords()
    slicing = TagSlice(tags)
    counter: StandingCounter | None = StandingCounter(price)
    for record in iter_light_records(results, on_problem=on_problem):
        repeated = last.note(record.system, record.question)
        if counter is not None:
            if repeated:  # this pair's earlier record was counted: count again, from the last ones
                counter, slicing = None, TagSlice(tags)
            elif slicing.takes(record):
                counter.add(decided_record(record, decided))
    whole = functools.partial(_standing, results, last, decided)
    standing = functools.partial(slicing.select, whole) if tags else whole
    totals = counter.totals(standing) if counter is not None else count_standing(standing, price=price)
    slicing.check()
    if extent is not None and not starts_with(results, extent):
        raise ResultsChanged
    return totals


class TagSlice:
    """`--tag`'s slice of the standing records as they stream by: the tags seen on them noted, so
    an unknown tag is refused after the count as `select_tagged` refuses it before."""

    def __init__(self, tags: Sequence[str] | None) -> None:
        self.wanted = set(tags or ())
        self.seen: set[str] = set()

    def takes(self, record: Record) -> bool:
        if not self.wanted:
            return True
        self.seen.update(record.tags)
        return not self.wanted.isdisjoint(record.tags)

    def select(self, standing: Callable[[], Iterable[Record]]) -> Iterator[Record]:
        return (record for record in standing() if self.takes(record))

    def check(self) -> None:
        if self.wanted:
            check_tags(self.wanted, self.seen)


def decisions_by_pair(decisions: Iterable[Decision]) -> dict[tuple[str, str], list[Decision]]:
    decided: dict[tuple[str, str], list[Decision]] = {}
    for decision in decisions:
        decided.setdefault((decision.system, decision.question), []).append(decision)
    return decided


def decided_record(record: Record, decided: dict[tuple[str, str], list[Decision]]) -> Record:
    """A standing record with its pair's decisions applied, as `apply_decisions` applies them to
    the last record of a pair (the only record of the pair it is given)."""
    found = decided.get(record.key) if decided else None
    return apply_decisions([record], found)[0] if found else record


def _standing(
    results: Path, last: LastRecords, decided: dict[tuple[str, str], list[Decision]]
) -> Iterator[Record]:
    """The standing records of `results`, in file order (the order `outcomes.latest` keeps),
    decisions applied; `ResultsChanged` when the file no longer holds the records `last` noted."""
    number = 0
    for record in iter_light_records(results):  # its bad lines were reported by the first read
        if number == last.count:
            break
        if last.is_last(number, record.system, record.question):
            yield decided_record(record, decided)
        number += 1
    if number < last.count:
        raise ResultsChanged
