"""Getting one reply through an unreliable network: retries, backoff, concurrency and rate limits.

A judge makes one exchange (`Judge.complete`) and raises `TransportError` when it got nothing usable.
`call_with_retries` turns that into a reply or a final `TransportError`:

    call_with_retries(judge, messages, policy, limiter)
      until a reply, policy.attempts faults, or policy.rate_limit_wait seconds of rate limits:
        limiter.throttle()        requests/tokens per minute (token buckets), when set
        limiter.pacer.turn()      the paced send time (`pacing.Pacer`), once the server pushed back
        async with limiter:       at most `limiter.max_concurrency` exchanges in flight (--concurrency)
          asyncio.timeout(policy.timeout): judge.complete(messages)
                                  (no second timer when the judge's `exchange_timeout` is as short)
        on success:               the reply's rate-limit reading goes to the pacer
        on a rate limit:          the pacer takes the rate the server allows (`pacing.Pacer`);
                                  not counted against policy.attempts
        on another retryable fault: sleep backoff_delay(...) outside the gate, then try again

Faults retried: `TransportError(retryable=True)` (HTTP 408/409/429/5xx, bodies that are not a
completion), `aiohttp.ClientError`, timeouts and connection resets. A non-retryable
`TransportError` (401, 400, ...) is raised at once. Nothing here ever formats a key.

A rate limit (429, or 503/529 with a Retry-After: `TransportError.rate_limited`) is not a fault:
the server asked for a slower pace, and it gets one. Only when one call has been rate limited for
`policy.rate_limit_wait` seconds (30 minutes by default) does it give up.

The HTTP client's own errors become tabench's in one place, `judges.client_errors` (used around
each HTTP exchange by the HTTP judges, and around each call here for any other judge). A judge's
optional `exchange_timeout` (`judges.base.Judge`) tells whether it times itself.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from ..core.errors import TransportError
from .judges.base import DEFAULT_TIMEOUT, Completion, Judge, Message
from .judges.client_errors import map_client_errors
from .pacing import Pacer, Pacing

Sleep = Callable[[float], Awaitable[None]]
Clock = Callable[[], float]

#: Seconds one call may go on being rate limited before it gives up (`--rate-limit-wait`).
DEFAULT_RATE_LIMIT_WAIT = 30 * 60.0
#: Seconds of its rate a `--rpm` / `--tpm` bucket holds: a short burst, not a minute's worth, so
#: the first second does not spend what a provider's finer-grained limit allows in a minute.
BURST_SECONDS = 1.0


@dataclass(frozen=True)
class RetryPolicy:
    """How hard to try: `attempts` exchanges in all, each within `timeout` seconds.

    Between attempts the wait is full-jitter exponential backoff: uniform in
    [0, min(max_delay, base_delay * 2**retry)], and never less than the server's Retry-After
    (itself capped at `max_retry_after`). Rate limits do not count as attempts: a call gives up
    on them only once it has been rate limited for `rate_limit_wait` seconds. `sleep`, `clock`
    and `rng` are injectable so tests run fast and deterministic.
    """

    attempts: int = 6
    timeout: float = DEFAULT_TIMEOUT
    base_delay: float = 0.5
    max_delay: float = 30.0
    max_retry_after: float = 60.0
    rate_limit_wait: float = DEFAULT_RATE_LIMIT_WAIT
    sleep: Sleep = asyncio.sleep
    clock: Clock = time.monotonic
    rng: random.Random = field(default_factory=random.Random, compare=False)

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError("attempts must be at least 1")
        if self.timeout <= 0:
            raise ValueError("timeout must be positive")
        if self.rate_limit_wait < 0:
            raise ValueError("rate_limit_wait must be 0 or more")


def backoff_delay(retry: int, policy: RetryPolicy, retry_after: float | None = None) -> float:
    """Seconds to wait before retry number `retry` (0 for the first retry)."""
    cap = min(policy.max_delay, policy.base_delay * (2 ** min(retry, 32)))
    delay = policy.rng.uniform(0.0, cap)
    if retry_after is not None and retry_after > 0:
        delay = max(delay, min(retry_after, policy.max_retry_after))
    return delay


def estimate_tokens(messages: Sequence[Message], max_tokens: int = 0) -> int:
    """A rough token count for a request (four characters a token, plus the reply budget), used
    only to pace a tokens-per-minute limit before the server has reported the real count."""
    return sum(len(m.content) for m in messages) // 4 + max_tokens


@dataclass(frozen=True)
class RateLimit:
    """Optional requests-per-minute and tokens-per-minute ceilings (None: no ceiling)."""

    rpm: float | None = None
    tpm: float | None = None


class _Bucket:
    """A token bucket refilled at `per_minute` / 60 a second, holding `BURST_SECONDS` of that (at
    least one unit), and starting full. A request larger than the whole bucket is let through when
    the bucket is full (it then runs into debt), so the rate holds whatever the request sizes."""

    def __init__(self, per_minute: float, clock: Clock) -> None:
        if per_minute <= 0:
            raise ValueError("rate limits must be positive")
        self.rate = per_minute / 60.0
        self.capacity = max(1.0, self.rate * BURST_SECONDS)
        self.level = self.capacity
        self.clock = clock
        self.stamp = clock()

    def _refill(self) -> None:
        now = self.clock()
        self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
        self.stamp = now

    async def take(self, amount: float, sleep: Sleep) -> None:
        while True:
            self._refill()
            need = min(amount, self.capacity)
            # A hair of tolerance: the wait below, added to a clock of large value, can fall short
            # of `need` by a rounding error, and must not be waited again for ever.
            if self.level >= need - 1e-9:
                self.level -= amount
                return
            await sleep((need - self.level) / self.rate)

    def adjust(self, amount: float) -> None:
        """Charge (or refund, when negative) tokens once the real count is known."""
        self._refill()
        self.level = min(self.capacity, self.level - amount)


class ExchangeGate:
    """The gate every exchange passes, and nothing it learns: `async with gate:` admits at most
    `max_concurrency` at once (--concurrency); with a `RateLimit`, `throttle` holds requests and
    tokens to the user's own per-minute ceilings (--rpm, --tpm); and it carries the `pacer`
    (`pacing.Pacer`) that paces the rate the server allows, the one part that learns. `pacer` is
    another's to share (the workers of `--workers N` share their parent's: `parallel.shared_pacer`).

    A 429 changes the rate, not the concurrency: against a fast server even one exchange in flight
    can exceed a rate limit, so fewer in flight would not stop the 429s, only slow the grading. The
    gate is re-entrant per task, so a caller may hold it around `call_with_retries(..., limiter)`
    too.
    """

    def __init__(
        self,
        max_concurrency: int,
        *,
        rate: RateLimit | None = None,
        pacer: Pacing | None = None,
        sleep: Sleep = asyncio.sleep,
        clock: Clock = time.monotonic,
    ) -> None:
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")
        self.max_concurrency = max_concurrency
        self.in_flight = 0
        self.sleep = sleep
        self._waiting = 0  # tasks waiting for a slot
        self._cond = asyncio.Condition()
        self._holders: dict[asyncio.Task[object] | None, int] = {}
        rate = rate or RateLimit()
        self.pacer: Pacing = pacer or Pacer(sleep=sleep, clock=clock)
        self._requests = _Bucket(rate.rpm, clock) if rate.rpm else None
        self._tokens = _Bucket(rate.tpm, clock) if rate.tpm else None
        #: True when requests or tokens per minute are paced (`throttle` may wait).
        self.throttled = self._requests is not None or self._tokens is not None

    async def __aenter__(self) -> ExchangeGate:
        task = asyncio.current_task()
        if self._holders.get(task):
            self._holders[task] += 1
            return self
        if self.in_flight < self.max_concurrency and not self._waiting:
            self.in_flight += 1  # a free slot and nobody ahead: no lock, no suspension
        else:
            self._waiting += 1
            try:
                async with self._cond:
                    await self._cond.wait_for(lambda: self.in_flight < self.max_concurrency)
                    self.in_flight += 1
            finally:
                self._waiting -= 1
        self._holders[task] = 1
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        task = asyncio.current_task()
        depth = self._holders.get(task, 0) - 1
        if depth > 0:
            self._holders[task] = depth
            return
        self._holders.pop(task, None)
        self.in_flight -= 1
        if self._waiting:  # only a task waiting for a slot needs waking
            async with self._cond:
                self._cond.notify_all()

    async def throttle(self, tokens: int = 0) -> None:
        """Wait for the requests- and tokens-per-minute budgets (no wait when none is set)."""
        if self._requests is not None:
            await self._requests.take(1, self.sleep)
        if self._tokens is not None and tokens > 0:
            await self._tokens.take(tokens, self.sleep)

    def settle_tokens(self, estimated: int, actual: int) -> None:
        """Correct the tokens-per-minute bucket once the server reported the real count."""
        if self._tokens is not None and actual > 0:
            self._tokens.adjust(actual - estimated)


async def call_with_retries(
    judge: Judge,
    messages: list[Message],
    policy: RetryPolicy,
    limiter: ExchangeGate,
) -> tuple[Completion, int]:
    """One judge reply, retrying transport faults and waiting out rate limits; returns
    `(completion, retries_used)` (every exchange after the first, rate-limited ones included).

    Raises the last `TransportError` when `policy.attempts` faults are spent, or when the call has
    been rate limited for `policy.rate_limit_wait` seconds; at once when it is not retryable. The
    wait between attempts happens outside the concurrency gate.
    """
    exchange = _exchange_of(judge, policy)
    client_errors = map_client_errors(policy.timeout)
    estimate = estimate_tokens(messages, judge.params.max_tokens)
    faults = 0  # retryable failures that were not rate limits
    limited = 0  # rate-limited replies in a row
    limited_since: float | None = None
    retries = 0
    while True:
        ticket = 0.0
        try:
            with client_errors:
                ticket = await _take_turn(limiter, estimate)
                completion = await _paced_exchange(limiter, ticket, exchange, messages)
            limiter.settle_tokens(estimate, completion.tokens.total)
            limiter.pacer.on_success(ticket, completion.rate, estimate)
            return completion, retries
        except TransportError as exc:
            if not exc.retryable:
                raise
            last = exc
        retries += 1
        if last.rate_limited:
            now = policy.clock()
            limited_since = now if limited_since is None else limited_since
            if now - limited_since >= policy.rate_limit_wait:
                limiter.pacer.on_fault(ticket)  # its ticket ends here
                raise _still_limited(last, now - limited_since)
            limited += 1
            # The pace follows what the server allowed (`pacing.Pacer`); this call then queues
            # for its turn.
            pause = _push_back_pause(last, limited, policy)
            limiter.pacer.on_push_back(ticket, pause=pause, reading=last.rate)
            continue
        limited = 0
        faults += 1
        if faults >= policy.attempts:
            raise _gave_up(last, policy.attempts)
        await policy.sleep(backoff_delay(faults - 1, policy, last.retry_after))


Exchange = Callable[[list[Message]], Awaitable[Completion]]


def _exchange_of(judge: Judge, policy: RetryPolicy) -> Exchange:
    """The judge's exchange, timed by the policy unless the judge times itself as short (the HTTP
    judges, as `grade` sets them up): then no second timer around each call."""
    own = judge.exchange_timeout
    if own is not None and own <= policy.timeout:
        return judge.complete

    async def timed(messages: list[Message]) -> Completion:
        async with asyncio.timeout(policy.timeout):
            return await judge.complete(messages)

    return timed


async def _take_turn(limiter: ExchangeGate, tokens: int) -> float:
    """Wait for the user's per-minute budgets and the pacer's send time; the pacer's ticket."""
    if limiter.throttled:
        await limiter.throttle(tokens)
    pacer = limiter.pacer
    return pacer.start() if pacer.idle else await pacer.turn()


