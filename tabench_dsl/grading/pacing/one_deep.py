"""A bucket one request deep, known by its 429s alone (a strict gateway that refuses a second
request before its one token refilled): its rate found from the gaps between the requests it took.

Such a bucket is empty after each request it takes. So a request that reaches it `gap` seconds
after the last one taken is answered exactly when rate x gap >= 1: every answer proves
rate >= 1 / gap, every refusal rate < 1 / gap, and the two bracket the rate (`GapBracket`). A
refusal takes nothing, so it costs no time (the next request still goes a turn after the last one
taken: `schedule.Schedule`), only one of the few 429s a strict gateway allows; an answer below the
rate costs only the time it waited. So the bracket narrows for free from below and at a price from
above, and how far the next request reaches past what was answered depends on the 429s it may
still spend (`spare`: a share of the answers so far, or of those the fastest pace answered brings
over SPARED_SECONDS, so a fast gateway is bracketed tightly and a slow one costs three at most,
the slow start's refusal that found the bucket among them):

    nothing answered          FIRST_TURN; once refused, LOW_PROBE times as slow
    nothing refused           a climb: ONE_DEEP_CLIMB a step with DOUBLING_SPARE 429s to spare,
                              else ONE_DEEP_STEP
    settled, 429s to spare    held (`held`): HOLD_START above the gap answered, eased down an answer
                              and backed off a refusal, so about 2% of the requests are refused
                              for arriving early (the jitter of arrivals is measured, not assumed);
                              FELL_IN_A_ROW refusals in a row mean the limit fell (as below)
    two 429s or more spare    the bracket's middle (geometric): halved either way
    one spare                 a creep, ONE_DEEP_CREEP past the gap answered: the refusal that ends
                              it leaves the pace just under the server's
    settled, or none spare    the gap answered, a margin more: ARRIVAL_JITTER (MARGIN_SHARE of a
                              turn at most), doubled by each refusal at the gap answered (early
                              by more: a loaded machine) up to MOST_WIDENED times, eased back an
                              answer; a second refusal in a row there means the limit fell: a
                              step slower is taken for answered, and the bracket opens below
    the limit fell            after FELL_RECHECK seconds of answers, the gap it fell at is tried
                              once more (`recheck_gap`): answered, the pace is back; refused, the
                              fall stands (one 429 a fall)

An outcome at a gap nobody knows (None: the client's process paused, and what it had queued left
bunched: `pacer.Pacer._paused_about`) counts as an answer or a 429 spent, and moves nothing.

Settled: answered over refused within SETTLED_WIDTH, or the two closer than that margin (probing
between them would find the jitter of arrivals, not the rate).
"""

from __future__ import annotations

import math

from .settings import (
    ARRIVAL_JITTER,
    DOUBLING_SPARE,
    FELL_IN_A_ROW,
    FELL_RECHECK,
    FELL_RECHECK_ANSWERS,
    FIRST_TURN,
    HOLD_BACKOFF,
    HOLD_EASING,
    HOLD_START,
    LOW_PROBE,
    MARGIN_EASING,
    MARGIN_SHARE,
    MOST_WIDENED,
    ONE_DEEP_CLIMB,
    ONE_DEEP_CREEP,
    ONE_DEEP_STEP,
    SETTLED_WIDTH,
    SPARED_REFUSALS,
    SPARED_SECONDS,
    SPARED_SHARE,
)


