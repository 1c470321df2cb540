"""The climb: from a first rate guessed from the slow start's replies alone (no header telling)
to the server's, in a few tenths of a second, and what its first push-back proves of the rate.

    the guess      what got through in the second before the slow start's first 429, once the
                   answers sent before it are back (the server's bucket counted as a second's
                   worth); the bucket was empty at that 429 (`since`), and its depth is about
                   what got through before it (`depth`)
    a step         x CLIMB_STEP, CLIMB_TICK after the last, once a request went at the last step
                   (at a low rate: up to MAX_STEPS_A_SEND steps for that request, so a rate of one
                   a second does not take seconds a step)
    the floor      the climb never goes slower than its answers prove (`success_bound`, with the
                   `depth` below)
    the first 429  sent after the climb began: the bucket was empty at both push-backs, so what
    to the climb   the server accepted in between, counted by send time (answers still on their
                   way included: a 429 would have been back first), is its refill over the span,
                   or less if the bucket filled up while the climb was below the rate. Successes
                   tell too: between two of them, the second took a token the first left behind,
                   so r >= (successes after the first - (depth - 1)) / span (a bound that matters
                   for a shallow bucket, where the first is weakest). And the sends replayed
                   through a copy of the bucket (`bucket_bracket`) bracket the rates that could
                   have taken them all and refused this one: within BRACKET_WIDTH, their middle
                   (a measure the refill during the climb does not pull down), else their least.
                   A shallow bucket is replayed from the first send, full then, at each depth up
                   to the slow start's count (`full_bucket_bracket`): that count overstates it
                   by what refilled during the slow start, and one depth alone fitting every
                   send tells it (4, not 5, at 20 a second 0.2 s deep: a rate 20% higher).
                   The rate is the highest, at most the climb's own.
                   A 429 too soon to measure by ends the climb at the rate before its last
                   step; before any step (the guess was too high) it starts the climb again,
                   lower, up to CLIMB_RESTARTS times. The pace after it is the measured rate a
                   little more (settings.PROBE).

A bucket one request deep never climbs: its slow start tells it (`one_deep.GapBracket`).
"""

from __future__ import annotations

import bisect
import math

from .evidence import RateEvidence, bucket_bracket, full_bucket_bracket
from .settings import (
    BRACKET_WIDTH,
    CLIMB_RESTARTS,
    CLIMB_STEP,
    CLIMB_TICK,
    MAX_STEPS_A_SEND,
    MEASURED,
    MIN_SPAN,
    REPLAYED_DEPTH,
)


