"""One answer's outcome and a row's score: what totals, slices, comparisons, diffs and exports
count the same way (the last record of a pair standing, a human decision over the tool's verdict,
score = pass / (pass + fail + adjudicate) with its 95% Wilson interval)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from ..core.records import Record
from ..core.stats import wilson_interval
from ..store.light_records import LightRecord

#: Decimals of the interval bounds in totals (`interval_bound`).
BOUND_DECIMALS = 6


class OutcomeCounts(Protocol):
    """A row of the totals that counts outcomes: a system, a question, a tag, a system on a tag."""

    answers: int
    passed: int
    fail: int
    adjudicate: int
    error: int


def count_outcome(row: OutcomeCounts, verdict: str, change: int = 1) -> None:
    """Count one answer whose outcome (`outcome`) is `verdict` in `row` (`change` -1: take it back)."""
    row.answers += change
    if verdict == "pass":
        row.passed += change
    elif verdict == "fail":
        row.fail += change
    elif verdict == "adjudicate":
        row.adjudicate += change
    else:
        row.error += change


def add_counts(row: OutcomeCounts, other: OutcomeCounts) -> None:
    """Add `other`'s outcome counts to `row`'s (a row counted over another part of the file)."""
    row.answers += other.answers
    row.passed += other.passed
    row.fail += other.fail
    row.adjudicate += other.adjudicate
    row.error += other.error


def score_of(row: OutcomeCounts) -> float | None:
    """pass / (pass + fail + adjudicate): errors are no verdict; None when nothing was graded."""
    graded = row.passed + row.fail + row.adjudicate
    return row.passed / graded if graded else None


def score_interval(row: OutcomeCounts) -> tuple[float | None, float | None]:
    """The score's 95% Wilson interval, its bounds rounded (`interval_bound`); (None, None) when
    nothing was graded."""
    interval = wilson_interval(row.passed, row.passed + row.fail + row.adjudicate)
    if interval is None:
        return None, None
    low, high = interval
    return interval_bound(low), interval_bound(high)


def latest(records: Iterable[Record]) -> dict[tuple[str, str], Record]:
    """The standing record of each (system, question) pair: the last one written."""
    standing: dict[tuple[str, str], Record] = {}
    for record in records:
        standing.pop(record.key, None)  # re-insert so order follows the standing record
        standing[record.key] = record
    return standing


def outcome(record: Record | LightRecord) -> str:
    """The verdict a record counts as: a human decision overrides the tool's outcome."""
    return record.decision.verdict if record.decision is not None else record.verdict


def interval_bound(value: float) -> float:
    """An interval bound as totals report it: within [0, 1] and rounded to `BOUND_DECIMALS`.

    Float arithmetic leaves 5.55e-17 where the bound is 0 and 0.9999999999999999 where it is 1; a
    reader (or a script comparing with 0) should see 0.0 and 1.0. Six decimals is a ten-thousandth
    of a percentage point, finer than any sample size makes meaningful."""
    return round(min(1.0, max(0.0, value)), BOUND_DECIMALS)


def percent(value: float | None, missing: str = "-") -> str:
    """A share as `87.5%`, or `missing` when there is none (no graded answer)."""
    return missing if value is None else f"{100 * value:.1f}%"


def score_text(row: OutcomeCounts) -> str:
    """A row's score as the tables show it, with the answers it leaves out said beside it: an
    answer that ended in `error` has no verdict, so a score over the others could read 100% while
    most answers were never judged."""
    shown = percent(score_of(row))
    return f"{shown} ({row.error} left out)" if row.error else shown
