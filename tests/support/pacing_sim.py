"""A judge server's rate limit in virtual time: the real pacer, transport and shared pacer, run on an
event loop whose clock jumps to the next timer instead of waiting for it, against a simulated
server's token bucket. A 15-second grading runs in well under a second, so a pacing change is judged
against every limit at once (`simulate`), and the pathological servers (a 429 without Retry-After,
a Retry-After of an hour, a limit that halves mid-run, a clock step) are each a few lines of test.

    answers     `Server.answers` calls of `transport.call_with_retries`, `concurrency` at once, each
                with a `SimJudge` whose exchange reaches the server after a network delay (seeded
                jitter as the bench's mock measured it, `lag`: a loaded machine's, and `pauses`:
                the client's process stopped for 50-100 ms now and then), is refused
                at once (429) or answered after `latency` (and `latency_spread`)
    the server  a token bucket `rate` a second, `depth` requests deep, full at first (`Bucket`);
                a 429 carries a Retry-After (`retry_after`: "token" for whole seconds until a
                token, as `bench/ratelimit_bench.py`'s mock, None for none, or a number), and with
                `headers` every reply carries the bucket's state as OpenAI's headers tell it
    workers     2: two groups of senders, each with a `RelayedPacer` relayed to one `PacerHost`
                through a simulated pipe (`PIPE_DELAY` each way, and `pipe_jitter`), as `--workers 2`
    figures     `Figures`: the share of what the bucket could give (the bench's definition), the
                429s, and the answers lost
"""

from __future__ import annotations

import asyncio
import math
import random
import selectors
from collections.abc import Callable
from dataclasses import dataclass, field

from tabench_dsl.core.errors import TransportError
from tabench_dsl.core.ratelimit import RateReading
from tabench_dsl.grading.judges.base import Completion, Judge, JudgeInfo, JudgeParams, Message
from tabench_dsl.grading.pacing import Pacer
from tabench_dsl.grading.parallel.frames import Paced, Permit, Turn
from tabench_dsl.grading.parallel.shared_pacer import PacerHost, RelayedPacer
from tabench_dsl.grading.transport import ExchangeGate, RetryPolicy, call_with_retries

MESSAGES = [Message("system", "You grade answers."), Message("user", "an answer")]
#: Seconds a frame takes between a worker and its parent, each way, at least.
PIPE_DELAY = 0.0003
#: Seconds a request takes to reach the server at least, and the longest stall (`Server.jitter`).
NETWORK_DELAY = 0.0004
STALL = 0.005
#: The shortest and longest pause of the client's whole process (`Server.pauses`): a loaded
#: machine's scheduler, as a real one-worker run saw it (the server's arrivals strayed 50-96 ms).
PAUSE = (0.05, 0.1)


class _TimeTravel(selectors.SelectSelector):
    """A selector that never waits: the loop's clock jumps by the timeout instead."""

    def __init__(self, loop: VirtualLoop) -> None:
        super().__init__()
        self._loop = loop

    def select(self, timeout: float | None = None) -> list:  # type: ignore[override]
        if timeout is None:
            raise RuntimeError("the simulation is stuck: nothing is scheduled")
        self._loop.advance(max(0.0, timeout))
        return []


class VirtualLoop(asyncio.SelectorEventLoop):
    """An event loop on a virtual clock (`now`, seconds): every sleep ends at once, in order.
    With `pauses` (a second, at random from `rng`), the process pauses now and then for PAUSE
    seconds: whatever was due meanwhile runs at its end, at once (sends queued leave bunched)."""

    def __init__(self, pauses: float = 0.0, rng: random.Random | None = None) -> None:
        self.now = 1000.0
        self.pauses, self.rng = pauses, rng or random.Random(0)
        self.next_pause = self.now + self.rng.expovariate(pauses) if pauses else math.inf
        super().__init__(_TimeTravel(self))

    def advance(self, seconds: float) -> None:
        """The clock moves `seconds` on, and on past the end of any pause that begins meanwhile."""
        until = self.now + seconds
        while self.next_pause <= until:
            until = max(until, self.next_pause + self.rng.uniform(*PAUSE))
            self.next_pause = until + self.rng.expovariate(self.pauses)
        self.now = until

    def time(self) -> float:
        return self.now


class Bucket:
    """A server's token bucket: `rate` a second (`schedule`: a later rate from a time on), `depth`
    requests deep, full at first."""

    def __init__(self, rate: float, depth: float, start: float, schedule: tuple[tuple[float, float], ...]):
        self.rate, self.depth, self.level, self.at = rate, depth, depth, start
        self.start, self.schedule = start, schedule

    def take(self, now: float) -> bool:
        for after, rate in self.schedule:
            if now - self.start >= after:
                self.rate = rate
        self.level = min(self.depth, self.level + self.rate * (now - self.at))
        self.at = now
        if self.level < 1.0:
            return False
        self.level -= 1.0
        return True

    def reading(self) -> RateReading:
        """The bucket's state as OpenAI's headers tell it (whole counts)."""
        return RateReading(
            requests_limit=int(self.depth),
            requests_remaining=int(self.level),
            requests_reset=(self.depth - self.level) / self.rate,
        )


