"""Pacing the request rate to a judge's rate limit: the `Pacer`, and what a reading of the
rate-limit headers providers send tells of the server's bucket.

Limiting concurrency alone cannot respect a rate limit: against a fast server even one request
in flight can exceed 20 requests a second. So the senders also take turns on a clock: before each
exchange `Pacer.turn()` hands out a send time from a copy of the server's token bucket (GCRA:
`rate` a second, `capacity` deep).

    before any limit is known   no pacing, but a slow start: at most `window` requests in flight,
                                START_WINDOW at first, one more for each success (so it doubles
                                every round trip and a first burst costs a few 429s, not one per
                                concurrency slot)
    the rate                    what the server was seen to allow, a little more (1 + PROBE):
                                  - from its headers: limit, remaining and reset (a lower bound:
                                    `header_limit`), and the copy of its bucket is set to what
                                    `remaining` says is left (so the senders stop before the
                                    server has to say no);
                                  - from its 429s: a lower bound drawn from the successes sent
                                    between two of them (`rate_evidence.RateEvidence`);
                                  - at the first 429 with neither: the successes of the last
                                    second, burst included, a guess: it climbs by CLIMB while no
                                    429 comes to it, and at the first one settles between the
                                    last two steps (corrected by the next bounds).
                                Sending a little faster than the server refills keeps its bucket
                                empty, every token used, and shows its rate again (a 429 now and
                                then); a while without one raises the rate by PROBE, and each
                                rise in a row by twice the last.
    a 429                       this request queues again for a turn; the others go on at the new
                                rate. The Retry-After is waited out by every sender only while
                                nothing got through yet, or when STUCK push-backs in a row came to
                                requests sent at the current rate (a quota, not a bucket: then the
                                rate also falls by DECREASE)
    pause                       every sender waits until then: set by such a Retry-After, or by a
                                reply whose headers say nothing is left until their reset

A push-back or a reply is matched to its request by the ticket `turn()` (or `start()`) returned:
the time it was sent.

The headers are read into a `RateReading` by `rate_headers` (OpenAI's and Anthropic's).
"""

from __future__ import annotations

import asyncio
import bisect
import time
from collections import deque
from collections.abc import Awaitable, Callable

from ..core.ratelimit import RateReading
from .rate_evidence import HORIZON, RateEvidence

Sleep = Callable[[float], Awaitable[None]]
Clock = Callable[[], float]

#: How much faster than the server was seen to allow the senders go (module docstring).
PROBE = 0.015
#: Requests in flight before the first reply, while no limit is known (the slow start).
START_WINDOW = 2
#: Push-backs in a row, to requests sent at the current rate, that make every sender wait.
STUCK = 8
#: The rate after STUCK push-backs in a row, as a share of the rate before them.
DECREASE = 0.5
#: While the first rate is a guess (drawn from the slow start's few replies, no header telling),
#: it is multiplied by CLIMB after CLIMB_TURNS turns' time without a push-back (a quarter of a
#: second at least), until one comes: a guess too low reaches the server's rate in a few steps.
CLIMB = 1.5
CLIMB_TURNS = 4.0
#: Waits for a turn shorter than this (seconds) are not cut short when the schedule is redrawn.
SHORT_WAIT = 0.1
#: The slowest pace, requests a second.
MIN_RATE = 0.01
#: Send times kept for the headers' bucket copy.
SENDS_KEPT = 4096
#: The longest pause a header may impose (a daily budget's reset would otherwise stop a run for
#: hours on one reading; a 429 then comes with its own Retry-After).
MAX_PAUSE = 60.0


def exhausted(reading: RateReading, tokens_needed: int = 0) -> float | None:
    """Seconds until the server has room again when `reading` says none is left (no request, or
    fewer tokens than the next request needs), else None."""
    waits: list[float] = []
    if reading.requests_remaining is not None and reading.requests_remaining <= 0:
        waits.append(reading.requests_reset or 0.0)
    if (
        reading.tokens_remaining is not None
        and tokens_needed > 0
        and reading.tokens_remaining < min(tokens_needed, reading.tokens_limit or tokens_needed)
    ):
        waits.append(reading.tokens_reset or 0.0)
    return min(max(waits), MAX_PAUSE) if waits else None


