"""Transport: backoff and jitter bounds, Retry-After parsing, the concurrency gate, the
per-minute budgets and the per-call timeout (the last two against the scripted server)."""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import random

import pytest
from support.judge_server import Fault

from tabench_dsl.core.errors import TransportError
from tabench_dsl.grading.judges.base import JudgeParams, Message
from tabench_dsl.grading.judges.client_errors import parse_retry_after
from tabench_dsl.grading.judges.openai import OpenAIJudge
from tabench_dsl.grading.pacing.settings import CLIMB_STEP
from tabench_dsl.grading.transport import (
    ExchangeGate,
    RateLimit,
    RetryPolicy,
    backoff_delay,
    call_with_retries,
)

MESSAGES = [Message("system", "s"), Message("user", "u")]
REPLY = '{"verdict": "pass", "reason": "ok"}'


class FakeTime:
    """A clock that moves only when something sleeps on it."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


# -- backoff ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("retry", range(8))
def test_backoff_stays_within_the_full_jitter_bounds(retry):
    policy = RetryPolicy(base_delay=0.5, max_delay=30.0, rng=random.Random(retry))
    cap = min(30.0, 0.5 * 2**retry)
    delays = [backoff_delay(retry, policy) for _ in range(400)]
    assert all(0.0 <= d <= cap for d in delays)
    # full jitter: spread over the whole range, not bunched at the cap or at zero
    assert max(delays) > 0.9 * cap and min(delays) < 0.1 * cap
    assert len(set(delays)) > 350


def test_backoff_honours_retry_after_with_a_cap():
    policy = RetryPolicy(base_delay=0.01, max_delay=0.02, max_retry_after=60.0, rng=random.Random(1))
    assert backoff_delay(0, policy, retry_after=5.0) == 5.0
    assert backoff_delay(3, policy, retry_after=3600.0) == 60.0
    assert backoff_delay(0, policy, retry_after=0.0) <= 0.01


def test_retry_policy_rejects_nonsense():
    with pytest.raises(ValueError):
        RetryPolicy(attempts=0)
    with pytest.raises(ValueError):
        RetryPolicy(timeout=0)


def test_parse_retry_after_forms():
    now = 1_700_000_000.0
    date = email.utils.formatdate(now + 12, usegmt=True)
    assert parse_retry_after({"retry-after": "3"}) == 3.0
    assert parse_retry_after({"retry-after": "0.25"}) == 0.25
    assert parse_retry_after({"retry-after": date}, now=now) == pytest.approx(12.0)
    assert parse_retry_after({"retry-after": email.utils.formatdate(now - 50, usegmt=True)}, now=now) == 0.0
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert parse_retry_after({"retry-after-ms": "soon", "retry-after": "9"}) == 9.0
    assert parse_retry_after({"retry-after": "tomorrow-ish"}) is None
    assert parse_retry_after({"retry-after": "-4"}) is None
    assert parse_retry_after({}) is None


# -- the adaptive limiter --------------------------------------------------------------------------


async def test_limiter_is_reentrant_per_task():
    limiter = ExchangeGate(1)
    async with asyncio.timeout(1):
        async with limiter, limiter:
            assert limiter.in_flight == 1
    assert limiter.in_flight == 0


async def test_limiter_bounds_exchanges_in_flight(judge_server, http_session):
    in_flight = 0
    peak = 0
    bound_reached = asyncio.Event()

    async def slow(body):
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        if in_flight == 3:
            bound_reached.set()
        # The first exchanges are held until the gate's bound is in flight (a loaded machine may
        # send the next request after a fixed sleep has run out: 0.1 s was not always enough);
        # a gate letting fewer through leaves the event unset, and peak short, after 10 s.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(bound_reached.wait(), timeout=10)
        await asyncio.sleep(0.05)
        in_flight -= 1
        return REPLY

    server = await judge_server(slow)
    judge = OpenAIJudge(JudgeParams(model="m"), session=http_session, base_url=server.url, timeout=30)
    limiter = ExchangeGate(3)
    policy = RetryPolicy(timeout=30)
    results = await asyncio.gather(*(call_with_retries(judge, MESSAGES, policy, limiter) for _ in range(12)))
    assert [r[0].content for r in results] == [REPLY] * 12
    assert peak == 3 and limiter.in_flight == 0


async def test_rate_limits_slow_the_pace_not_the_gate_over_http(judge_server, http_session):
    server = await judge_server([REPLY] * 5 + [Fault.RATE_LIMIT] * 2 + [REPLY])
    judge = OpenAIJudge(JudgeParams(model="m"), session=http_session, base_url=server.url, timeout=2)
    limiter = ExchangeGate(8)
    policy = RetryPolicy(attempts=2, timeout=2, base_delay=0.01, max_delay=0.02)
    for _ in range(5):
        await call_with_retries(judge, MESSAGES, policy, limiter)
    completion, retries = await call_with_retries(judge, MESSAGES, policy, limiter)
    assert (completion.content, retries) == (REPLY, 2)  # two 429s, past one retry: not counted
    # The first 429 sets the pace from the last second's five successes (a second's worth: they
    # were sent within a few milliseconds); the second, too close to the first to measure by,
    # starts the climb from it again, lower; the success climbs a request's steps (x2 at most).
    assert 5.0 / CLIMB_STEP**2 <= limiter.pacer.rate <= 5.0 / CLIMB_STEP**2 * 2


# -- per-minute budgets ----------------------------------------------------------------------------


async def test_requests_per_minute_start_with_a_small_burst():
    clock = FakeTime()
    limiter = ExchangeGate(4, rate=RateLimit(rpm=2), sleep=clock.sleep, clock=clock)
    for _ in range(3):
        await limiter.throttle()
    # One request at once, then one every 30 s: not a minute's worth (2) up front.
    assert clock.slept == [pytest.approx(30.0), pytest.approx(30.0)]


async def test_requests_per_minute_burst_is_a_second_of_the_rate():
    clock = FakeTime()
    limiter = ExchangeGate(4, rate=RateLimit(rpm=1200), sleep=clock.sleep, clock=clock)
    for _ in range(20):
        await limiter.throttle()
    assert clock.slept == []  # 20 a second: a second's worth goes at once
    for _ in range(20):
        await limiter.throttle()
    # ... and the next 20 come at the rate, not all at once (the old full bucket let 1,200 through)
    assert len(clock.slept) == 20 and sum(clock.slept) == pytest.approx(1.0)


async def test_tokens_per_minute():
    clock = FakeTime()
    limiter = ExchangeGate(4, rate=RateLimit(tpm=6000), sleep=clock.sleep, clock=clock)
    await limiter.throttle(60)  # the bucket holds a second's worth: 100 tokens
    await limiter.throttle(60)  # 40 left, 20 missing at 100 per second
    assert clock.slept == [pytest.approx(0.2)]
    limiter.settle_tokens(60, 160)  # the server reported 100 more than estimated: 100 in debt
    await limiter.throttle(50)
    assert clock.slept[1] == pytest.approx(1.5)
    await limiter.throttle(5000)  # larger than the whole budget: waits for a full bucket only
    assert clock.slept[2] == pytest.approx(1.0)


async def test_no_budget_no_wait():
    clock = FakeTime()
    limiter = ExchangeGate(1, sleep=clock.sleep, clock=clock)
    for _ in range(50):
        await limiter.throttle(10_000)
    assert clock.slept == []


# -- timeouts --------------------------------------------------------------------------------------


async def test_call_timeout_cuts_a_hanging_exchange(judge_server, http_session):
    # The server never answers the first request and the judge's own HTTP timeout is an hour: only
    # the policy's per-call timeout ends the exchange (without it the test hangs, which the suite's
    # timeout fails).
    server = await judge_server([Fault.HANG, REPLY], hang_seconds=3600)
    judge = OpenAIJudge(JudgeParams(model="m"), session=http_session, base_url=server.url, timeout=3600)
    sleeps = FakeTime()
    completion, retries = await call_with_retries(
        judge, MESSAGES, RetryPolicy(timeout=0.2, sleep=sleeps.sleep), ExchangeGate(2)
    )
    assert (completion.content, retries) == (REPLY, 1)
    assert len(server.requests) == 2


async def test_timeouts_exhausted_name_the_timeout(judge_server, http_session):
    server = await judge_server([Fault.HANG])
    judge = OpenAIJudge(JudgeParams(model="m"), session=http_session, base_url=server.url, timeout=30)
    sleeps = FakeTime()
    with pytest.raises(TransportError, match=r"no reply within 0.2 s \(gave up after 2 attempts\)"):
        await call_with_retries(
            judge, MESSAGES, RetryPolicy(attempts=2, timeout=0.2, sleep=sleeps.sleep), ExchangeGate(1)
        )
    assert len(server.requests) == 2 and len(sleeps.slept) == 1