@dataclass
class Server:
    """The simulated judge server and the grading run against it (module docstring)."""

    rate: float
    depth: float
    answers: int
    headers: bool = False
    retry_after: str | float | None = "token"
    latency: float = 0.02
    #: Mean seconds a reply takes past `latency` (exponential: a language model's time to answer
    #: varies), 0: none.
    latency_spread: float = 0.0
    concurrency: int = 64
    workers: int = 1
    seed: int = 0
    #: Mean seconds of a send's extra delay (exponential: a loaded machine's event loop), 0: none.
    lag: float = 0.0
    #: The network's delay on the way to the server: NETWORK_DELAY, plus an exponential delay of
    #: mean `jitter`, plus, for a share `stalls` of the sends, up to STALL more (the machine busy
    #: elsewhere). Measured on the bench's mock (`bench/ratelimit_bench.py`, its arrival jitter):
    #: one worker, 10/s and 50/s one deep, the gaps strayed p90 0.5-0.7 ms, p99 0.9-2.5 ms.
    jitter: float = 0.00035
    stalls: float = 0.01
    #: Mean seconds of a frame's extra delay between a worker and its parent (exponential): two
    #: workers on a shared machine strayed p95 2.7-3.2 ms, p99 3.5-5.3 ms.
    pipe_jitter: float = 0.0007
    #: Pauses of the client's whole process a second (`VirtualLoop`), 0: none.
    pauses: float = 0.0
    #: (seconds after the start, rate from then on)
    schedule: tuple[tuple[float, float], ...] = ()
    #: (seconds after the start, seconds the pacer's clock jumps then): a clock step
    clock_step: tuple[float, float] | None = None
    ok: int = 0
    limited: int = 0
    first: float | None = None
    last_ok: float = 0.0
    bucket: Bucket | None = field(default=None, repr=False)
    #: (arrival, taken) of every request, as the bench's mock records them
    arrivals: list[tuple[float, bool]] = field(default_factory=list, repr=False)

    def arrive(self, now: float) -> bool:
        if self.bucket is None:
            self.bucket = Bucket(self.rate, self.depth, now, self.schedule)
        if self.first is None:
            self.first = now
        taken = self.bucket.take(now)
        self.arrivals.append((now, taken))
        if taken:
            self.ok += 1
            self.last_ok = now
        else:
            self.limited += 1
        return taken

    def retry_after_now(self) -> float | None:
        if self.retry_after == "token":
            assert self.bucket is not None
            return float(max(1, math.ceil((1.0 - self.bucket.level) / self.bucket.rate)))
        return None if self.retry_after is None else float(self.retry_after)


class SimJudge(Judge):
    """A judge whose exchanges reach the simulated `server` after a seeded network delay."""

    def __init__(self, server: Server, rng: random.Random) -> None:
        self.params = JudgeParams(model="sim", max_tokens=16)
        self.info = JudgeInfo(backend="sim", model="sim", label="simulated server")
        self.server, self.rng = server, rng

    async def complete(self, messages: list[Message]) -> Completion:
        server = self.server
        rng = self.rng
        lag = rng.expovariate(1.0 / server.lag) if server.lag else 0.0
        spread = rng.expovariate(1.0 / server.jitter) if server.jitter else 0.0
        stall = rng.random() * STALL if rng.random() < server.stalls else 0.0
        await asyncio.sleep(NETWORK_DELAY + spread + stall + lag)  # on its way to the server
        taken = server.arrive(asyncio.get_running_loop().time())
        reading = server.bucket.reading() if server.headers and server.bucket else None
        if not taken:
            await asyncio.sleep(0.0008)
            raise TransportError("429", status=429, retry_after=server.retry_after_now(), rate=reading)
        spread = rng.expovariate(1.0 / server.latency_spread) if server.latency_spread else 0.0
        await asyncio.sleep(server.latency + spread)
        return Completion('{"verdict": "pass"}', rate=reading)


@dataclass(frozen=True)
class Figures:
    """What a run got: `share` of what the bucket could give, 429s of `calls`, answers `lost`."""

    share: float
    limited: int
    calls: int
    lost: int
    seconds: float
    #: The pacer's phases in the order it went through them (its `Phase` names, "PAUSED" while
    #: every sender waited), as a watcher polling it every millisecond saw them.
    phases: tuple[str, ...] = ()

    @property
    def limited_share(self) -> float:
        return self.limited / self.calls if self.calls else 0.0

    def met(self) -> bool:
        """The issue's targets: >= 95% of the limit, <= 5% of calls refused or at most three."""
        return self.lost == 0 and self.share >= 0.95 and (self.limited_share <= 0.05 or self.limited <= 3)