def refill_rate(reading: RateReading | None) -> float | None:
    """Requests per second the server's bucket refills at, from its own limit and reset (a bucket
    `limit` deep that is whole again `reset` seconds after holding `remaining`); None when the
    reading cannot tell."""
    if reading is None:
        return None
    limit, remaining, reset = reading.requests_limit, reading.requests_remaining, reading.requests_reset
    if limit is None or remaining is None or not reset or remaining >= limit:
        return None
    return (limit - remaining) / reset


def header_limit(reading: RateReading, tokens_needed: int = 0) -> tuple[float, float, float] | None:
    """(rate, capacity, level) of the server's bucket in requests, from its headers: for requests,
    and for tokens at `tokens_needed` a request, whichever binds. The rate is a lower bound (the
    reading's whole counts hide up to one request of what was used); None when neither tells."""
    found: list[tuple[float, float, float]] = []
    pairs = [(reading.requests_limit, reading.requests_remaining, reading.requests_reset, 1)]
    if tokens_needed > 0:
        pairs.append((reading.tokens_limit, reading.tokens_remaining, reading.tokens_reset, tokens_needed))
    for limit, remaining, reset, unit in pairs:
        if limit is None or remaining is None or not reset:
            continue
        used = (limit - remaining) / unit - 1
        if used >= 1:
            found.append((used / reset, limit / unit, remaining / unit))
    return min(found, key=lambda bucket: bucket[2]) if found else None


