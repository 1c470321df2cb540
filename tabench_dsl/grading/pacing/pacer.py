"""The `Pacer`: one state machine for every sender of one judge, from what the server said to the
rate its `schedule.Schedule` paces at. Its phases (`Phase`), and what moves it from one to another:

    SLOW_START  no limit known: a window of requests in flight, START_WINDOW at first, SLOW_GROWTH
                more a success.  A 429 ->
                  AWAITING      while answers sent before it are on their way (nobody sends);
                  CLIMBING      a bucket that held two or more: the climb starts from what got
                                through in the second before the 429;
                  ONE_DEEP      a bucket that held one (the slow start's second was refused);
                  (itself)      nothing got through: every sender waits out the Retry-After.
    AWAITING    the last answer on its way back: as SLOW_START's 429, from what got through.
    CLIMBING    the rate climbs (`climb.Climb`) until a 429, which measures it -> FOLLOWING.
    ONE_DEEP    turns a turn after the last request taken, the pace from the gaps it answered and
                refused (`one_deep.GapBracket`); stays.
    FOLLOWING   the rate is what the server was seen to allow, a little more (1 + PROBE): from
                its headers (a lower bound), or from the successes sent between two 429s
                (`evidence`). A while without a 429 raises it by PROBE, each rise in a row by twice
                the last; a 429 alone in a long while eases it off by 2 x PROBE at most.
    TOLD        a bucket one request deep whose headers tell its rate (its reset): paced at that,
                never above, each turn drawn from the reset of the reply before.
    any         a reply whose headers tell the bucket -> FOLLOWING or TOLD. STUCK 429s in a row to
                requests sent at the current rate are a quota, not a bucket: every sender waits
                out the Retry-After and the rate falls by DECREASE (the pause: `paused_until`).

A 429's request queues again for a turn; the others go on at the new rate. Each outcome names its
request by the ticket `turn()` (or `start()`) returned: the time it was sent. Every constant is in
`settings`, with why it has its value.
"""

from __future__ import annotations

import asyncio
import bisect
import time
from typing import Protocol

from ...core.ratelimit import RateReading
from .climb import Climb
from .evidence import RateEvidence
from .headers import HeaderRates, exhausted, header_limit, one_deep_wait
from .lateness import ReplyLateness
from .one_deep import GapBracket
from .schedule import Clock, Phase, Schedule, Sleep
from .settings import (
    ARRIVAL_JITTER,
    DECREASE,
    FIRST_TURN,
    ISOLATED,
    LATE_SHARE,
    MAX_RISE,
    MIN_PROBE_WAIT,
    PROBE,
    PROBE_TURNS,
    SLOW_GROWTH,
    STUCK,
)


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


