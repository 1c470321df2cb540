"""A standing record's judge calls, counted onto its system's row of totals (`count_calls`), and
the attempts list many records share, noted once with how many records had it (`SharedCalls`).

The light reader gives every record whose attempts have the same shape (kinds, tokens, cache
hits, served model) one shared list, so a million records carry a few lists. A count that notes
each record as one more use of its list, and counts the list's calls once times its uses, gives
the same figures as counting each record's calls (every count is a sum of whole numbers), for a
dictionary look-up a record instead of a walk over its attempts (`totals.StandingCounter.add`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from ..core.records import Attempt, JudgeInfo
from .costs import Spend

#: Most shared attempts lists a count holds uncounted: a file has a few shapes of attempts per
#: system and judge (the light reader shares up to thousands); past this many, the records' lists
#: are taken as not shared (each record decoded whole has its own) and counted as they come.
SHARED_KEPT = 4096


class CallCounts(Protocol):
    """The counts of a system's row that its records' judge calls add to."""

    judge_calls: int
    cache_hits: int
    stern_retries: int
    format_retries: int


class SharedCalls:
    """One attempts list of one system's records, all graded by one judge, and how many standing
    records had it (`uses`): their calls are counted once, times `uses` (`count_calls`)."""

    __slots__ = ("attempts", "judge", "system", "uses")

    def __init__(self, system: str, judge: JudgeInfo, attempts: list[Attempt]) -> None:
        self.system, self.judge, self.attempts, self.uses = system, judge, attempts, 1

    def judged(self) -> list[tuple[JudgeInfo, Attempt]]:
        """The attempts with the judge that made them, as `costs.judged_attempts` gives them."""
        return [(self.judge, attempt) for attempt in self.attempts]


def count_calls(
    row: CallCounts, spend: Spend, judged: Iterable[tuple[JudgeInfo, Attempt]], change: int = 1
) -> None:
    """A record's judge calls (`costs.judged_attempts`), cache hits and retries onto its system's
    row, their tokens onto `spend` (a panel's judges' and an audit's calls too), `change` times
    (the records sharing them); `change` -1 takes one record's back."""
    for judge, attempt in judged:
        if attempt.cache_hit:
            row.cache_hits += change
        elif attempt.raw is not None or attempt.error is not None:
            row.judge_calls += change
            if change > 0:
                spend.add_call(attempt.tokens, judge, change)
            else:
                spend.take_call(attempt.tokens, judge)
        if attempt.kind == "stern":
            row.stern_retries += change
        elif attempt.kind == "format":
            row.format_retries += change