class Pacer:
    """Send times for every sender of one judge: the module docstring's window, rate and pause.

    `turn()` waits for this sender's time and returns its ticket (`start()` when `idle`, without
    waiting); every ticket ends in one of `on_success`, `on_push_back` or `on_fault`. The clock
    and the sleep are injectable for tests."""

    def __init__(self, *, sleep: Sleep = asyncio.sleep, clock: Clock = time.monotonic) -> None:
        self.sleep = sleep
        self.clock = clock
        #: Requests per second, or None while no limit is known.
        self.rate: float | None = None
        #: Requests the copy of the server's bucket holds (a burst the pace allows).
        self.capacity = 1.0
        #: No sender sends before this time (the clock's).
        self.paused_until = 0.0
        #: Requests in flight allowed while no rate is known (the slow start).
        self.window = START_WINDOW
        self.in_flight = 0
        self.evidence = RateEvidence()
        self._tat = 0.0  # the bucket copy's theoretical arrival time (GCRA), turns given included
        self._committed = 0.0  # the same, counting only the requests actually sent
        self._generation = 0  # raised when the schedule is redrawn (a pause, a new rate)
        self._sends: list[float] = []  # send times, in order, for the headers' bucket copy
        self._synced = 0.0  # send time of the request whose reading last set the bucket copy
        self._changed = 0.0  # when the rate was last set (push-backs to older sends do not stick)
        self._limited_at = 0.0  # when the last push-back came
        self._stuck = 0  # push-backs in a row to requests sent at the current rate
        self._header_rate = 0.0  # the highest rate the headers proved over the last HORIZON s
        self._header_rates: deque[tuple[float, float, float]] = deque(maxlen=1024)
        self._first_pending = False  # a 429 came before any answer: the first answer sets a rate
        self._rises = 1  # the next rise without a push-back, in PROBEs
        self._climbing = False  # the rate is the slow start's guess, no push-back to it yet
        self._climbed = False  # the climb has taken a step
        self._room = asyncio.Event()
        self._redrawn: asyncio.Future[None] | None = None  # done when the schedule is redrawn

    @property
    def idle(self) -> bool:
        """True when a sender may go at once (`start()`) without waiting for a turn."""
        return self.rate is None and self.in_flight < self.window and self.paused_until <= self.clock()

    def start(self) -> float:
        """A send now, without waiting: its ticket."""
        now = self.clock()
        self.in_flight += 1
        if self.rate is not None:
            self._committed = max(self._committed, now) + 1.0 / self.rate
        self._sends.append(now)
        if len(self._sends) > 2 * SENDS_KEPT:
            del self._sends[:SENDS_KEPT]
        return now

    async def turn(self) -> float:
        """Wait until this sender may send; its ticket."""
        while True:
            now = self.clock()
            if now < self.paused_until:
                await self.sleep(self.paused_until - now)
                continue
            if self.rate is None:
                if self.in_flight < self.window:
                    return self.start()
                self._room.clear()
                await self._room.wait()
                continue
            interval = 1.0 / self.rate
            slot = max(now, self._tat - (self.capacity - 1.0) * interval)
            self._tat = max(self._tat, now) + interval
            if slot <= now:
                return self.start()
            generation = self._generation
            await self._sleep_unless_redrawn(slot - now)
            if generation == self._generation:
                return self.start()
            # The schedule was redrawn while this sender waited (a pause, a new rate): its time
            # is void, it queues again at once (not when its old time comes: a slow first rate
            # would otherwise go on spacing every waiting sender for one more turn each).

    async def _sleep_unless_redrawn(self, seconds: float) -> None:
        """Sleep `seconds`, or less when the schedule is redrawn meanwhile (a short wait, which a
        new rate would hardly move, is slept out plainly: a task per turn costs at high rates)."""
        if seconds < SHORT_WAIT:
            await self.sleep(seconds)
            return
        if self._redrawn is None:
            self._redrawn = asyncio.get_running_loop().create_future()
        redrawn = self._redrawn
        sleeper = asyncio.ensure_future(self.sleep(seconds))
        try:
            await asyncio.wait((sleeper, redrawn), return_when=asyncio.FIRST_COMPLETED)
        finally:
            sleeper.cancel()

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
                self._guess_rate(self.evidence.recent_rate(now) or MIN_RATE, now)
            self.window += 1
        if reading is not None:
            self._read(ticket, reading, tokens_needed, now)
            # Nothing left, and no copy of the bucket to pace by yet: wait for the reset.
            wait = exhausted(reading, tokens_needed) if self.rate is None else None
            if wait is not None:
                self._pause(now, wait)
        if self._climbing and now - max(self._limited_at, self._changed) > self._climb_after():
            self._set_rate(self.rate * CLIMB if self.rate else MIN_RATE, now, force=True)
            self._climbed = True
        elif self.rate is not None and now - max(self._limited_at, self._changed) > self._probe_after():
            # No push-back for a while: the pace is below the server's; each rise in a row is
            # twice the last (up to 16 x PROBE), so a pace far too slow catches up in seconds.
            self._set_rate(self.rate * (1 + PROBE * self._rises), now, force=True)
            self._rises = min(self._rises * 2, 16)

    def on_push_back(self, ticket: float, *, pause: float, reading: RateReading | None = None) -> None:
        """The server said "slow down" (a 429) to the request sent at `ticket`: the rate follows
        what the server was seen to allow; every sender waits `pause` only when no rate is known or
        the pace keeps failing (module docstring)."""
        now = self.clock()
        self._done()
        self.evidence.push_back(ticket, now)
        self._limited_at = now
        self._rises = 1
        if reading is not None:
            self._read(ticket, reading, 0, now)
        if self._climbing and not self._climb_refused(ticket, now):
            pass  # sent before the pace it climbs by: says nothing of it
        elif not self._follow(now) and self.rate is None:
            first = self.evidence.recent_rate(ticket)
            if first is not None:
                self._guess_rate(first, now)
            elif self.in_flight:
                # A 429 comes back faster than an answer: the answers on their way show what got
                # through. Nobody else sends until the first of them is back.
                self._first_pending = True
                self.window = 0
            else:
                self.window = max(self.window, START_WINDOW)
                self._pause(now, pause)  # nothing got through yet: nothing to pace by
                return
        if ticket >= self._changed:
            self._stuck += 1
            if self._stuck >= STUCK and self.rate is not None:
                self._stuck = 0
                self._pause(now, pause)
                self._set_rate(self.rate * DECREASE, now, force=True)

    def on_fault(self, ticket: float) -> None:
        """The request sent at `ticket` ended otherwise (a fault, a timeout, cancelled)."""
        self._done()

    def _done(self) -> None:
        self.in_flight = max(0, self.in_flight - 1)
        if self.rate is None:
            self._room.set()

    def _guess_rate(self, rate: float, now: float) -> None:
        """A first rate from the slow start's replies alone: climbed from until a push-back."""
        self._set_rate(rate, now)
        self._climbing = True
        self._climbed = False

    def _climb_refused(self, ticket: float, now: float) -> bool:
        """Whether a push-back to the request sent at `ticket` ends the climb: one sent a turn or
        more after the pace last changed (earlier ones may meet the bucket the slow start emptied).
        After a step, the server's rate lies between the last two: the pace goes between them, and
        the push-backs before this one, which came while the pace was below the server's (its
        bucket filling up between them), are forgotten as proving nothing. At the guess itself,
        the guess was too high: the push-backs go on as evidence."""
        assert self.rate is not None
        if ticket < self._changed + 1.0 / self.rate:
            return False
        self._climbing = False
        if self._climbed:
            self.evidence.forget_push_backs(before=ticket)
            self._set_rate(self.rate / CLIMB**0.5, now, force=True)
        return True

    def _climb_after(self) -> float:
        """Seconds without a push-back before a climbing rate rises (CLIMB_TURNS turns' time)."""
        assert self.rate is not None
        return max(0.25, CLIMB_TURNS / self.rate)

    def _probe_after(self) -> float:
        """Seconds without a push-back before the rate rises: 10 turns' time, half a second at
        least (a pace PROBE above the server's meets a 429 every 1 / (rate x PROBE) s)."""
        assert self.rate is not None
        return max(0.5, 10.0 / self.rate)

    def _read(self, ticket: float, reading: RateReading, tokens_needed: int, now: float) -> None:
        """Rate and bucket copy from a reply's headers, when they tell and are the freshest."""
        bucket = header_limit(reading, tokens_needed)
        if bucket is None or ticket < self._synced:
            return
        self._synced = ticket
        rate, capacity, remaining = bucket
        # Each reading is a lower bound (its whole counts hide up to one request): the highest of
        # the last HORIZON seconds for the same bucket (requests or tokens, whichever binds now) is
        # the closest, and a server that lowers its limit is followed.
        self._header_rates.append((now, rate, capacity))
        while self._header_rates[0][0] < now - HORIZON:
            self._header_rates.popleft()
        self._header_rate = max(bound for _, bound, deep in self._header_rates if deep == capacity)
        self._follow(now)
        self._climbing = False  # the headers tell the rate: no guess to climb from
        assert self.rate is not None
        self.capacity = max(1.0, capacity)
        # What is left now: what the server had after this request (its whole count: up to one
        # less than it had, a margin for the jitter of arrivals), refilled since, less what was
        # sent after it (the server counts those too).
        sent_after = len(self._sends) - bisect.bisect_right(self._sends, ticket)
        level = min(self.capacity, remaining + self.rate * (now - ticket)) - sent_after
        committed = now + (self.capacity - level) / self.rate
        # The turns already given (senders waiting for their time) stay given.
        self._tat += committed - self._committed
        self._committed = committed

    def _follow(self, now: float) -> bool:
        """Set the rate to what the server was seen to allow: its headers' rate, or a little more
        than its push-backs prove, whichever is higher; False when neither tells yet."""
        bound = self.evidence.rate_bound(now)
        target = max(self._header_rate, bound * (1 + PROBE) if bound else 0.0)
        if not target:
            return False
        self._set_rate(target, now)
        return True

    def _set_rate(self, rate: float, now: float, *, force: bool = False) -> None:
        rate = max(rate, MIN_RATE)
        if self.rate is not None and not force and abs(rate / self.rate - 1) < 0.02:
            return
        if self.rate is None:
            self._committed = max(now, self.paused_until)
        self.rate = rate
        self._changed = now
        self._redraw()
        self._room.set()

    def _pause(self, now: float, pause: float) -> None:
        if now + pause > self.paused_until:
            self.paused_until = now + pause
            self._redraw()

    def _redraw(self) -> None:
        """Void the turns given to senders still waiting: they queue again."""
        self._tat = self._committed
        self._generation += 1
        if self._redrawn is not None:
            if not self._redrawn.done():
                self._redrawn.set_result(None)
            self._redrawn = None
