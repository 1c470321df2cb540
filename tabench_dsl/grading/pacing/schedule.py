"""The turns a judge's senders take: send times drawn on a clock from the rate, the pause and the
phase the `pacer.Pacer` sets (`Schedule`; the pacer owns one and tells it what it decided).

    no rate yet     the slow start: at most `window` requests in flight, their sends spread over
                    the round trip (`evidence.latency`); the others wait for room
    a rate          turns from a copy of the server's token bucket (GCRA: `rate` a second,
                    `capacity` deep); a turn given is void when the schedule is redrawn (a new
                    rate, a pause), and its sender queues again at once
    one deep        (`Phase.ONE_DEEP`) each turn comes a turn after the last request actually
                    sent and not refused (a worker's own send time where it reported one,
                    `sent_at`): that bucket holds nothing a late send leaves behind
    climbing        (`Phase.CLIMBING`) a waiting sender wakes every CLIMB_TICK for the climb's
                    next step (`on_tick`): at a low first rate nobody else may be there to take it
    a pause         no sender sends before `paused_until`

Its clock never goes back (`SteadyClock`): a ticket is a time on it.

A turn is the ticket `turn()` returns: the time the request is sent, which its outcome names.
"""

from __future__ import annotations

import asyncio
import enum
import math
import time
from collections.abc import Awaitable, Callable

from .evidence import RateEvidence, SendLog
from .settings import CLIMB_TICK, MIN_RATE, RATE_TOLERANCE, RELAY_DELAY, SHORT_WAIT, START_WINDOW

Sleep = Callable[[float], Awaitable[None]]
Clock = Callable[[], float]


class Phase(enum.Enum):
    """What the pacer knows of the server's limit (`pacer` module docstring: the transitions)."""

    SLOW_START = "slow start"  # nothing yet: a window of requests in flight
    AWAITING = "awaiting"  # a 429 came before the answers sent with it: they set the first rate
    CLIMBING = "climbing"  # a guessed rate, climbing to the first 429, which measures the rate
    ONE_DEEP = "one deep"  # a bucket one request deep: its gap bracket (`one_deep.GapBracket`)
    FOLLOWING = "following"  # a rate measured or read: followed, probed a little above
    TOLD = "told"  # a bucket one request deep whose headers tell its rate: paced at it


