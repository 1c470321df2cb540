"""Pacing the request rate to a judge's rate limit: the `Pacer`.

Limiting concurrency alone cannot respect a rate limit: against a fast server even one request
in flight can exceed 20 requests a second. So the senders also take turns on a clock: before each
exchange `Pacer.turn()` hands out a send time from a copy of the server's token bucket (GCRA:
`rate` a second, `capacity` deep).

    before any limit is known   no pacing, but a slow start: at most `window` requests in flight,
                                START_WINDOW at first, SLOW_GROWTH more for each success (x1.25
                                a round trip), spread over the round trip (so a bucket that
                                empties among them costs a 429 or two, not the rest of a window)
    the rate                    what the server was seen to allow, a little more (1 + PROBE):
                                from its headers (`rate_headers.header_limit`, a lower bound;
                                the copy of its bucket set to what they say is left), from the
                                successes sent between two 429s (`rate_evidence`), or, with
                                neither, a first guess that climbs to the first 429, which
                                measures it (`rate_climb`; in a bucket one request deep, known
                                by its 429s alone, the pace then settles upwards from a little
                                below what the climb proved, an answer a step, and each turn comes
                                a turn after the last request actually sent, never sooner:
                                `rate_climb.Settle`). Sending a little faster than the
                                server refills keeps its bucket empty and shows its rate again;
                                a while without a 429 raises the rate by PROBE, each rise in a row
                                by twice the last; a 429 alone in a long while eases it off by
                                2 x PROBE at most. A bucket one request deep tells its rate
                                exactly (its reset): it is paced at that, never probed above, each
                                turn drawn from the reset of the reply before (a push-back's too)
    a 429                       this request queues again for a turn; the others go on at the new
                                rate. The Retry-After is waited out by every sender only while
                                nothing got through yet, or when STUCK push-backs in a row came to
                                requests sent at the current rate (a quota, not a bucket: then the
                                rate also falls by DECREASE)
    pause                       every sender waits until then: set by such a Retry-After, or by a
                                reply whose headers say nothing is left until their reset

A push-back or a reply is matched to its request by the ticket `turn()` (or `start()`) returned:
the time it was sent. The headers are read into a `RateReading`, and what a reading tells of the
server's bucket, by `rate_headers` (OpenAI's and Anthropic's).
"""

from __future__ import annotations

import asyncio
import bisect
import math
import time
from typing import Protocol

from ..core.ratelimit import RateReading
from .pacing_turns import START_WINDOW, Clock, Sleep, Turns
from .rate_climb import ARRIVAL_JITTER, FIRST_TURN, Climb, Settle, safe_pace
from .rate_headers import HeaderRates, exhausted, header_limit, one_deep_wait

#: How much faster than the server was seen to allow the senders go (module docstring).
PROBE = 0.015
#: The slow start's growth a success (x1.25 a round trip: less is sent as its first 429 returns).
SLOW_GROWTH = 0.25
#: A push-back with none in the last ISOLATED turns (a second at least) before it eases the rate
#: off by 2 x PROBE at most, whatever its bound.
ISOLATED = 20.0
#: Push-backs in a row, to requests sent at the current rate, that make every sender wait.
STUCK = 8
#: The rate after STUCK push-backs in a row, as a share of the rate before them.
DECREASE = 0.5
#: Turns without a push-back before the rate rises: in a bucket one request deep, known by its
#: 429s alone, a rise past its rate is always refused, so it is tried rarely (1% of the turns).
PROBE_TURNS = 20.0
ONE_DEEP_PROBE_TURNS = 100.0


class Pacing(Protocol):
    """What a sender asks of a pacer (a `Pacer`, or a worker's pacer relayed to its parent's:
    `parallel.shared_pacer`): a send time, and how each request sent on it ended."""

    @property
    def idle(self) -> bool: ...
    def start(self) -> float: ...
    async def turn(self) -> float: ...
    def on_success(
        self, ticket: float, reading: RateReading | None = None, tokens_needed: int = 0
    ) -> None: ...

    def on_push_back(self, ticket: float, *, pause: float, reading: RateReading | None = None) -> None: ...

    def on_fault(self, ticket: float) -> None: ...


