"""Pacing the request rate to a judge's rate limit: the `Pacer`, and the parsers for the rate-limit
headers providers send.

Limiting concurrency alone cannot respect a rate limit: against a fast server even one request
in flight can exceed 20 requests a second. So the senders also take turns on a clock: before each
exchange `Pacer.turn()` hands out a send time, `1 / rate` seconds after the last one.

    rate        unset (no pacing) until the server first pushes back, then AIMD:
                  a 429 (or a reply saying nothing is left)  rate *= DECREASE   (once per burst)
                  each success while the pace was what held senders back   rate += INCREASE
    pause       every sender waits until then: set by a 429's Retry-After, or by a reply whose
                headers say nothing is left until their reset

The first rate is what the server allowed in the last second of sending, measured once the first
pause is over (a 429 comes back faster than an answer, so at the first 429 the answers of its
burst may still be on their way), or comes from its own headers (limit / reset) when it sent them.
A decrease counts once per burst: only a reply to a request sent after the last decrease lowers
the rate again (`turn` returns the epoch it was sent in). A pause does not lose throughput against
a token bucket: the bucket refills while nobody sends, and the senders then go on at the paced
rate.

Headers (`openai_reading`, `anthropic_reading` build a `RateReading` from them):

    OpenAI      x-ratelimit-{limit,remaining,reset}-{requests,tokens}   reset: "1s", "6m0s", "20ms"
    Anthropic   anthropic-ratelimit-{requests,tokens}-{limit,remaining,reset}
                (input-tokens when tokens is absent)                     reset: RFC 3339 time
"""

from __future__ import annotations

import asyncio
import re
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime

from ..core.ratelimit import RateReading

Sleep = Callable[[float], Awaitable[None]]
Clock = Callable[[], float]

#: The rate after a push-back, as a share of the rate before it.
DECREASE = 0.85
#: Requests per second added to the rate by each success (so the rate grows by about 10% a second
#: of the rate itself: a fast judge recovers as quickly, relative to its limit, as a slow one).
INCREASE = 0.1
#: Seconds of successes counted for the first rate, when the server gave no limit of its own.
WINDOW = 1.0
#: The longest pause a header may impose (a daily budget's reset would otherwise stop a run for
#: hours on one reading; a 429 then comes with its own Retry-After).
MAX_PAUSE = 60.0

_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(h|ms|m|s|us|µs|ns)")
_UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}


def parse_duration(text: str | None) -> float | None:
    """Seconds in a duration as OpenAI writes its resets ("1s", "6m0s", "20ms", "1h2m3.5s"), or a
    bare number of seconds; None when absent or unreadable."""
    if text is None:
        return None
    text = text.strip()
    try:
        value = float(text)
    except ValueError:
        parts = _DURATION_PART.findall(text)
        if not parts or "".join(number + unit for number, unit in parts) != text:
            return None
        value = sum(float(number) * _UNIT_SECONDS[unit] for number, unit in parts)
    return value if value >= 0 else None


def seconds_until(text: str | None, *, now: float | None = None) -> float | None:
    """Seconds from `now` (default: the wall clock) until an RFC 3339 time such as
    "2026-01-01T00:00:01Z" (Anthropic's resets), 0 when it is past; None when unreadable."""
    if text is None:
        return None
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)