class Climb:
    """A climb under way: it measures from `since` (a push-back's send time: the server's bucket
    was empty then), began at `began`, and the bucket holds about `depth` requests."""

    def __init__(self, *, since: float, began: float, depth: float) -> None:
        self.since = since
        self.began = began
        self.depth = max(1.0, depth)
        self.restarts = 0
        #: The rate before the last step (a request went at it without a 429), None before one.
        self.stepped_from: float | None = None

    def steps_due(self, now: float, changed: float, last_send: float | None) -> int:
        """Steps to take by `now`, the rate having last been set at `changed`: none until
        CLIMB_TICK has passed and a request went at that rate."""
        if now - changed < CLIMB_TICK or last_send is None or last_send < changed:
            return 0
        return min(MAX_STEPS_A_SEND, int((now - changed) / CLIMB_TICK))

    def tick(
        self, now: float, rate: float, changed: float, last_send: float | None, evidence: RateEvidence
    ) -> float | None:
        """The climb's rate by `now`, the rate having last been set at `changed` and the last
        request sent at `last_send`: at least what its answers prove (the floor), else its steps
        due; None when it stays."""
        floor = evidence.success_bound(-math.inf, math.inf, self.depth)
        if floor is not None and floor > rate:
            self.stepped_from = floor  # proven: the climb goes on from it
            return floor
        steps = self.steps_due(now, changed, last_send)
        if not steps:
            return None
        self.stepped_from = rate
        return rate * CLIMB_STEP**steps

    def push_back(
        self, ticket: float, now: float, rate: float, sends: list[float], evidence: RateEvidence
    ) -> tuple[float, bool]:
        """A push-back to the request sent at `ticket` while climbing at `rate`: the rate from now
        on, and whether the climb goes on (module docstring). When it ends, the push-backs before
        this one are forgotten: spans from them would count the climb, below the server's rate, as
        what the server allows."""
        rate, going = self._measure(ticket, now, rate, sends, evidence)
        if not going:
            evidence.forget_push_backs(before=ticket)
        return rate, going

    def _bracketed(self, ticket: float, sends: list[float], evidence: RateEvidence) -> float:
        """The rates the bucket could refill at, from what it took since the climb's start and its
        refusal of the request sent at `ticket` (`bucket_bracket`): their middle (geometric), or
        the least when they are more than BRACKET_WIDTH apart (a bucket whose depth the slow
        start overstated, or that never filled, bounds its rate from above only loosely); the
        middle however wide when the replay from the first send told the depth."""
        refused = set(evidence.limited[bisect.bisect_right(evidence.limited, self.since) :])
        start, end = bisect.bisect_right(sends, self.since), bisect.bisect_left(sends, ticket)
        taken = [sent for sent in sends[start:end] if sent not in refused]
        replayed = self._from_the_start(ticket, sends, evidence)
        if replayed is not None:  # its depth is known: its bracket is tight both ways
            return math.sqrt(replayed[0] * replayed[1])
        least, most = bucket_bracket(self.since, taken, ticket, self.depth)
        return math.sqrt(least * most) if most <= BRACKET_WIDTH * least else least

    def _from_the_start(
        self, ticket: float, sends: list[float], evidence: RateEvidence
    ) -> tuple[float, float] | None:
        """The same bracket from every send since the first, the bucket full then, for a shallow
        bucket (up to REPLAYED_DEPTH through before the climb): the slow start's successes before
        its first 429 overstate the depth by what refilled meanwhile (5 for 4 is a rate 20% low),
        so each depth up to theirs is tried: the rates of the one that fits it all; None when none
        or more than one does (the bucket was not full at the first, or is deeper; or the sends
        do not tell the depth: the slow start's count then bounds the rate from below)."""
        before = bisect.bisect_right(sends, self.since)
        if before > REPLAYED_DEPTH or not sends or sends[0] > self.since:
            return None
        events = sends[: bisect.bisect_right(sends, ticket)]
        refused = set(evidence.limited[: bisect.bisect_right(evidence.limited, ticket)])
        if ticket not in refused or sends[0] in refused:
            return None
        brackets = [full_bucket_bracket(events, refused, float(depth)) for depth in range(1, before + 1)]
        fitting = [bracket for bracket in brackets if bracket is not None]
        return fitting[0] if len(fitting) == 1 else None

    def _measure(
        self, ticket: float, now: float, rate: float, sends: list[float], evidence: RateEvidence
    ) -> tuple[float, bool]:
        if ticket <= self.began:
            self.since = max(self.since, ticket)  # met the bucket the slow start emptied
            return rate, True
        span = ticket - self.since
        sent = bisect.bisect_left(sends, ticket) - bisect.bisect_right(sends, self.since)
        refused = bisect.bisect_left(evidence.limited, ticket) - bisect.bisect_right(
            evidence.limited, self.since
        )
        accepted = sent - refused
        if accepted >= 2 and (span >= MIN_SPAN or accepted >= MEASURED):
            spaced = evidence.success_bound(self.since, ticket, self.depth) or 0.0
            measured = max(accepted / span, spaced, min(rate, self._bracketed(ticket, sends, evidence)))
            return measured, False
        if accepted < 2 and self.stepped_from is not None:
            # Too soon to measure, after a step: the rate before it went without a 429, so
            # soon after the bucket was emptied that little can have filled it meanwhile.
            return self.stepped_from, False
        if self.restarts < CLIMB_RESTARTS:
            # Too soon to measure: the guess was too high. Again, lower, from this push-back
            # (the bucket was empty then too).
            self.restarts += 1
            self.since = ticket
            self.began = now
            return rate / CLIMB_STEP**2, True
        return rate / CLIMB_STEP**4, False
