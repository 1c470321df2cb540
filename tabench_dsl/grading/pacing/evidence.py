"""What a judge server allowed, learnt from when its replies were sent: a lower bound on the
rate its token bucket refills at.

A push-back (a 429) means the server's bucket was empty (less than one request left) when that
request reached it. Between two push-backs, sent at t1 and t2, the server accepted what it refilled
in between, give or take that less than one request at either end, and less what its bucket could
not hold if the senders let it fill up:

    successes sent in (t1, t2)  =  rate x (t2 - t1) +- 1 - overflow

so successes / (t2 - t1) is the rate within 1 / (t2 - t1) while the senders kept the bucket empty
(they sent a little faster than it refills), and less when they did not. Spans proving fewer than
MIN_ACCEPTED successes are used only when no longer one exists (and then at the top of their
+-1). Requests are counted by when they
were *sent* (the order the server saw them), not when their reply came: a 429 comes back faster
than an answer, so a span is drawn only once the answers sent before its second push-back have had
time to come back (twice the recent latency).
Only the last HORIZON seconds count, so a server that lowers its limit is followed.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable

from .settings import CANDIDATES, FASTEST_RISE, HORIZON, MIN_ACCEPTED, MIN_SPAN, SENDS_KEPT, SPACED


class RateEvidence:
    """Send times of successes and push-backs over the last HORIZON seconds, and what they prove
    about the server's rate (`rate_bound`, `recent_rate`)."""

    def __init__(self) -> None:
        self.ok: list[float] = []  # send times of successes, sorted
        self.limited: list[float] = []  # send times of push-backs, sorted
        #: A slowly decaying maximum of the seconds from send to a success's reply.
        self.latency = 0.0
        #: A slowly rising minimum of the same (FASTEST_RISE: a reply slower was late on its way).
        self.fastest = float("inf")
        self._fastest_at = 0.0
        self._pruned = 0.0

    def success(self, sent: float, now: float) -> None:
        """A reply came, `now`, to a request sent at `sent`."""
        _insert(self.ok, sent)
        self.latency = max(now - sent, self.latency * 0.99)
        rise = 1 + FASTEST_RISE * min(1.0, now - self._fastest_at)
        self.fastest, self._fastest_at = min(now - sent, self.fastest * rise), now
        self._prune(now)

    def push_back(self, sent: float, now: float) -> None:
        """A request sent at `sent` was pushed back."""
        _insert(self.limited, sent)
        self._prune(now)

    def rate_bound(self, now: float) -> float | None:
        """The server's rate as the push-backs show it (module docstring): the highest over spans
        proving MIN_ACCEPTED successes, else the longest span's; None while no two settled
        push-backs lie MIN_SPAN apart."""
        settled = bisect.bisect_right(self.limited, now - 2 * self.latency - 0.01) - 1
        if settled < 1:
            return None
        t2 = self.limited[settled]
        starts = bisect.bisect_right(self.limited, t2 - MIN_SPAN)
        if starts == 0:
            return None
        before_t2 = bisect.bisect_left(self.ok, t2)
        longest = before_t2 - bisect.bisect_right(self.ok, self.limited[0])
        # Few successes: the top of the +-1, so the senders err towards a 429 more (which proves
        # more) rather than towards a pace too slow to ever show the rate again.
        best = longest / (t2 - self.limited[0])
        for index in range(0, starts, max(1, starts // CANDIDATES)):
            t1 = self.limited[index]
            accepted = before_t2 - bisect.bisect_right(self.ok, t1)
            if accepted >= MIN_ACCEPTED:
                best = max(best, accepted / (t2 - t1))
        return best or None

    def success_bound(self, since: float, before: float, depth: float) -> float | None:
        """A lower bound on the rate from the successes sent in (`since`, `before`) alone, for a
        bucket about `depth` deep: the one a success took was left by the one before it, or by
        the `depth - 1` the bucket held after it, so the k successes sent from one to another `t`
        seconds later prove r >= (k - (depth - 1)) / t. The best over the last SPACED successes;
        None when none proves anything."""
        first = bisect.bisect_right(self.ok, since)
        last = bisect.bisect_left(self.ok, before) - 1
        best = 0.0
        for index in range(max(first, last - SPACED), last):
            span = self.ok[last] - self.ok[index]
            if span > 0:
                best = max(best, (last - index - (depth - 1)) / span)
        return best or None

    def forget_push_backs(self, *, before: float) -> None:
        """Drop the push-backs sent before `before` (spans from them would prove nothing)."""
        del self.limited[: bisect.bisect_left(self.limited, before)]

    def recent_rate(self, before: float, window: float = 1.0) -> float | None:
        """Successes a second among the requests sent in the `window` seconds before `before`
        (what the server let through just then, its burst included); None when there were none."""
        start = bisect.bisect_right(self.ok, before - window)
        accepted = bisect.bisect_right(self.ok, before) - start
        if not accepted:
            return None
        return accepted / window

    def _prune(self, now: float) -> None:
        if now - self._pruned < 1.0:
            return
        self._pruned = now
        horizon = now - HORIZON
        for times in (self.ok, self.limited):
            del times[: bisect.bisect_left(times, horizon)]


def bucket_bracket(since: float, taken: list[float], refused: float, depth: float) -> tuple[float, float]:
    """The rates a bucket `depth` deep can refill at, given what it did: empty (less than one
    request) at `since`, then taking every request sent at `taken` (sorted), then refusing the one
    sent at `refused`. (lowest, highest): slower, it could not have taken them all; faster, it
    would have had one left for the last. Found by bisection, each rate tried by replaying the
    sends through a copy of the bucket."""

    def level(rate: float, start: float) -> float | None:
        # What the copy holds at `refused`; None when it could not have taken one of `taken`.
        held, at = start, since
        for sent in taken:
            held = min(depth, held + rate * (sent - at)) - 1
            at = sent
            if held < -1e-9:
                return None
        return min(depth, held + rate * (refused - at))

    def bisect_rate(fits: Callable[[float], bool], *, fitting_above: bool) -> float:
        low, high = 1e-3, 1e6
        for _ in range(60):
            middle = math.sqrt(low * high)
            if fits(middle) == fitting_above:
                high = middle
            else:
                low = middle
        return high if fitting_above else low

    # Least: start the copy as full as the bucket could have been (almost one): every take fits.
    least = bisect_rate(lambda rate: level(rate, 1.0) is not None, fitting_above=True)
    # Most: start it empty: still less than one request left for the refused one.
    most = bisect_rate(lambda rate: (level(rate, 0.0) or 0.0) < 1.0, fitting_above=False)
    return least, max(least, most)


def full_bucket_bracket(sends: list[float], refused: set[float], depth: float) -> tuple[float, float] | None:
    """The rates a bucket `depth` deep, full at the first of `sends` (sorted), can refill at, given
    it refused those sent at `refused` and took every other: (lowest, highest), or None when no
    rate could have done it all (the depth is not its own, or it was not full then)."""

    def replay(rate: float) -> tuple[bool, bool]:
        # (every take fitted, every refusal found less than one left): the first rises with the
        # rate, the second falls
        held, at, fits, refuses = depth, sends[0], True, True
        for sent in sends:
            held = min(depth, held + rate * (sent - at))
            at = sent
            if sent in refused:
                refuses = refuses and held < 1.0
            else:
                fits = fits and held >= 1.0 - 1e-9
                held -= 1
        return fits, refuses

    low, high = 1e-3, 1e6
    for _ in range(40):  # the least rate every take fits at
        middle = math.sqrt(low * high)
        low, high = (low, middle) if replay(middle)[0] else (middle, high)
    least, low, high = high, 1e-3, 1e6
    for _ in range(40):  # the most every refusal still finds less than one left at
        middle = math.sqrt(low * high)
        low, high = (middle, high) if replay(middle)[1] else (low, middle)
    return (least, low) if least <= low else None


class SendLog:
    """Send times, in order, and those of the requests pushed back among them: what the server's
    bucket was asked for after a given request (`taken_after`), for the headers' bucket copy."""

    def __init__(self, kept: int = SENDS_KEPT) -> None:
        self.sent: list[float] = []
        self.refused: list[float] = []
        self._kept = kept

    def send(self, at: float) -> None:
        """A request sent at `at` (the clock's now: sends come in order)."""
        self.sent.append(at)
        if len(self.sent) > 2 * self._kept:
            del self.sent[: self._kept]

    def refuse(self, sent: float) -> None:
        """The request sent at `sent` was pushed back: it took nothing from the bucket."""
        _insert(self.refused, sent)
        if len(self.refused) > 2 * self._kept:
            del self.refused[: self._kept]

    def last_taken(self, before: float = math.inf) -> float | None:
        """The send time of the last request sent before `before` that the server took or may yet
        take (not refused). Sends at the same time (a coarse clock) count one by one."""
        index = bisect.bisect_left(self.sent, before) - 1
        while index >= 0:
            sent = self.sent[index]
            first = bisect.bisect_left(self.sent, sent)
            refused = bisect.bisect_right(self.refused, sent) - bisect.bisect_left(self.refused, sent)
            if index - first + 1 > refused:
                return sent
            index = first - 1
        return None

    def taken_after(self, ticket: float) -> int:
        """Requests sent after `ticket` that the server took or may yet take (not refused)."""
        sent = len(self.sent) - bisect.bisect_right(self.sent, ticket)
        return sent - (len(self.refused) - bisect.bisect_right(self.refused, ticket))


def _insert(times: list[float], value: float) -> None:
    # Replies come back nearly in the order sent: appending is the usual case.
    if not times or times[-1] <= value:
        times.append(value)
    else:
        bisect.insort(times, value)
