"""Stability: the same answer asked of the judge K times (`grade --repeat K`), and what the K
verdicts make.

Each ask is a whole grading by the one judge (first ask, format re-ask, stern retry, its own
adjudicate), cached under an entry of its own (the attempt kind carries the ask's number, `#2`,
`#3`..., so a rerun replays each ask, and the first ask keeps the cache entry a grading without
`--repeat` made). The record lists the K asks in `Record.repeats` and its verdict is:

    every ask gave the same verdict      -> that verdict, with the first ask's reason and facets
    asks differ and one of them is error -> error, as that ask ended (--resume asks again)
    asks differ otherwise                -> adjudicate, cause "unstable"

Totals report the share of repeated answers whose asks differed (`review.stability`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import msgspec

from ..core.records import PanelVote, Record

#: `--repeat`'s largest value: each ask is a whole judge call or more.
MAX_REPEAT = 20


def repeat_kind(kind: str, repetition: int) -> str:
    """The attempt kind a cache key carries for ask number `repetition` (0-based): the first ask
    keeps the plain kind, so its entry is the one a grading without `--repeat` made."""
    return kind if repetition == 0 else f"{kind}#{repetition + 1}"


def as_vote(record: Record) -> PanelVote:
    """One ask's record as a vote of its judge."""
    return PanelVote(
        judge=record.judge,
        verdict=record.verdict,
        reason=record.reason,
        cause=record.cause,
        facets=record.facets,
        attempts=record.attempts,
        tolerated=record.tolerated,
        warnings=record.warnings,
    )


def combine_repeats(asks: Sequence[Record]) -> Record:
    """The record of an answer asked `len(asks)` times (module docstring for the rule)."""
    first = asks[0]
    votes = [as_vote(ask) for ask in asks]
    tolerated = list(dict.fromkeys(form for ask in asks for form in ask.tolerated))
    warnings = list(dict.fromkeys(w for ask in asks for w in ask.warnings))
    common = {"attempts": [], "repeats": votes, "tolerated": tolerated, "warnings": warnings}
    verdicts = [ask.verdict for ask in asks]
    if len(set(verdicts)) == 1:
        return msgspec.structs.replace(first, **common)
    errored = next((ask for ask in asks if ask.verdict == "error"), None)
    if errored is not None:
        return msgspec.structs.replace(errored, **common)
    counts = Counter(verdicts)
    told = ", ".join(f"{counts[v]} {v}" for v in ("pass", "fail", "adjudicate") if counts[v])
    return msgspec.structs.replace(
        first,
        verdict="adjudicate",
        cause="unstable",
        reason=f"the judge, asked {len(asks)} times, did not agree with itself: {told}",
        facets={},
        **common,
    )