class SteadyClock:
    """A clock that never goes back: a step back of the clock it reads counts as no time (the turns
    owed would otherwise wait out the step), a step forward as the time it says."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._offset = 0.0
        self._last = -math.inf

    def __call__(self) -> float:
        now = self._clock() + self._offset
        if now < self._last:
            self._offset += self._last - now
            now = self._last
        self._last = now
        return now


class Schedule:
    """Send times for every sender of one judge (module docstring). Clock and sleep: injectable."""

    def __init__(
        self,
        *,
        sleep: Sleep = asyncio.sleep,
        clock: Clock = time.monotonic,
        on_tick: Callable[[float], None] = lambda now: None,
    ) -> None:
        self.sleep = sleep
        self.clock = SteadyClock(clock)
        self.on_tick = on_tick
        self.phase = Phase.SLOW_START
        #: Requests per second, or None while no limit is known.
        self.rate: float | None = None
        #: Requests the copy of the server's bucket holds (a burst the pace allows).
        self.capacity = 1.0
        #: No sender sends before this time (the clock's).
        self.paused_until = 0.0
        #: Requests in flight allowed while no rate is known (the slow start).
        self.window: float = START_WINDOW
        self.in_flight = 0
        self.evidence = RateEvidence()
        #: Every send, and those refused.
        self.sends = SendLog()
        #: The bucket copy's theoretical arrival time (GCRA), counting only the requests sent.
        self.committed = 0.0
        #: When the rate was last set (push-backs to older sends do not stick).
        self.changed = 0.0
        self._tat = 0.0  # the same as `committed`, the turns given to waiting senders included
        self._slow_next = 0.0  # the slow start's next send time
        self._holding = 0  # slow-start senders waiting for their time, their place held
        self._generation = 0  # raised when the schedule is redrawn (a pause, a new rate)
        self._sent_late = (0.0, 0.0)  # the last ticket whose request went later, and when
        self._room = asyncio.Event()
        self._redrawn: asyncio.Future[None] | None = None  # done when the schedule is redrawn

    @property
    def idle(self) -> bool:
        """True when a sender may go at once (`start()`) without waiting for a turn."""
        now = self.clock()
        return (
            self.rate is None
            and self.in_flight + self._holding < self.window
            and self.paused_until <= now
            and self._slow_next <= now
        )

    def start(self) -> float:
        """A send now, without waiting: its ticket."""
        now = self.clock()
        if self.rate is None:
            self._slow_next = max(self._slow_next, now) + self._slow_gap()
        return self._send(now)

    def _send(self, now: float) -> float:
        self.in_flight += 1
        if self.rate is not None:
            self.committed = max(self.committed, now) + 1.0 / self.rate
        self.sends.send(now)
        return now

    async def turn(self) -> float:
        """Wait until this sender may send; its ticket."""
        if self.idle:
            return self.start()
        while True:
            now = self.clock()
            if now < self.paused_until:
                await self.sleep(self.paused_until - now)
                continue
            if self.rate is None:
                if self.in_flight + self._holding < self.window:
                    ticket = await self._slow_start_turn(now)
                    if ticket is not None:
                        return ticket
                    continue
                self._room.clear()
                await self._room.wait()
                continue
            interval = 1.0 / self.rate
            slot = max(now, self._tat - (self.capacity - 1.0) * interval)
            self._tat = max(self._tat, now) + interval
            if slot <= now or await self._wait_for(slot):
                if self.phase is Phase.ONE_DEEP:  # no coroutine a turn otherwise
                    await self._one_deep_spacing()
                return self.start()
        # The schedule was redrawn while this sender waited (a pause, a new rate): its time is
        # void, it queues again at once (not when its old time comes: a slow first rate would
        # otherwise go on spacing every waiting sender for one more turn each).

    async def _wait_for(self, slot: float) -> bool:
        """Wait until `slot`; False when the schedule was redrawn meanwhile (module docstring:
        while climbing, a tick every CLIMB_TICK)."""
        generation = self._generation
        while True:
            now = self.clock()
            if now >= slot:
                return True
            climbing = self.phase is Phase.CLIMBING
            await self._sleep_unless_redrawn(min(slot - now, CLIMB_TICK) if climbing else slot - now)
            if climbing:
                self.on_tick(self.clock())
            if generation != self._generation:
                return False

    async def _slow_start_turn(self, now: float) -> float | None:
        """A send in the slow start's window, spread over the round trip (the window's sends at
        once would all meet a bucket that empties among them before its first 429 is back);
        None when the window closed or a rate was set while it waited (the sender queues again)."""
        slot = max(now, self._slow_next)
        self._slow_next = slot + self._slow_gap()
        if slot > now:
            self._holding += 1  # its place in the window is held while it waits
            try:
                await self.sleep(slot - now)
            finally:
                self._holding -= 1
            if self.rate is not None or self.in_flight >= self.window:
                return None
        return self._send(self.clock())

    def _slow_gap(self) -> float:
        """Seconds between the slow start's sends: a round trip over the window."""
        return self.evidence.latency / max(1, self.window)

    async def _sleep_unless_redrawn(self, seconds: float) -> None:
        """Sleep `seconds`, or less when the schedule is redrawn meanwhile (SHORT_WAIT)."""
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

    async def _one_deep_spacing(self) -> None:
        """A turn after the last request sent (module docstring): the schedule does not catch up
        after a late send (a sender woken late would otherwise take the next turn less than a
        turn after it, and meet an empty bucket)."""
        while self.phase is Phase.ONE_DEEP and self.rate is not None:
            last = self.last_sent()  # a refused request took nothing
            wait = -1.0 if last is None else last + 1.0 / self.rate - self.clock()
            if wait <= 0:
                return
            await self.sleep(wait)

    def sent_at(self, ticket: float, sent: float) -> None:
        """The request on `ticket` was sent at `sent`, later than the ticket (a turn relayed to a
        worker process reaches it through a pipe). Ignored past RELAY_DELAY."""
        if 0.0 < sent - ticket <= RELAY_DELAY and ticket >= self._sent_late[0]:
            self._sent_late = (ticket, sent)

    def reached_late(self, ticket: float, late: float) -> None:
        """The request on `ticket` most likely reached the server `late` seconds after it was sent
        (one deep: the next turn counts from then)."""
        if late > 0.0 and ticket >= self._sent_late[0]:
            earlier = self._sent_late[1] if ticket == self._sent_late[0] else 0.0
            self._sent_late = (ticket, max(earlier, ticket + late))

    def last_sent(self) -> float | None:
        """When the last request the server took or may yet take (not refused) was sent."""
        last = self.sends.last_taken()
        return self._sent_late[1] if last is not None and last == self._sent_late[0] else last

    def set_rate(self, rate: float, now: float, *, force: bool = False) -> None:
        """Pace at `rate` from `now` (not when within RATE_TOLERANCE of the current one, unless
        `force`): the turns still owed are repaid at it; one deep, a turn after the last taken."""
        rate = max(rate, MIN_RATE)
        if self.rate is not None and not force and abs(rate / self.rate - 1) < RATE_TOLERANCE:
            return
        last = self.last_sent() if self.phase is Phase.ONE_DEEP else None
        if last is not None:
            # One deep, the bucket owes nothing but the turn after the last request it took.
            self.committed = max(now, last + 1.0 / rate)
        elif self.rate is None:
            self.committed = max(now, self.paused_until)
        elif self.committed > now:
            # The requests the bucket copy owes stay owed, repaid at the new rate (a faster rate
            # must not wait out the last turn given at the slower one).
            self.committed = now + (self.committed - now) * self.rate / rate
        self.rate = rate
        self.changed = now
        self.redraw()
        self._room.set()

    def pause(self, now: float, pause: float) -> None:
        """No sender sends for `pause` seconds from `now`."""
        if now + pause > self.paused_until:
            self.paused_until = now + pause
            self.redraw()

    def redraw(self) -> None:
        """Void the turns given to senders still waiting: they queue again (from `committed`)."""
        self._tat = self.committed
        self._generation += 1
        if self._redrawn is not None:
            if not self._redrawn.done():
                self._redrawn.set_result(None)
            self._redrawn = None

    def shift(self, committed: float) -> None:
        """The bucket copy owes turns up to `committed` (a reading told): the turns already given
        to waiting senders stay given, moved by as much."""
        self._tat += committed - self.committed
        self.committed = committed

    def reopen(self) -> None:
        """The slow start again: its window open to the waiting senders."""
        self.window = max(self.window, START_WINDOW)
        self._room.set()

    def done(self) -> None:
        """A request's outcome came back: it is in flight no more."""
        self.in_flight = max(0, self.in_flight - 1)
        if self.rate is None:
            self._room.set()
