"""The turns a judge's senders take (`Turns`, which `pacing.Pacer` extends with what sets the rate):
send times drawn on a clock from the rate and the pause the pacer sets.

    no rate yet     the slow start: at most `window` requests in flight, their sends spread over
                    the round trip (`evidence.latency`); the others wait for room
    a rate          turns from a copy of the server's token bucket (GCRA: `rate` a second,
                    `capacity` deep); a turn given is void when the schedule is redrawn (a new
                    rate, a pause), and its sender queues again at once
    one deep        a bucket one request deep, known by its 429s alone (`_spaced_by_sends`):
                    each turn comes a turn after the last request actually sent and not refused
                    (`_last_sent`: a worker's own send time where it reported one, `sent_at`)
    a pause         no sender sends before `paused_until`

A turn is the ticket `turn()` returns (or `start()`, at once, when `idle`): the time the request
is sent, which its outcome names. What a subclass decides (the rate, pauses, the climb's steps)
reaches the turns through `_set_rate`, `_pause`, `_redraw` and the hooks `_climbing`,
`_climb_tick`, `_spaced_by_sends` and `_one_deep_found`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from .rate_climb import CLIMB_TICK
from .rate_evidence import RateEvidence, SendLog

Sleep = Callable[[float], Awaitable[None]]
Clock = Callable[[], float]

#: Requests in flight before the first reply, while no limit is known (the slow start).
START_WINDOW = 2
#: Waits for a turn shorter than this (seconds) are not cut short when the schedule is redrawn.
SHORT_WAIT = 0.1
#: The slowest pace, requests a second.
MIN_RATE = 0.01
#: The longest a request sent on a ticket may follow it (a turn relayed to a `--workers` process):
#: a send time reported later than that is not taken for it (`Turns.sent_at`).
RELAY_DELAY = 0.05


class Turns:
    """Send times for every sender of one judge (module docstring). Clock and sleep: injectable."""

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
        self.window: float = START_WINDOW
        self.in_flight = 0
        self.evidence = RateEvidence()
        self._slow_next = 0.0  # the slow start's next send time
        self._holding = 0  # slow-start senders waiting for their time, their place held
        self._tat = 0.0  # the bucket copy's theoretical arrival time (GCRA), turns given included
        self._committed = 0.0  # the same, counting only the requests actually sent
        self._generation = 0  # raised when the schedule is redrawn (a pause, a new rate)
        self._sends = SendLog()  # every send, and those refused
        self._sent_late = (0.0, 0.0)  # the last ticket whose request went later, and when
        self._changed = 0.0  # when the rate was last set (push-backs to older sends do not stick)
        self._room = asyncio.Event()
        self._redrawn: asyncio.Future[None] | None = None  # done when the schedule is redrawn

    # -- what a subclass tells the turns (defaults: no climb, no bucket one request deep) ----------

    @property
    def _climbing(self) -> bool:
        """True while a waiting sender should wake every CLIMB_TICK for `_climb_tick`."""
        return False

    def _climb_tick(self, now: float) -> None:
        """The rate's next step by `now`, while `_climbing`."""

    @property
    def _spaced_by_sends(self) -> bool:
        """True when each turn must come a turn after the last request sent (`_one_deep_spacing`)."""
        return False

    @property
    def _one_deep_found(self) -> bool:
        """True when a new rate counts from the last request taken, not from the turns owed."""
        return False

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
            self._committed = max(self._committed, now) + 1.0 / self.rate
        self._sends.send(now)
        return now

    async def turn(self) -> float:
        """Wait until this sender may send; its ticket."""
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
                if self._spaced_by_sends:  # no coroutine a turn where no bucket was found one deep
                    await self._one_deep_spacing()
                return self.start()
        # The schedule was redrawn while this sender waited (a pause, a new rate): its time
        # is void, it queues again at once (not when its old time comes: a slow first rate
        # would otherwise go on spacing every waiting sender for one more turn each).

    async def _wait_for(self, slot: float) -> bool:
        """Wait until `slot`; False when the schedule was redrawn meanwhile. While the rate climbs,
        the waiting sender wakes every CLIMB_TICK to take the climb's next step (at a low first
        rate nobody else may be there to take it)."""
        generation = self._generation
        while True:
            now = self.clock()
            if now >= slot:
                return True
            wait = min(slot - now, CLIMB_TICK) if self._climbing else slot - now
            await self._sleep_unless_redrawn(wait)
            if self._climbing:
                self._climb_tick(self.clock())
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

    async def _one_deep_spacing(self) -> None:
        """With `_spaced_by_sends` (a bucket one request deep), a turn after the last request sent:
        that bucket holds nothing a late send leaves behind, so the schedule does not catch up
        after one (a sender woken late would otherwise take the next turn less than a turn after
        it, and meet an empty bucket)."""
        while self._spaced_by_sends and self.rate is not None:
            last = self._last_sent()  # a refused request took nothing
            wait = -1.0 if last is None else last + 1.0 / self.rate - self.clock()
            if wait <= 0:
                return
            await self.sleep(wait)

    def sent_at(self, ticket: float, sent: float) -> None:
        """The request on `ticket` was sent at `sent`, later than the ticket (a turn relayed to a
        worker process reaches it through a pipe): a bucket one request deep is paced from when
        it was sent (`_last_sent`). Ignored past RELAY_DELAY (not the same clock, or no relay)."""
        if 0.0 < sent - ticket <= RELAY_DELAY and ticket >= self._sent_late[0]:
            self._sent_late = (ticket, sent)

    def _last_sent(self) -> float | None:
        """When the last request the server took or may yet take (not refused) was sent."""
        last = self._sends.last_taken()
        return self._sent_late[1] if last is not None and last == self._sent_late[0] else last

    def _set_rate(self, rate: float, now: float, *, force: bool = False) -> None:
        rate = max(rate, MIN_RATE)
        if self.rate is not None and not force and abs(rate / self.rate - 1) < 0.02:
            return
        last = self._last_sent() if self._one_deep_found else None
        if self.rate is None:
            self._committed = max(now, self.paused_until)
        elif last is not None:
            # One deep, the bucket owes nothing but the turn after the last request it took.
            self._committed = max(now, last + 1.0 / rate)
        elif self._committed > now:
            # The requests the bucket copy owes stay owed, repaid at the new rate (a faster rate
            # must not wait out the last turn given at the slower one).
            self._committed = now + (self._committed - now) * self.rate / rate
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

    def _done(self) -> None:
        self.in_flight = max(0, self.in_flight - 1)
        if self.rate is None:
            self._room.set()