class Pacer(Turns):
    """Send times for every sender of one judge: the module docstring's window, rate and pause.

    `turn()` waits for this sender's time and returns its ticket (`start()` when `idle`, at once);
    each ticket ends in `on_success`, `on_push_back` or `on_fault` (`pacing_turns.Turns` draws
    the turns). Clock and sleep: injectable."""

    def __init__(
        self, *, sleep: Sleep = asyncio.sleep, clock: Clock = time.monotonic, jitter: float = ARRIVAL_JITTER
    ) -> None:
        super().__init__(sleep=sleep, clock=clock)
        #: Seconds a request may reach the server early, against its turn (`rate_climb.Settle`).
        self.jitter = jitter
        self._synced = 0.0  # send time of the request whose reading last set the bucket copy
        self._limited_at = 0.0  # when the last push-back came
        self._stuck = 0  # push-backs in a row to requests sent at the current rate
        self._exact = False  # the headers tell the rate itself (a bucket one request deep)
        self._header_rate = 0.0  # the rate the headers prove
        self._header_rates = HeaderRates()
        self._first_pending = False  # a 429 came before any answer: the first answer sets a rate
        self._rises = 1  # the next rise without a push-back, in PROBEs
        self._limited_sent = 0.0  # send time of the last push-back
        self._raised_from = 0.0  # the rate before the last rise, until a push-back
        self._climb: Climb | None = None  # while the rate is the slow start's guess
        self._settle: Settle | None = None  # a climb found the bucket one request deep
        self._first_limited = 0.0  # send time of the slow start's last push-back
        self._first_back = 0.0  # when it came back

    @property
    def _climbing(self) -> bool:
        return self._climb is not None

    @property
    def _spaced_by_sends(self) -> bool:
        return self._settle is not None

    @property
    def _one_deep_found(self) -> bool:
        """True once a climb found the server's bucket one request deep (no header told)."""
        return self._settle is not None or (self._climb is not None and self._climb.one_deep)

    def on_success(self, ticket: float, reading: RateReading | None = None, tokens_needed: int = 0) -> None:
        """A reply came to the request sent at `ticket`: the slow start widens, the headers set the
        rate and the bucket copy, a reading that says nothing is left pauses until its reset."""
        now = self.clock()
        self._done()
        self.evidence.success(ticket, now)
        if ticket >= self._changed:
            self._stuck = 0
        if self.rate is None:
            if self._first_pending:
                self._first_guess(now)
            else:
                self.window += SLOW_GROWTH
        if reading is not None:
            self._read(ticket, reading, tokens_needed, now)
            # Nothing left, and no copy of the bucket to pace by yet: wait for the reset.
            wait = exhausted(reading, tokens_needed) if self.rate is None else None
            if wait is not None:
                self._pause(now, wait)
        if self._climb is not None:
            self._climb_tick(now)
        elif (
            self._settle is not None
            and self.rate is not None
            and ticket >= self._changed  # sent at the current pace
            and (pace := self._settle.answered(self.rate)) is not None
        ):
            self._set_rate(pace, now, force=True)
        elif self.rate is not None and now - max(self._limited_at, self._changed) > self._probe_after():
            # No push-back for a while: the pace is below the server's; each rise in a row is
            # twice the last (up to 16 x PROBE), so a pace far too slow catches up in seconds.
            self._raised_from = self.rate
            self._set_rate(self.rate * (1 + PROBE * self._rises), now, force=True)
            self._rises = min(self._rises * 2, 16)

    def on_push_back(self, ticket: float, *, pause: float, reading: RateReading | None = None) -> None:
        """The server said "slow down" (a 429) to the request sent at `ticket`: the rate follows
        what the server was seen to allow; every sender waits `pause` only when no rate is known or
        the pace keeps failing (module docstring)."""
        now = self.clock()
        self._done()
        self.evidence.push_back(ticket, now)
        self._sends.refuse(ticket)
        self._limited_at = now
        self._rises = 1
        if reading is not None:
            self._read(ticket, reading, 0, now, taken=False)
            if self._exact:
                self._one_deep(ticket, reading, now, answered=False)
        if self._settle is not None and self.rate is not None:
            at_pace = ticket >= self._changed  # sent at the current pace (before it moves)
            self._settled(ticket, now)
            if at_pace:
                self._stuck_push_back(now, pause)
            return
        floor = self._eased(ticket) if self._climb is None else 0.0
        if self._climb is not None:
            self._climb_push_back(ticket, now)
        elif not self._follow(now, floor) and self.rate is None:
            if self.in_flight:
                # A 429 comes back faster than an answer: the answers on their way show what got
                # through. Nobody else sends until they are back.
                self._first_pending = True
                self._first_limited = max(self._first_limited, ticket)
                self._first_back = now
                self.window = 0
            elif self.evidence.recent_rate(now) is not None:
                self._first_limited, self._first_back = ticket, now
                self._first_guess(now)
            else:
                self._first_pending = False
                self.window = max(self.window, START_WINDOW)
                self._pause(now, pause)  # nothing got through yet: nothing to pace by
                return
        if self.rate is not None and ticket >= self._changed:
            self._stuck_push_back(now, pause)

    def _stuck_push_back(self, now: float, pause: float) -> None:
        """One more push-back in a row to a request sent at the current rate: STUCK of them are a
        quota, not a bucket: every sender waits `pause`, and the rate falls by DECREASE."""
        assert self.rate is not None
        self._stuck += 1
        if self._stuck >= STUCK:
            self._stuck = 0
            self._pause(now, pause)
            self._set_rate(self.rate * DECREASE, now, force=True)

    def _eased(self, ticket: float) -> float:
        """The least rate after a push-back to the request sent at `ticket` (0: none). One alone
        in a long while came as the pace just passed the server's: it eases off by 2 x PROBE, or to
        the rate before the last rise if lower, no more (the push-backs' bound, drawn mostly below
        the rate, may be far less), and the push-backs before it are forgotten."""
        isolated = self.rate is not None and ticket - self._limited_sent > max(1.0, ISOLATED / self.rate)
        self._limited_sent = max(self._limited_sent, ticket)
        raised_from, self._raised_from = self._raised_from, 0.0
        if not isolated or self.rate is None:
            return 0.0
        self.evidence.forget_push_backs(before=ticket)
        eased = self.rate * (1 - 2 * PROBE)
        return min(eased, raised_from) if raised_from else eased

    def on_fault(self, ticket: float) -> None:
        """The request sent at `ticket` ended otherwise (a fault, a timeout, cancelled)."""
        self._done()
        if self._first_pending:
            self._first_guess(self.clock())  # it may have been the last one on its way

    def _first_guess(self, now: float) -> None:
        """The first rate once the slow start's answers are back, climbed from until a push-back
        (`rate_climb`); its first turn a turn away (a first climb's at most): the bucket is empty."""
        if self.in_flight:
            return  # more answers on their way
        self._first_pending = False
        since = self._first_limited
        # What got through before the 429 came back: requests sent at once reach the server in
        # any order, and one sent a moment after the refused one may have been let through first.
        guess = self.evidence.recent_rate(max(since, self._first_back))
        if guess is None:  # none of them got through: the slow start again
            self.window = max(self.window, START_WINDOW)
            self._room.set()
            return
        self._set_rate(guess, now)
        self._tat = self._committed = now + min(1.0 / guess, FIRST_TURN)
        depth = bisect.bisect_right(self.evidence.ok, since)
        self._climb = Climb(since=since, began=now, depth=depth)

    def _climb_tick(self, now: float) -> None:
        """The climb's rate by `now` (`Climb.tick`)."""
        assert self.rate is not None and self._climb is not None
        last_send = self._sends.sent[-1] if self._sends.sent else None
        rate = self._climb.tick(now, self.rate, self._changed, last_send, self.evidence)
        if rate is not None:
            self._set_rate(rate, now, force=True)

    def _climb_push_back(self, ticket: float, now: float) -> None:
        """A push-back while the rate climbs: the climb goes on (from a new start, or lower) or
        ends with the rate it measured, a little more (`Climb.push_back`)."""
        assert self.rate is not None and self._climb is not None
        rate, going = self._climb.push_back(ticket, now, self.rate, self._sends.sent, self.evidence)
        one_deep, ended = self._climb.one_deep, not going
        if ended and one_deep:  # from a little below what it measured, the pace settles (`Settle`)
            self._settle = Settle(proven=rate, refused=self.rate, jitter=self.jitter)
            self._climb, rate = None, safe_pace(rate, self.jitter)
        elif ended:  # a little more than measured
            self._climb, rate = None, rate * (1 + PROBE)
        if rate != self.rate:
            self._set_rate(rate, now, force=True)
        if ended and one_deep:
            self._after_last_answer(now, rate)

    def _settled(self, ticket: float, now: float) -> None:
        """A push-back once a climb found the bucket one request deep (`Settle`): the pace falls to
        a little below the last one answered; the push-backs before this one are forgotten, as at
        the climb's end, and the next turn is a turn after the last answer's."""
        assert self._settle is not None and self.rate is not None
        # The pace the request was sent at: the current one, unless it rose since.
        sent_at = self.rate if ticket >= self._changed else self._settle.proven
        rate = self._settle.pushed_back(sent_at)
        self._limited_at = now
        self._limited_sent = max(self._limited_sent, ticket)
        self.evidence.forget_push_backs(before=ticket)
        self._set_rate(rate, now, force=True)
        self._after_last_answer(now, rate)

    def _after_last_answer(self, now: float, rate: float) -> None:
        """The next turn a turn after the last answer's request (in a bucket one request deep a
        429 took nothing: a turn after it would lose most of a turn)."""
        if self.evidence.ok:
            last = self.evidence.ok[-1]
            self._committed = max(now, last + (1 + self._sends.taken_after(last)) / rate)
            self._redraw()

    def _probe_after(self) -> float:
        """Seconds without a push-back before the rate rises: PROBE_TURNS turns (ONE_DEEP_PROBE_TURNS
        in a bucket one request deep), 0.5 s at least (a sooner rise costs more 429s than it gains
        at a low rate); never when the headers tell it exactly."""
        assert self.rate is not None
        turns = ONE_DEEP_PROBE_TURNS if self._one_deep_found else PROBE_TURNS
        return math.inf if self._exact else max(0.5, turns / self.rate)

    def _read(
        self, ticket: float, reading: RateReading, tokens_needed: int, now: float, *, taken: bool = True
    ) -> None:
        """Rate and bucket copy from a reply's headers, when they tell and are the freshest."""
        bucket = header_limit(reading, tokens_needed, taken=taken)
        if bucket is None or ticket < self._synced:
            return
        self._synced = ticket
        rate, capacity, remaining = bucket
        # One request deep, read after a request it took: its reset is its rate (`header_limit`).
        self._exact = taken and capacity < 2
        self._header_rate = rate if self._exact else self._header_rates.highest(now, rate, capacity)
        self._follow(now)
        self._climb = self._settle = None  # the headers tell the rate: no guess to climb from
        assert self.rate is not None
        self.capacity = max(1.0, capacity)
        if self._exact:
            self._one_deep(ticket, reading, now, answered=True)
            return
        # What is left now: what the server had after this request (its whole count: up to one
        # less than it had, a margin for the jitter of arrivals), refilled since, less what was
        # sent after it and not refused (the server counts those too).
        level = min(self.capacity, remaining + self.rate * (now - ticket)) - self._sends.taken_after(ticket)
        committed = now + (self.capacity - level) / self.rate
        # The turns already given (senders waiting for their time) stay given.
        self._tat += committed - self._committed
        self._committed = committed

    def _one_deep(self, ticket: float, reading: RateReading, now: float, *, answered: bool) -> None:
        """A bucket one request deep, rate told: its request is back `reset` after this one reached
        it (a push-back's: soon), the turns drawn again from then. A reply slower than the fastest
        most likely reached it late (up to a quarter turn is allowed for)."""
        wait = one_deep_wait(reading)
        if wait is None or self.rate is None or ticket < self._synced:
            return
        self._synced = ticket
        arrived = max(ticket, min(now - self.evidence.fastest, ticket + wait / 4)) if answered else ticket
        self._committed = max(now, arrived + wait) + self._sends.taken_after(ticket) / self.rate
        self._redraw()

    def _follow(self, now: float, floor: float = 0.0) -> bool:
        """Set the rate to what the server was seen to allow: its headers' rate, a little more
        than its push-backs prove, or `floor`, whichever is highest; False when none tells yet."""
        bound = self.evidence.rate_bound(now)
        target = max(self._header_rate, bound * (1 + PROBE) if bound else 0.0, floor)
        if self._exact:
            target = self._header_rate  # a rate the headers tell exactly is not probed above
        if not target:
            return False
        self._set_rate(target, now)
        return True