class Pacer:
    """Send times for every sender of one judge (module docstring). `turn()` waits for this
    sender's time and returns its ticket (`start()` when `idle`, at once); each ticket ends in
    `on_success`, `on_push_back` or `on_fault`. Clock and sleep: injectable."""

    def __init__(
        self, *, sleep: Sleep = asyncio.sleep, clock: Clock = time.monotonic, jitter: float = ARRIVAL_JITTER
    ) -> None:
        self.schedule = Schedule(sleep=sleep, clock=clock, on_tick=self._climb_tick)
        self.clock = self.schedule.clock
        #: Seconds a request may reach the server early, against its turn (`one_deep`).
        self.jitter = jitter
        self._climb: Climb | None = None  # CLIMBING
        self._bracket: GapBracket | None = None  # ONE_DEEP
        self._late = ReplyLateness()  # ONE_DEEP: when each request most likely arrived
        self._first_limited = 0.0  # send time of the slow start's last push-back
        self._first_back = 0.0  # when it came back
        self._synced = 0.0  # send time of the request whose reading last set the bucket copy
        self._header_rate = 0.0  # the rate the headers prove
        self._header_rates = HeaderRates()
        self._limited_at = 0.0  # when the last push-back came
        self._limited_sent = 0.0  # send time of the last push-back
        self._stuck = 0  # push-backs in a row to requests sent at the current rate
        self._rises = 1  # the next rise without a push-back, in PROBEs
        self._raised_from = 0.0  # the rate before the last rise, until a push-back

    # -- what the senders see ------------------------------------------------------------------

    @property
    def phase(self) -> Phase:
        return self.schedule.phase

    @property
    def rate(self) -> float | None:
        """Requests per second, or None while no limit is known."""
        return self.schedule.rate

    @property
    def capacity(self) -> float:
        return self.schedule.capacity

    @property
    def paused_until(self) -> float:
        return self.schedule.paused_until

    @property
    def window(self) -> float:
        return self.schedule.window

    @property
    def in_flight(self) -> int:
        return self.schedule.in_flight

    @property
    def evidence(self) -> RateEvidence:
        return self.schedule.evidence

    @property
    def idle(self) -> bool:
        return self.schedule.idle

    def start(self) -> float:
        return self.schedule.start()

    async def turn(self) -> float:
        return await self.schedule.turn()

    def sent_at(self, ticket: float, sent: float) -> None:
        """The request on `ticket` was sent at `sent` (a worker's relayed turn: `Schedule.sent_at`)."""
        self.schedule.sent_at(ticket, sent)

    # -- what came back ------------------------------------------------------------------------

    def on_success(self, ticket: float, reading: RateReading | None = None, tokens_needed: int = 0) -> None:
        """A reply came to the request sent at `ticket` (module docstring)."""
        now = self.clock()
        schedule = self.schedule
        schedule.done()
        schedule.evidence.success(ticket, now)
        if ticket >= schedule.changed or self.phase is Phase.ONE_DEEP:  # (one deep, any answer)
            self._stuck = 0
        if self.phase is Phase.SLOW_START:
            schedule.window += SLOW_GROWTH
        elif self.phase is Phase.AWAITING:
            self._first_guess(now)
        if reading is not None:
            self._read(ticket, reading, tokens_needed, now)
            # Nothing left, and no copy of the bucket to pace by yet: wait for the reset.
            wait = exhausted(reading, tokens_needed) if schedule.rate is None else None
            if wait is not None:
                schedule.pause(now, wait)
        if self.phase is Phase.CLIMBING:
            self._climb_tick(now)
        elif self.phase is Phase.ONE_DEEP:
            self._one_deep_answered(ticket, now)
        elif self.phase is Phase.FOLLOWING:
            self._following_answered(now)

    def on_push_back(self, ticket: float, *, pause: float, reading: RateReading | None = None) -> None:
        """The server said "slow down" (a 429) to the request sent at `ticket`; `pause` is how long
        every sender waits should the pacer have nothing better to go by (module docstring)."""
        now = self.clock()
        schedule = self.schedule
        schedule.done()
        schedule.evidence.push_back(ticket, now)
        schedule.sends.refuse(ticket)
        self._limited_at = now
        self._rises = 1
        if reading is not None:
            self._read(ticket, reading, 0, now, taken=False)
            if self.phase is Phase.TOLD:
                self._told(ticket, reading, now, answered=False)
        if self.phase is Phase.ONE_DEEP:
            at_pace = ticket >= schedule.changed  # sent at the current pace (before it moves)
            self._one_deep_refused(ticket, now)
        else:
            if self.phase is Phase.CLIMBING:
                self._climb_push_back(ticket, now)
            elif self.phase in (Phase.FOLLOWING, Phase.TOLD):
                self._follow(now, self._eased(ticket))
            else:
                self._first_push_back(ticket, now, pause)
            at_pace = schedule.rate is not None and ticket >= schedule.changed
        if at_pace and schedule.rate is not None:
            self._stuck_push_back(now, pause)

    def on_fault(self, ticket: float) -> None:
        """The request sent at `ticket` ended otherwise (a fault, a timeout, cancelled)."""
        self.schedule.done()
        if self.phase is Phase.AWAITING:
            self._first_guess(self.clock())  # it may have been the last one on its way

    # -- the transitions -----------------------------------------------------------------------

    def _first_push_back(self, ticket: float, now: float, pause: float) -> None:
        """SLOW_START's or AWAITING's 429 (module docstring)."""
        self._eased(ticket)
        if self._follow(now):  # two push-backs far enough apart already measure the rate
            self.schedule.phase = Phase.FOLLOWING
        elif self.in_flight:
            # A 429 comes back faster than an answer: the answers on their way show what got
            # through. Nobody else sends until they are back.
            self.schedule.phase = Phase.AWAITING
            self._first_limited = max(self._first_limited, ticket)
            self._first_back = now
            self.schedule.window = 0
        elif self.evidence.recent_rate(now) is not None:
            self._first_limited, self._first_back = ticket, now
            self._first_guess(now)
        else:  # nothing got through yet: nothing to pace by
            self.schedule.phase = Phase.SLOW_START
            self.schedule.reopen()
            self.schedule.pause(now, pause)

    def _first_guess(self, now: float) -> None:
        """The first rate once the slow start's answers are back (module docstring); the bucket is
        empty, so its first turn is a turn away (FIRST_TURN at most)."""
        schedule = self.schedule
        if schedule.in_flight:
            return  # more answers on their way
        since = self._first_limited
        # What got through before the 429 came back: requests sent at once reach the server in
        # any order, and one sent a moment after the refused one may have been let through first.
        guess = self.evidence.recent_rate(max(since, self._first_back))
        if guess is None:  # none of them got through: the slow start again
            schedule.phase = Phase.SLOW_START
            schedule.reopen()
            return
        depth = bisect.bisect_right(self.evidence.ok, since)
        if depth < 2:
            schedule.phase = Phase.ONE_DEEP
            self._bracket = GapBracket(jitter=self.jitter)
            schedule.set_rate(1.0 / self._bracket.gap(), now, force=True)
            return
        schedule.phase = Phase.CLIMBING
        schedule.set_rate(guess, now)
        schedule.committed = now + min(1.0 / guess, FIRST_TURN)
        schedule.redraw()
        self._climb = Climb(since=since, began=now, depth=depth)

    def _climb_tick(self, now: float) -> None:
        """CLIMBING: the climb's rate by `now` (`Climb.tick`)."""
        schedule = self.schedule
        if self._climb is None or schedule.rate is None or self.phase is not Phase.CLIMBING:
            return
        last_send = schedule.sends.sent[-1] if schedule.sends.sent else None
        rate = self._climb.tick(now, schedule.rate, schedule.changed, last_send, schedule.evidence)
        if rate is not None:
            schedule.set_rate(rate, now, force=True)

    def _climb_push_back(self, ticket: float, now: float) -> None:
        """CLIMBING's 429: the climb goes on (from a new start, or lower) or ends with the rate it
        measured, a little more -> FOLLOWING (`Climb.push_back`)."""
        schedule = self.schedule
        assert self._climb is not None and schedule.rate is not None
        rate, going = self._climb.push_back(ticket, now, schedule.rate, schedule.sends.sent, self.evidence)
        if not going:
            self._climb, rate = None, rate * (1 + PROBE)
            schedule.phase = Phase.FOLLOWING
        if rate != schedule.rate:
            schedule.set_rate(rate, now, force=True)

    def _one_deep_answered(self, ticket: float, now: float) -> None:
        """ONE_DEEP's answer: its gap proves the rate at least that (`GapBracket.answer`). A reply
        slower than the fastest most likely reached the server late (a loaded event loop sends
        late): its gap, and the next turn, count from when it most likely arrived (up to LATE_SHARE
        of a turn later), or the next request would meet a bucket it only just emptied."""
        assert self._bracket is not None and self.schedule.rate is not None
        most = max(0.0, now - ticket - self.evidence.fastest)
        late = self._late.answered(ticket, most, LATE_SHARE / self.schedule.rate)
        self.schedule.reached_late(ticket, late)
        gap = self._gap_before(ticket)
        if gap is not None:
            self._bracket.answer(None if self._paused_about(ticket, now) else gap)
        self.schedule.set_rate(1.0 / self._bracket.gap(), now, force=True)

    def _one_deep_refused(self, ticket: float, now: float) -> None:
        """ONE_DEEP's 429: its gap proves the rate less (`GapBracket.refuse`); the next turn is a
        turn after the last request taken (the refused one took nothing)."""
        assert self._bracket is not None
        gap = self._gap_before(ticket)
        if gap is not None:
            self._bracket.refuse(None if self._paused_about(ticket, now) else gap)
        self.evidence.forget_push_backs(before=ticket)
        self._limited_sent = max(self._limited_sent, ticket)
        self.schedule.set_rate(1.0 / self._bracket.gap(), now, force=True)

    def _gap_before(self, ticket: float) -> float | None:
        """Seconds from the last request taken before the one sent at `ticket` to it."""
        before = self.schedule.sends.last_taken(before=ticket)
        if before is None:
            return None
        return ticket + self._late.late(ticket) - before - self._late.late(before)

    def _paused_about(self, ticket: float, now: float) -> bool:
        """True when ONE_DEEP's outcome to `ticket` tells nothing of the rate: that request or the
        one taken before it may have reached the server later than LATE_SHARE of a turn past its
        send (its reply, or its silence until `now`, is that far past the fastest round trip). A
        loaded machine pauses the client's process for 50-100 ms: what it had queued then leaves
        bunched, so the gap the server saw is anyone's guess, and a refusal read as "the limit
        fell" would step the pace down for good. The next turn counts from when the one before
        may have arrived."""
        assert self.schedule.rate is not None
        cap = LATE_SHARE / self.schedule.rate
        before = self.schedule.sends.last_taken(before=ticket)
        mine = self._late.most(ticket, 0.0)
        if before is None:
            return mine > cap
        theirs = self._late.most(before, max(0.0, now - before - self.evidence.fastest))
        if theirs > cap:
            self.schedule.reached_late(before, theirs)
        return max(mine, theirs) > cap

    def _following_answered(self, now: float) -> None:
        """FOLLOWING's answer: no push-back for a while means the pace is below the server's;
        each rise in a row is twice the last, so a pace far too slow catches up in seconds."""
        rate = self.schedule.rate
        assert rate is not None
        if now - max(self._limited_at, self.schedule.changed) > max(MIN_PROBE_WAIT, PROBE_TURNS / rate):
            self._raised_from = rate
            self.schedule.set_rate(rate * (1 + PROBE * self._rises), now, force=True)
            self._rises = min(self._rises * 2, MAX_RISE)

    def _stuck_push_back(self, now: float, pause: float) -> None:
        """One more push-back in a row to a request sent at the current rate: STUCK of them are a
        quota, not a bucket: every sender waits `pause`, and the rate falls by DECREASE."""
        rate = self.schedule.rate
        assert rate is not None
        self._stuck += 1
        if self._stuck >= STUCK:
            self._stuck = 0
            self.schedule.pause(now, pause)
            self.schedule.set_rate(rate * DECREASE, now, force=True)

    def _eased(self, ticket: float) -> float:
        """The least rate after a push-back to the request sent at `ticket` (0: none). One alone
        in a long while came as the pace just passed the server's: it eases off by 2 x PROBE, or to
        the rate before the last rise if lower, no more (the push-backs' bound, drawn mostly below
        the rate, may be far less), and the push-backs before it are forgotten."""
        rate = self.schedule.rate
        isolated = rate is not None and ticket - self._limited_sent > max(1.0, ISOLATED / rate)
        self._limited_sent = max(self._limited_sent, ticket)
        raised_from, self._raised_from = self._raised_from, 0.0
        if rate is not None and not isolated:
            # 429s close together while following the headers: their limit fell, and what they
            # proved before no longer holds.
            self._header_rates.forget()
        if not isolated or rate is None:
            return 0.0
        self.evidence.forget_push_backs(before=ticket)
        eased = rate * (1 - 2 * PROBE)
        return min(eased, raised_from) if raised_from else eased

    def _follow(self, now: float, floor: float = 0.0) -> bool:
        """Set the rate to what the server was seen to allow: its headers' rate, a little more
        than its push-backs prove, or `floor`, whichever is highest; False when none tells yet."""
        bound = self.evidence.rate_bound(now)
        target = max(self._header_rate, bound * (1 + PROBE) if bound else 0.0, floor)
        if self.phase is Phase.TOLD:
            target = self._header_rate  # a rate the headers tell exactly is not probed above
        if not target:
            return False
        self.schedule.set_rate(target, now)
        return True

    # -- the headers ---------------------------------------------------------------------------

    def _read(
        self, ticket: float, reading: RateReading, tokens_needed: int, now: float, *, taken: bool = True
    ) -> None:
        """Rate and bucket copy from a reply's headers, when they tell and are the freshest; one
        sent just before the freshest, its bucket copy only when it has less left (requests sent
        together reach the server in any order: the one sent last may have been counted first)."""
        bucket = header_limit(reading, tokens_needed, taken=taken)
        if bucket is None:
            return
        rate, capacity, remaining = bucket
        schedule = self.schedule
        if ticket < self._synced:
            # Only one sent beside the freshest (a reply slow to come back may have had many
            # requests sent after it that its count never saw: it would stall every sender).
            beside = self._synced - ticket <= self.jitter
            if beside and self.phase is Phase.FOLLOWING and schedule.rate is not None:
                committed = self._committed_after(ticket, remaining, now, taken=taken)
                if committed > schedule.committed:
                    schedule.shift(committed)
            return
        self._synced = ticket
        # One deep, read after a request it took: its reset is its rate (`header_limit`).
        exact = taken and capacity < 2
        self._header_rate = rate if exact else self._header_rates.highest(now, rate, capacity)
        schedule.phase = Phase.TOLD if exact else Phase.FOLLOWING
        self._climb = self._bracket = None  # the headers tell the rate: no guess to climb from
        self._follow(now)
        assert schedule.rate is not None
        schedule.capacity = max(1.0, capacity)
        if exact:
            self._told(ticket, reading, now, answered=True)
            return
        # The turns already given (senders waiting for their time) stay given.
        schedule.shift(self._committed_after(ticket, remaining, now, taken=taken))

    def _committed_after(self, ticket: float, remaining: float, now: float, *, taken: bool) -> float:
        """The bucket copy's arrival time from `remaining` after the request sent at `ticket`:
        what the server had after it (its whole count: up to one less than it had, a margin for
        the jitter of arrivals), refilled since, less what was sent after it and not refused (the
        server counts those too). Those sent up to `jitter` before it (or on the same clock tick)
        may have reached it later, and taken what it left: up to `remaining` of them count too."""
        sends = self.schedule.sends
        schedule = self.schedule
        assert schedule.rate is not None
        beside = sends.taken_after(ticket - self.jitter) - sends.taken_after(ticket) - (1 if taken else 0)
        taken_after = sends.taken_after(ticket) + min(max(0, beside), remaining)
        level = min(schedule.capacity, remaining + schedule.rate * (now - ticket)) - taken_after
        return now + (schedule.capacity - level) / schedule.rate

    def _told(self, ticket: float, reading: RateReading, now: float, *, answered: bool) -> None:
        """TOLD: its request is back `reset` after this one reached it (a push-back's: soon), the
        turns drawn again from then. A reply slower than the fastest most likely reached it late
        (up to a quarter turn is allowed for)."""
        wait = one_deep_wait(reading)
        schedule = self.schedule
        if wait is None or schedule.rate is None or ticket < self._synced:
            return
        self._synced = ticket
        arrived = (
            max(ticket, min(now - self.evidence.fastest, ticket + wait * LATE_SHARE)) if answered else ticket
        )
        schedule.committed = max(now, arrived + wait) + schedule.sends.taken_after(ticket) / schedule.rate
        schedule.redraw()
