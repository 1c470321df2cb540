"""The standing records of a results file, read one at a time, for `tabench export`.

Holding every record of a large file (answers, reasons and replies) to find the standing one of
each pair needs memory in proportion to the file. Instead the file is read twice: the first pass
keeps, for each (system, question) pair, only the position of its last record among the file's
records; the second yields the record at that position, its pair's decisions applied, and drops
the rest. Memory grows with the pairs, not with the texts. Both passes read the records the same
way (`results.iter_records`), so a line that is no record is no record in either.

A decision is applied by `decisions.apply_decisions` to the standing record alone, with the
decisions made on its pair: which decision applies depends on nothing else, so each row is what
applying them to the whole file gives. Records appended between the passes (a grading still
writing) are left out: the export is of the file as the first pass found it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from ..core.records import Decision, Record
from ..store.results import iter_records
from .decisions import apply_decisions


def standing_positions(results: Path, *, on_problem: Callable[[str], None]) -> dict[tuple[str, str], int]:
    """(system, question) -> the 0-based position, among the records of `results`, of that pair's
    last record. Bad lines go to `on_problem`, as `iter_records` reports them."""
    last: dict[tuple[str, str], int] = {}
    intern = sys.intern  # a question's name is shared by every system's pair: kept once
    for position, record in enumerate(iter_records(results, on_problem=on_problem)):
        last[(intern(record.system), intern(record.question))] = position
    return last


def standing_records(
    results: Path, positions: dict[tuple[str, str], int], decisions: list[Decision]
) -> Iterator[Record]:
    """The record at each pair's position in `positions`, in file order, with that pair's
    `decisions` applied (`apply_decisions`)."""
    by_pair: dict[tuple[str, str], list[Decision]] = {}
    for decision in decisions:
        by_pair.setdefault((decision.system, decision.question), []).append(decision)
    for position, record in enumerate(iter_records(results)):
        key = record.key
        if positions.get(key) != position:
            continue
        mine = by_pair.get(key)
        yield apply_decisions([record], mine)[0] if mine else record