def _count(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        return max(0, int(float(text)))
    except ValueError:
        return None


def openai_reading(headers: Mapping[str, str]) -> RateReading | None:
    """The rate-limit state in a Chat Completions reply's headers; None when it sent none."""
    requests = headers.get("x-ratelimit-remaining-requests")
    tokens = headers.get("x-ratelimit-remaining-tokens")
    if requests is None and tokens is None:
        return None
    return RateReading(
        requests_limit=_count(headers.get("x-ratelimit-limit-requests")),
        requests_remaining=_count(requests),
        requests_reset=parse_duration(headers.get("x-ratelimit-reset-requests")),
        tokens_limit=_count(headers.get("x-ratelimit-limit-tokens")),
        tokens_remaining=_count(tokens),
        tokens_reset=parse_duration(headers.get("x-ratelimit-reset-tokens")),
    )


def anthropic_reading(headers: Mapping[str, str], *, now: float | None = None) -> RateReading | None:
    """The rate-limit state in a Messages API reply's headers; None when it sent none. The tokens
    pair is `anthropic-ratelimit-tokens-*`, else the input-tokens one."""
    requests = headers.get("anthropic-ratelimit-requests-remaining")
    kind = "tokens"
    tokens = headers.get("anthropic-ratelimit-tokens-remaining")
    if tokens is None:
        kind = "input-tokens"
        tokens = headers.get("anthropic-ratelimit-input-tokens-remaining")
    if requests is None and tokens is None:
        return None
    return RateReading(
        requests_limit=_count(headers.get("anthropic-ratelimit-requests-limit")),
        requests_remaining=_count(requests),
        requests_reset=seconds_until(headers.get("anthropic-ratelimit-requests-reset"), now=now),
        tokens_limit=_count(headers.get(f"anthropic-ratelimit-{kind}-limit")),
        tokens_remaining=_count(tokens),
        tokens_reset=seconds_until(headers.get(f"anthropic-ratelimit-{kind}-reset"), now=now),
    )


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


class Pacer:
    """Send times for every sender of one judge: the module docstring's rate and pause.

    `turn()` waits for this sender's time and returns the epoch it was sent in; `on_success` and
    `on_push_back` take what came back. The clock and the sleep are injectable for tests."""

    def __init__(self, *, sleep: Sleep = asyncio.sleep, clock: Clock = time.monotonic) -> None:
        self.sleep = sleep
        self.clock = clock
        #: Requests per second, or None while the server has not pushed back yet.
        self.rate: float | None = None
        #: No sender sends before this time (the clock's).
        self.paused_until = 0.0
        #: Raised by each decrease; a push-back to a request sent in an older epoch is not counted.
        self.epoch = 0
        self._next = 0.0  # the next free send time
        self._generation = 0  # raised when the schedule is redrawn (a pause, a new rate)
        self._bound = False  # whether the last turn had to wait for its time
        self._recent: deque[float] = deque(maxlen=4096)  # success times, for the first rate
        self._paused = 0.0  # seconds paused while no rate was known (nobody sent then)
        self._measure = False  # a push-back came with no rate known: measure one after the pause

    @property
    def idle(self) -> bool:
        """True when a sender may go at once without asking (no rate yet, no pause)."""
        return self.rate is None and not self._measure and self.paused_until <= self.clock()

    async def turn(self) -> int:
        """Wait until this sender may send; the epoch to report its reply's push-back with."""
        while True:
            now = self.clock()
            if now < self.paused_until:
                await self.sleep(self.paused_until - now)
                continue
            if self.rate is None:
                if not self._measure:
                    return self.epoch
                self._first_rate(now)
                if self.rate is None:
                    return self.epoch
            slot = max(now, self._next)
            self._next = slot + 1.0 / self.rate
            self._bound = slot > now
            if not self._bound:
                return self.epoch
            generation = self._generation
            await self.sleep(slot - now)
            if generation == self._generation:
                return self.epoch
            # The schedule was redrawn while this sender waited (a pause, a lower rate): its time
            # is void, it queues again.

    def on_success(
        self, epoch: int | None = None, reading: RateReading | None = None, tokens_needed: int = 0
    ) -> None:
        """A reply came (to a request sent in `epoch`): raise the rate while it is what holds
        senders back; a reading that says nothing is left is a push-back, with a pause until its
        reset."""
        now = self.clock()
        self._recent.append(now)
        if self.rate is not None and self._bound:
            self.rate += INCREASE
        if reading is not None:
            wait = exhausted(reading, tokens_needed)
            if wait is not None:
                self.on_push_back(epoch, pause=wait, reading=reading)

    def on_push_back(self, epoch: int | None, *, pause: float, reading: RateReading | None = None) -> None:
        """The server said "slow down" (a 429, or nothing left): every sender pauses for `pause`
        seconds, and the rate falls unless this request was sent before the last decrease."""
        now = self.clock()
        if now + pause > self.paused_until:
            if self.rate is None:
                self._paused += now + pause - max(now, self.paused_until)
            self.paused_until = now + pause
            self._redraw(now)
        if epoch is not None and epoch != self.epoch:
            return
        if self.rate is not None:
            self.rate = max(self.rate * DECREASE, 0.01)
        else:
            hint = refill_rate(reading)
            if hint is None:
                # The replies that show what the server allowed may still be on their way (a
                # 429 comes back faster than an answer): the first rate is measured when the
                # pause is over.
                self._measure = True
                return
            self.rate = max(hint, 0.01)
        self.epoch += 1
        self._redraw(now)

    def _first_rate(self, now: float) -> None:
        """The first rate, from the successes a second over the last WINDOW seconds of sending
        (the time paused is added to the window: nobody sent then), less a share; none while no
        success was seen."""
        since = now - WINDOW - min(self._paused, MAX_PAUSE)
        allowed = sum(1 for t in self._recent if t > since) / WINDOW
        self._measure = False
        if allowed:
            self.rate = allowed * DECREASE
            self.epoch += 1
            self._redraw(now)

    def _redraw(self, now: float) -> None:
        self._next = max(now, self.paused_until)
        self._generation += 1