class GapBracket:
    """The gaps a bucket one request deep answered and refused (module docstring)."""

    def __init__(self, *, jitter: float = ARRIVAL_JITTER) -> None:
        self.jitter = jitter
        #: The shortest gap answered, seconds (None: none proven).
        self.answered: float | None = None
        #: The longest gap refused below `answered` (None: none).
        self.refused: float | None = None
        #: Once settled with 429s to spare, the gap paced at (module docstring), else None.
        self.held: float | None = None
        self.doubted = False  # the last outcome was a refusal at a pace once answered
        self.fastest: float | None = None  # the shortest gap ever answered
        self.answers = 0
        self.refusals = 1  # the slow start's second request, refused: how the bucket was found
        self.in_a_row = 0  # refusals since the last answer
        self.widened = 1.0  # the margin, in ARRIVAL_JITTERs (`gap`)
        self.fell_answers: int | None = None  # answers since the limit fell, until its recheck

    @property
    def spare(self) -> int:
        """429s the bracket may still spend (module docstring): SPARED_SHARE of the answers so far,
        or of those SPARED_SECONDS at the fastest pace answered bring, SPARED_REFUSALS at least."""
        coming = SPARED_SECONDS / self.fastest if self.fastest else 0.0
        return max(SPARED_REFUSALS, math.floor(SPARED_SHARE * max(self.answers, coming))) - self.refusals

    def answer(self, gap: float | None) -> None:
        """A request that reached the bucket `gap` seconds after the last one it took was answered
        (None: at a gap nobody knows, the client's process paused: `Pacer._paused_about`)."""
        self.answers += 1
        self.doubted = False
        self.in_a_row = 0
        self.widened = max(1.0, self.widened * MARGIN_EASING)
        if gap is None:
            return
        self.fastest = gap if self.fastest is None else min(self.fastest, gap)
        if self.fell_answers is not None:
            self.fell_answers += 1
            if self.refused is not None and gap <= self.recheck_gap():
                self.fell_answers = None  # the recheck answered: the fall was not the server's
        if self.held is not None:
            self.held *= 1 - HOLD_EASING
        if self.answered is None or gap < self.answered:
            self.answered = gap
        if self.refused is not None and gap <= self.refused:
            self.refused = None  # the limit rose: the bracket opens again

    def refuse(self, gap: float | None) -> None:
        """A request that reached the bucket `gap` seconds after the last one it took was refused
        (None: at a gap nobody knows: a 429 spent, nothing learnt of the rate)."""
        self.refusals += 1
        if gap is None:
            return
        self.in_a_row += 1
        if self.fell_answers is not None and self.refused is not None and gap <= self.recheck_gap():
            self.fell_answers = None  # the recheck refused: the limit did fall
        if self.held is not None and self.in_a_row < FELL_IN_A_ROW:
            self.held *= 1 + HOLD_BACKOFF
        elif self.answered is None or gap < self.answered:
            self.refused = gap if self.refused is None else max(self.refused, gap)
        elif self.held is not None or self.doubted:
            # Refused again at a pace once answered (or held): the limit fell. That pace is proven
            # no longer: a step slower than this gap is taken for it, and the bracket is drawn again.
            self.answered, self.refused, self.held = gap * ONE_DEEP_STEP, gap, None
            self.fell_answers = 0
        self.doubted = self.held is None and self.answered is not None and gap >= self.answered
        if self.doubted:  # early by more than the margin: a wider one from now on
            self.widened = min(2 * self.widened, MOST_WIDENED)

    def recheck_gap(self) -> float:
        """The gap a fall is rechecked at (FELL_RECHECK): the one refused, a margin more."""
        assert self.refused is not None
        return self.refused + min(self.jitter, MARGIN_SHARE * self.refused)

    def gap(self) -> float:
        """Seconds from the last request taken to the next one (module docstring)."""
        answered, refused = self.answered, self.refused
        if self.held is not None:
            return self.held
        if answered is None:
            return FIRST_TURN if refused is None else LOW_PROBE * refused
        if refused is None:
            return answered / (ONE_DEEP_CLIMB if self.spare >= DOUBLING_SPARE else ONE_DEEP_STEP)
        recheck_after = max(FELL_RECHECK_ANSWERS, FELL_RECHECK / answered)  # answers since it fell
        if self.fell_answers is not None and self.fell_answers >= recheck_after:
            return self.recheck_gap()
        # A bracket narrower than the margin the pace keeps anyway is no longer worth probing.
        least_margin = min(self.jitter, MARGIN_SHARE * answered)
        settled = answered / refused <= SETTLED_WIDTH or answered - refused <= least_margin
        if settled and self.spare >= 2:
            self.held = answered * (1 + HOLD_START)
            return self.held
        margin = least_margin * self.widened
        if settled or self.spare <= 0:
            return answered + margin
        # A probe within the bracket (never past what was answered, or it would prove nothing).
        if self.spare >= 2:
            return math.sqrt(answered * refused)
        return min(max(answered / ONE_DEEP_CREEP, refused * SETTLED_WIDTH) + margin, answered)