def simulate(server: Server, *, pacer: Callable[[VirtualLoop], Pacer] | None = None) -> Figures:
    """Grade `server.answers` answers against `server` in virtual time (module docstring)."""
    loop = VirtualLoop(server.pauses, random.Random(server.seed + 3))
    try:
        return loop.run_until_complete(_grade(loop, server, pacer))
    finally:
        loop.close()


def _clock_of(loop: VirtualLoop, server: Server) -> Callable[[], float]:
    if server.clock_step is None:
        return loop.time
    began = loop.now
    after, jump = server.clock_step
    return lambda: loop.now + (jump if loop.now - began >= after else 0.0)


async def _grade(loop: VirtualLoop, server: Server, make: Callable[[VirtualLoop], Pacer] | None) -> Figures:
    rng = random.Random(server.seed)
    clock = _clock_of(loop, server)
    pacer = make(loop) if make else Pacer(clock=clock)
    limiters = _limiters(loop, server, pacer)
    policy = RetryPolicy(clock=clock, rng=random.Random(server.seed + 1), rate_limit_wait=3600.0 * 3)
    queue: asyncio.Queue[int] = asyncio.Queue()
    for answer in range(server.answers):
        queue.put_nowait(answer)
    lost = 0
    began = loop.now

    async def sender(limiter: ExchangeGate) -> None:
        nonlocal lost
        judge = SimJudge(server, rng)
        while not queue.empty():
            queue.get_nowait()
            try:
                await call_with_retries(judge, MESSAGES, policy, limiter)
            except TransportError:
                lost += 1

    phases: list[str] = []
    watcher = asyncio.ensure_future(_watch(pacer, phases))
    per_group = max(1, server.concurrency // len(limiters))
    await asyncio.gather(*(sender(limiter) for limiter in limiters for _ in range(per_group)))
    watcher.cancel()
    assert server.first is not None
    span = server.last_ok - server.first
    could = server.depth + _rate_over(server, server.first, server.last_ok)
    share = server.ok / could if span > 0 else 0.0
    return Figures(share, server.limited, server.ok + server.limited, lost, loop.now - began, tuple(phases))


async def _watch(pacer: Pacer, phases: list[str]) -> None:
    while True:
        phase = "PAUSED" if pacer.paused_until > pacer.clock() else pacer.phase.name
        if not phases or phases[-1] != phase:
            phases.append(phase)
        await asyncio.sleep(0.001)


def _rate_over(server: Server, first: float, last: float) -> float:
    """Requests the bucket refilled from `first` to `last` (its rate may change on the way)."""
    points = [(0.0, server.rate), *server.schedule]
    total = 0.0
    for index, (after, rate) in enumerate(points):
        start = max(first, first + after)
        end = min(last, first + points[index + 1][0]) if index + 1 < len(points) else last
        total += rate * max(0.0, end - start)
    return total


def _limiters(loop: VirtualLoop, server: Server, pacer: Pacer) -> list[ExchangeGate]:
    """One limiter on the pacer itself, or with `workers` one relayed to it per worker."""
    if server.workers == 1:
        return [ExchangeGate(server.concurrency, pacer=pacer)]
    host = PacerHost(pacer)
    limiters = []
    rng = random.Random(server.seed + 2)

    def pipe() -> float:
        return PIPE_DELAY + (rng.expovariate(1.0 / server.pipe_jitter) if server.pipe_jitter else 0.0)

    for worker in range(server.workers):
        relayed: list[RelayedPacer] = []

        def to_parent(frame: object, worker: int = worker, relayed: list[RelayedPacer] = relayed) -> None:
            loop.call_later(pipe(), _at_parent, host, worker, frame, relayed[0], pipe)

        relayed.append(RelayedPacer(to_parent, clock=loop.time))
        limiters.append(ExchangeGate(server.concurrency, pacer=relayed[0]))
    return limiters


def _at_parent(
    host: PacerHost, worker: int, frame: object, relayed: RelayedPacer, pipe: Callable[[], float]
) -> None:
    loop = asyncio.get_running_loop()
    if isinstance(frame, Turn):
        host.turn(worker, frame, lambda permit: loop.call_later(pipe(), _at_worker, relayed, permit))
    elif isinstance(frame, Paced):
        host.paced(worker, frame)


def _at_worker(relayed: RelayedPacer, permit: object) -> None:
    assert isinstance(permit, Permit)
    relayed.permit(permit)