async def _paced_exchange(
    limiter: ExchangeGate, ticket: float, exchange: Exchange, messages: list[Message]
) -> Completion:
    """One exchange inside the concurrency gate. Every ticket ends once: a fault here, a rate
    limit or a success in `call_with_retries`."""
    try:
        async with limiter:
            return await exchange(messages)
    except BaseException as exc:
        if not (isinstance(exc, TransportError) and exc.rate_limited):
            limiter.pacer.on_fault(ticket)
        raise


def _push_back_pause(limited: TransportError, in_a_row: int, policy: RetryPolicy) -> float:
    """How long every sender pauses should the pacer have nothing better to go by: the
    Retry-After, else a backoff (a "Retry-After: 0" is no reason to ask again at once)."""
    if limited.retry_after:
        return min(limited.retry_after, policy.max_retry_after)
    return backoff_delay(in_a_row - 1, policy)


def _still_limited(last: TransportError, waited: float) -> TransportError:
    """The error of a call whose rate-limit wait is over."""
    return TransportError(
        f"{last} (still rate limited after {_waited(waited)} of waiting: the rate-limit wait is over)",
        status=last.status,
        retry_after=last.retry_after,
        retryable=True,
        rate=last.rate,
    )


def _gave_up(last: TransportError, attempts: int) -> TransportError:
    """The error of a call whose attempts are spent."""
    return TransportError(
        f"{last} (gave up after {attempts} attempt{'s' if attempts != 1 else ''})",
        status=last.status,
        retry_after=last.retry_after,
        retryable=True,
        rate=last.rate,
        unreachable=last.unreachable,
    )


def _waited(seconds: float) -> str:
    """A wait as a person reads it: "45 s", "30 min"."""
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"
