"""Pacing to a judge's rate limit: the rate-limit header parsers, the pacer's AIMD and pauses, and,
against the scripted server speaking each provider's wire format (headers included), that a rate
limit never costs an answer, that the wait has a deadline, and that a reply saying nothing is left
holds the next request back until its reset (measured by when the server received each request)."""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from support.helpers_grading import PASS, write_battery
from support.judge_server import Fault, Raw

from tabench_dsl.cli import main
from tabench_dsl.core.errors import TransportError
from tabench_dsl.core.ratelimit import RateReading
from tabench_dsl.grading.judges.anthropic import AnthropicJudge
from tabench_dsl.grading.judges.base import JudgeParams, Message
from tabench_dsl.grading.judges.openai import OpenAIJudge
from tabench_dsl.grading.pacing import Pacer, Phase
from tabench_dsl.grading.pacing.evidence import RateEvidence, bucket_bracket
from tabench_dsl.grading.pacing.headers import (
    anthropic_reading,
    header_limit,
    openai_reading,
    parse_duration,
    seconds_until,
)
from tabench_dsl.grading.pacing.settings import (
    CLIMB_STEP,
    CLIMB_TICK,
    DECREASE,
    FIRST_TURN,
    MAX_STEPS_A_SEND,
    ONE_DEEP_MARGIN,
    PROBE,
    SLOW_GROWTH,
    START_WINDOW,
    STUCK,
)
from tabench_dsl.grading.transport import ExchangeGate, RateLimit, RetryPolicy, call_with_retries

MESSAGES = [Message("system", "You grade answers."), Message("user", "-- CANDIDATE ANSWER --\nIngest")]
REPLY = '{"verdict": "pass", "reason": "ok"}'
PARAMS = JudgeParams(model="judge-m", max_tokens=64)
KEY = "sk-ant-canary-0a1b2c3d4e5f6a7b"


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


# -- the header parsers ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("1s", 1.0),
        ("6m0s", 360.0),
        ("20ms", 0.02),
        ("1h2m3.5s", 3723.5),
        ("8.64s", 8.64),
        ("0.5", 0.5),
        ("250us", 0.00025),
    ],
)
def test_openai_durations(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", [None, "", "soon", "1x", "s", "-1s", "1s junk"])
def test_unreadable_durations(text):
    assert parse_duration(text) is None


def test_rfc3339_resets():
    now = datetime(2026, 1, 1, tzinfo=UTC).timestamp()
    assert seconds_until("2026-01-01T00:00:10Z", now=now) == pytest.approx(10.0)
    assert seconds_until("2026-01-01T00:00:00.250Z", now=now) == pytest.approx(0.25)
    assert seconds_until("2026-01-01T01:00:00+01:00", now=now) == pytest.approx(0.0)
    assert seconds_until("2025-12-31T23:59:00Z", now=now) == 0.0  # past: no wait
    assert seconds_until("tomorrow", now=now) is None
    assert seconds_until(None) is None


def test_openai_reading():
    headers = {
        "x-ratelimit-limit-requests": "60",
        "x-ratelimit-remaining-requests": "59",
        "x-ratelimit-reset-requests": "1s",
        "x-ratelimit-limit-tokens": "150000",
        "x-ratelimit-remaining-tokens": "149984",
        "x-ratelimit-reset-tokens": "6m30s",
    }
    assert openai_reading(headers) == RateReading(60, 59, 1.0, 150000, 149984, 390.0)
    assert openai_reading({"content-type": "application/json"}) is None


def test_anthropic_reading():
    now = datetime(2026, 1, 1, tzinfo=UTC).timestamp()
    headers = {
        "anthropic-ratelimit-requests-limit": "50",
        "anthropic-ratelimit-requests-remaining": "0",
        "anthropic-ratelimit-requests-reset": "2026-01-01T00:00:02Z",
        "anthropic-ratelimit-input-tokens-limit": "40000",
        "anthropic-ratelimit-input-tokens-remaining": "39000",
        "anthropic-ratelimit-input-tokens-reset": "2026-01-01T00:00:01Z",
    }
    assert anthropic_reading(headers, now=now) == RateReading(50, 0, 2.0, 40000, 39000, 1.0)
    assert anthropic_reading({}) is None


def test_a_bucket_one_request_deep_reads_as_its_rate_after_a_reply_only():
    one_deep = RateReading(requests_limit=1, requests_remaining=0, requests_reset=0.2)
    rate, capacity, level = header_limit(one_deep) or (0.0, 0.0, 0.0)
    # empty after the request, whole 200 ms later: 5 a second, paced a margin below
    assert (rate, capacity, level) == pytest.approx((5.0 * (1 - ONE_DEEP_MARGIN), 1.0, 0.0))
    # a push-back's reading says when a token comes, not how long a whole one takes
    assert header_limit(one_deep, taken=False) is None
    # deeper buckets: the lower bound their whole counts allow
    assert header_limit(RateReading(requests_limit=10, requests_remaining=0, requests_reset=1.0)) == (
        pytest.approx(9.0),
        10.0,
        0.0,
    )


# -- the pacer -------------------------------------------------------------------------------------


async def test_pacer_is_idle_until_the_server_pushes_back_and_starts_slowly():
    clock = FakeTime()
    pacer = Pacer(sleep=clock.sleep, clock=clock)
    tickets = [pacer.start() for _ in range(START_WINDOW)]
    assert not pacer.idle  # the slow start: START_WINDOW in flight before any reply
    for ticket in tickets:
        pacer.on_success(ticket)
    # a quarter more for each success: x1.25 a round trip, so a deep bucket that empties under a
    # slow start costs fewer 429s (those sent while its first 429 is on its way back)
    assert pacer.idle and pacer.window == START_WINDOW * (1 + SLOW_GROWTH)
    assert pacer.rate is None and clock.slept == []


async def test_a_429_after_answers_paces_at_what_got_through_without_a_pause():
    clock = FakeTime()
    pacer = Pacer(sleep=clock.sleep, clock=clock)
    for _ in range(20):  # 20 answers sent 60 ms apart
        ticket = pacer.start()
        clock.now += 0.06
        pacer.on_success(ticket)
    pacer.on_push_back(pacer.start(), pause=1.0)
    # the 16 sent within the last second before the 429, over that second (a burst counted as
    # a second's worth: the server's bucket may have held them all)
    assert pacer.rate == pytest.approx(16.0)
    assert pacer.paused_until < clock.now  # nobody waits out the Retry-After
    started = clock.now
    pacer.on_fault(await pacer.turn())  # the first a turn away (the bucket was just emptied),
    assert clock.now - started == pytest.approx(1 / 16.0)
    pacer.on_fault(await pacer.turn())  # the next a turn later, at the climb's next step
    assert clock.now - started == pytest.approx(1 / 16.0 + 1 / (16.0 * CLIMB_STEP))


async def test_a_429_whose_answers_on_their_way_all_fail_reopens_the_slow_start():
    clock = FakeTime()
    pacer = Pacer(sleep=clock.sleep, clock=clock)
    first, second = pacer.start(), pacer.start()
    pacer.on_push_back(second, pause=1.0)  # back before the answer sent with it: all wait for it
    assert not pacer.idle
    pacer.on_fault(first)  # and that one failed: nothing got through, nothing to guess from
    assert pacer.idle and pacer.rate is None  # the slow start again, not a window shut for ever


async def test_the_slow_start_spreads_its_window_over_the_round_trip():
    clock = FakeTime()
    pacer = Pacer(sleep=clock.sleep, clock=clock)
    first = [pacer.start() for _ in range(START_WINDOW)]  # nothing known yet: at once
    clock.now += 0.2
    for ticket in first:
        pacer.on_success(ticket)  # a round trip of 0.2 s; the window is now 2.5
    sent = [await pacer.turn() for _ in range(2)]
    # one every 0.2 / 2.5 s, not both at once into a bucket that may empty among them
    assert [round(b - a, 6) for a, b in itertools.pairwise(sent)] == [0.08]
    assert pacer.rate is None


async def test_a_429_before_any_answer_holds_the_senders_until_one_comes():
    clock = FakeTime()
    pacer = Pacer(sleep=clock.sleep, clock=clock)
    first, second = pacer.start(), pacer.start()
    pacer.on_push_back(second, pause=1.0)  # the 429 is back before the answer sent with it
    assert not pacer.idle and pacer.paused_until < clock.now
    clock.now += 0.02
    pacer.on_success(first)
    assert pacer.rate is not None  # the answer that came sets the first rate
    # with nothing in flight and nothing through, every sender waits out the Retry-After
    alone = Pacer(sleep=clock.sleep, clock=clock)
    alone.on_push_back(alone.start(), pause=1.0)
    assert alone.paused_until == pytest.approx(clock.now + 1.0)
    await alone.turn()
    assert clock.slept[-1] == pytest.approx(1.0)


def slow_start_then_429(clock: FakeTime, pacer: Pacer, answers: int) -> None:
    """`answers` answers sent 10 ms apart, then a 429 once they are all back."""
    for _ in range(answers):
        ticket = pacer.start()
        clock.now += 0.01
        pacer.on_success(ticket)
    pacer.on_push_back(pacer.start(), pause=1.0)


async def test_a_guessed_first_rate_climbs_until_a_429_that_measures_the_rate():
    clock = FakeTime()
    pacer = Pacer(sleep=clock.sleep, clock=clock)
    slow_start_then_429(clock, pacer, 4)
    emptied = clock.now  # the server's bucket was empty then
    assert pacer.rate == pytest.approx(4.0)  # 4 answers in the second before, counted as a second's
    pacer.on_push_back(pacer.start(), pause=1.0)  # sent into the bucket the slow start emptied
    assert pacer.rate == pytest.approx(4.0)
    accepted = 0
    clock.now += 0.01
    while pacer.rate < 4.0 * CLIMB_STEP**8:
        pacer.on_success(await pacer.turn())
        accepted += 1
    # steps of CLIMB_STEP, CLIMB_TICK or more apart, and a request between (for up to
    # MAX_STEPS_A_SEND of them: a sparse rate climbs by request)
    steps = round(math.log(pacer.rate / 4.0, CLIMB_STEP))
    assert pacer.rate == pytest.approx(4.0 * CLIMB_STEP**steps)
    assert accepted * MAX_STEPS_A_SEND >= steps and clock.now - emptied >= steps * CLIMB_TICK
    before = pacer.rate
    pacer.on_push_back(await pacer.turn(), pause=1.0)  # the bucket is empty again
    # what it accepted in between is its refill (or less: it may have filled up meanwhile, as a
    # replay of every send through a bucket full at the first tells): the rate, a little more
    assert accepted / (clock.now - emptied) * (1 + PROBE) <= pacer.rate <= before * (1 + PROBE)
    climbed = pacer.rate
    clock.now += 5.0
    pacer.on_success(await pacer.turn())  # the climb is over: a probe's small rise
    assert pacer.rate == pytest.approx(climbed * (1 + PROBE))


async def test_a_bucket_one_request_deep_found_by_the_slow_start_is_paced_by_its_gaps():
    clock = FakeTime()
    pacer = Pacer(sleep=clock.sleep, clock=clock)
    first, second = pacer.start(), pacer.start()
    pacer.on_push_back(second, pause=1.0)  # one got through, the next not: a bucket one deep
    clock.now += 0.02
    pacer.on_success(first)
    assert pacer.phase is Phase.ONE_DEEP and pacer.paused_until < clock.now
    # its first turn a first turn after the request it took (not after its answer came back)
    sent = [first, await pacer.turn()]
    assert sent[1] == pytest.approx(first + FIRST_TURN)
    clock.now += 0.02
    pacer.on_success(sent[1])  # that gap answered: the next one shorter
    sent.append(await pacer.turn())
    assert sent[2] - sent[1] < FIRST_TURN
    pacer.on_push_back(sent[2], pause=1.0)  # refused: it took nothing
    # the next turn comes from the last request taken, within the bracket the two gaps drew
    sent.append(await pacer.turn())
    assert sent[2] - sent[1] < sent[3] - sent[1] < FIRST_TURN
    assert pacer.paused_until < clock.now


async def test_a_429_to_the_first_of_two_sent_at_once_finds_the_bucket_one_deep_from_the_second():
    clock = FakeTime()
    pacer = Pacer(sleep=clock.sleep, clock=clock)
    first = pacer.start()
    clock.now += 0.0001
    second = pacer.start()
    clock.now += 0.001
    pacer.on_push_back(first, pause=1.0)  # the server took the second first: one deep
    clock.now += 0.02
    pacer.on_success(second)
    # what got through before the 429 came back tells the bucket (not the slow start once more,
    # whose next two at once would meet the same empty bucket)
    assert pacer.phase is Phase.ONE_DEEP and pacer.paused_until < clock.now


async def test_two_sends_on_one_clock_tick_count_one_by_one():
    clock = FakeTime()  # a coarse clock: both sends read the same time
    pacer = Pacer(sleep=clock.sleep, clock=clock)
    first, second = pacer.start(), pacer.start()
    assert first == second
    pacer.on_push_back(second, pause=1.0)
    clock.now += 0.02
    pacer.on_success(first)
    # one of the two was taken: the first turn counts from it, not from nothing
    assert await pacer.turn() == pytest.approx(first + FIRST_TURN)


async def paced_against_one_deep(
    clock: FakeTime, pacer: Pacer, rate: float, answers: int
) -> tuple[int, float]:
    """`answers` answers from a bucket one request deep at `rate`, the slow start's two sent at
    once, 20 ms a reply and 1 ms a refusal: (429s, the share of what the bucket gave)."""
    bucket = Bucket(clock, rate=rate, depth=1.0)
    outcomes = [(ticket, bucket.take()) for ticket in (pacer.start(), pacer.start())]  # at once
    began = clock.now
    answered, refused, last = 0, 0, began
    while answered < answers:
        if not outcomes:
            ticket = pacer.start() if pacer.idle else await pacer.turn()
            outcomes.append((ticket, bucket.take()))
        ticket, taken = outcomes.pop(0)
        if taken:
            answered, last = answered + 1, clock.now
            clock.now += 0.02
            pacer.on_success(ticket)
        else:
            refused += 1
            clock.now += 0.001
            pacer.on_push_back(ticket, pause=1.0)
    return refused, answered / (1 + rate * (last - began))


@pytest.mark.parametrize("rate", [4.4, 4.7, 5.0, 5.3, 5.6])
async def test_a_bucket_one_request_deep_known_by_its_429s_alone_is_paced_near_its_rate(rate):
    """The whole way, slow start to settled pace, against a bucket one request deep whose rate
    falls anywhere within the climb's steps: 15 seconds of its answers get at least 95% of what the
    bucket gives, for 5% of the calls refused at most (or three, where that is more)."""
    clock = FakeTime()
    answers = round(15 * rate)
    refused, share = await paced_against_one_deep(clock, Pacer(sleep=clock.sleep, clock=clock), rate, answers)
    assert refused <= max(3, 0.05 * (answers + refused))
    assert share >= 0.95


async def test_a_bucket_one_request_deep_is_paced_from_when_a_relayed_request_was_sent():
    clock = FakeTime()
    pacer = Pacer(sleep=clock.sleep, clock=clock)
    await paced_against_one_deep(clock, pacer, 5.0, 30)
    assert pacer.rate is not None
    turn = 1 / pacer.rate
    ticket = await pacer.turn()
    pacer.sent_at(ticket, ticket + 0.01)  # the worker it was relayed to sent it 10 ms later
    pacer.on_success(ticket)
    assert await pacer.turn() == pytest.approx(ticket + 0.01 + turn)  # a turn after that
    later = await pacer.turn()
    pacer.sent_at(later, later + 1.0)  # not a relay's delay (another clock): not taken
    pacer.on_success(later)
    assert await pacer.turn() == pytest.approx(later + turn)


class Bucket:
    """A server's token bucket: `rate` a second, `depth` deep, full at first."""

    def __init__(self, clock: FakeTime, rate: float, depth: float) -> None:
        self.clock, self.rate, self.depth = clock, rate, depth
        self.level, self.at = depth, clock.now

    def take(self) -> bool:
        self.level = min(self.depth, self.level + self.rate * (self.clock.now - self.at))
        self.at = self.clock.now
        if self.level < 1.0:
            return False
        self.level -= 1.0
        return True


async def test_a_shallow_bucket_the_slow_start_overstated_is_measured_from_the_first_send():
    clock = FakeTime()
    pacer = Pacer(sleep=clock.sleep, clock=clock)
    bucket = Bucket(clock, rate=20.0, depth=4.0)
    # the slow start: five through (the fifth refilled meanwhile), then the first 429
    for gap in (0.0, 0.002, 0.026, 0.012, 0.012, 0.011):
        clock.now += gap
        ticket = pacer.start()
        pacer.on_success(ticket) if bucket.take() else pacer.on_push_back(ticket, pause=1.0)
    assert pacer.rate == pytest.approx(5.0)  # five in the second before: a depth of five, overstated
    while True:  # the climb, to its first 429
        ticket = await pacer.turn()
        if not bucket.take():
            pacer.on_push_back(ticket, pause=1.0)
            break
        pacer.on_success(ticket)
    # every send replayed through a bucket full at the first tells its depth, four, and its rate
    # within a bracket about 20 (counted from the first 429, with five, it was 16 or less)
    assert 19.0 <= pacer.rate / (1 + PROBE) <= 22.5


async def test_a_climb_whose_first_429_comes_too_soon_starts_again_lower():
    clock = FakeTime()
    pacer = Pacer(sleep=clock.sleep, clock=clock)
    slow_start_then_429(clock, pacer, 40)
    assert pacer.rate == pytest.approx(40.0)
    pacer.on_push_back(await pacer.turn(), pause=1.0)  # 1 / 40 s after the slow start's: too soon
    assert pacer.rate == pytest.approx(40.0 / CLIMB_STEP**2)
    assert pacer.paused_until < clock.now


def test_the_rate_follows_the_successes_sent_between_two_429s():
    evidence = RateEvidence()
    now = 0.0
    evidence.push_back(now, now)
    for _ in range(50):  # 50 accepted in 2 s between two push-backs: 25 a second
        now += 0.04
        evidence.success(now, now + 0.02)
    evidence.push_back(now + 0.001, now + 0.001)
    assert evidence.rate_bound(now + 0.001) is None  # the answers sent before it may be on their way
    assert evidence.rate_bound(now + 0.1) == pytest.approx(25.0, rel=0.01)


def test_a_bucket_replayed_brackets_its_rate():
    # a bucket of 4 refilling 20 a second, empty at 0, sent to ever faster (8 up to 40 a second)
    rate, depth = 20.0, 4.0
    held, at, now, pace = 0.0, 0.0, 0.0, 8.0
    taken = []
    while True:
        now += 1 / pace
        pace *= 1.1
        held = min(depth, held + rate * (now - at))
        at = now
        if held < 1:
            break  # the first refused
        held -= 1
        taken.append(now)
    least, most = bucket_bracket(0.0, taken, now, depth)
    assert least <= rate <= most and most / least < 1.25
    # what it took, sent as they were, could not have been taken at 10% less
    assert least > rate * 0.9
    # a bucket that took nothing bounds its rate from above only
    assert bucket_bracket(0.0, [], 0.5, depth)[1] == pytest.approx(2.0, rel=1e-6)


async def test_headers_set_the_rate_and_the_copy_of_the_bucket():
    clock = FakeTime()
    pacer = Pacer(sleep=clock.sleep, clock=clock)
    ticket = pacer.start()
    pacer.on_success(ticket, RateReading(requests_limit=10, requests_remaining=0, requests_reset=1.0))
    # a bucket of 10 emptied, whole again in 1 s: 9 a second at least (the counts are whole)
    assert pacer.rate == pytest.approx(9.0) and pacer.capacity == 10.0
    started = clock.now
    await pacer.turn()  # nothing left: the next request waits for the bucket to hold one again
    assert clock.now - started == pytest.approx(1 / 9.0)


async def test_the_copy_of_the_bucket_does_not_count_requests_the_server_refused():
    clock = FakeTime()
    pacer = Pacer(sleep=clock.sleep, clock=clock)
    answered = pacer.start()
    clock.now += 0.001
    refused = pacer.start()
    pacer.on_push_back(refused, pause=1.0)  # sent after the answered one, but took nothing
    pacer.on_success(answered, RateReading(requests_limit=10, requests_remaining=0, requests_reset=1.0))
    started = clock.now
    await pacer.turn()
    assert clock.now - started == pytest.approx(1 / 9.0, abs=0.002)  # one token's time, not two


async def test_a_reply_read_first_does_not_free_what_the_requests_sent_beside_it_took():
    """Requests sent at once reach the server in any order: the reply read first may be the one
    counted first, its headers telling what was left before the others took theirs."""
    clock = FakeTime()
    pacer = Pacer(sleep=clock.sleep, clock=clock)
    first = pacer.start()
    clock.now += 0.02
    # 8 left of 10, whole again in 0.2 s: 5 a second at least, and room for 8 at once
    pacer.on_success(first, RateReading(requests_limit=10, requests_remaining=8, requests_reset=0.2))
    burst = [await pacer.turn() for _ in range(8)]
    assert clock.now == pytest.approx(first + 0.02)  # the copy of the bucket let all 8 go at once
    clock.now += 0.02
    # the last sent reached the server first: 7 left then, and the other 7 have taken them since
    pacer.on_success(burst[-1], RateReading(requests_limit=10, requests_remaining=7, requests_reset=0.6))
    started = clock.now
    await pacer.turn()
    assert clock.now - started >= 0.5 / pacer.rate  # not at once: the bucket is (about) empty


async def test_a_reply_slow_to_come_back_does_not_stall_the_senders():
    """Its count is from before every request sent since (a slow judge's replies come back in any
    order): read like a fresh one's, 30 of them would owe the bucket 3 s."""
    clock = FakeTime()
    pacer = Pacer(sleep=clock.sleep, clock=clock)
    slow = pacer.start()
    clock.now += 0.01
    first = pacer.start()
    clock.now += 0.02
    pacer.on_success(first, RateReading(requests_limit=10, requests_remaining=8, requests_reset=0.2))
    sent = []
    for _ in range(30):  # 10 a second for 3 s, each answered
        sent.append(await pacer.turn())
        pacer.on_success(sent[-1], RateReading(requests_limit=10, requests_remaining=1, requests_reset=0.9))
    pacer.on_success(slow, RateReading(requests_limit=10, requests_remaining=8, requests_reset=0.2))
    started = clock.now
    await pacer.turn()
    assert clock.now - started < 0.5


ONE_DEEP = RateReading(requests_limit=1, requests_remaining=0, requests_reset=0.2)


async def test_a_rate_the_headers_tell_exactly_is_kept_not_probed_above():
    clock = FakeTime()
    pacer = Pacer(sleep=clock.sleep, clock=clock)
    pacer.on_success(pacer.start(), ONE_DEEP)
    sends = []
    for _ in range(50):  # 10 s without a 429: a probe would have risen long before
        sends.append(await pacer.turn())
        pacer.on_success(sends[-1], ONE_DEEP)
    assert pacer.rate == pytest.approx(5.0 * (1 - ONE_DEEP_MARGIN))
    gaps = {round(later - earlier, 6) for earlier, later in itertools.pairwise(sends)}
    assert gaps == {round(0.2 / (1 - ONE_DEEP_MARGIN), 6)}


async def test_a_push_back_from_a_bucket_one_request_deep_sends_again_at_its_reset():
    clock = FakeTime()
    pacer = Pacer(sleep=clock.sleep, clock=clock)
    pacer.on_success(pacer.start(), ONE_DEEP)
    early = await pacer.turn()
    # it came 20 ms before the server's request was back (the one before it reached it late)
    soon = RateReading(requests_limit=1, requests_remaining=0, requests_reset=0.02)
    pacer.on_push_back(early, pause=1.0, reading=soon)
    again = await pacer.turn()
    assert again - early == pytest.approx(0.02 / (1 - ONE_DEEP_MARGIN))  # not a whole turn later


async def test_a_slow_reply_from_a_bucket_one_request_deep_moves_the_next_turn_by_its_delay():
    clock = FakeTime()
    pacer = Pacer(sleep=clock.sleep, clock=clock)
    first = pacer.start()
    clock.now += 0.02  # the fastest round trip
    pacer.on_success(first, ONE_DEEP)
    sent = await pacer.turn()
    clock.now += 0.03  # 10 ms slower: it most likely reached the server 10 ms late
    pacer.on_success(sent, ONE_DEEP)
    after = await pacer.turn()
    assert after - sent == pytest.approx(0.01 + 0.2 / (1 - ONE_DEEP_MARGIN), abs=0.001)


class SteppedTime(FakeTime):
    """A clock the test moves (`advance`); a sleep lasts until the clock reaches its end."""

    def __init__(self) -> None:
        super().__init__()
        self.sleepers: list[tuple[float, asyncio.Future[None]]] = []

    async def sleep(self, seconds: float) -> None:
        woken = asyncio.get_running_loop().create_future()
        self.sleepers.append((self.now + seconds, woken))
        await woken

    async def advance(self, seconds: float) -> None:
        self.now += seconds
        for until, woken in self.sleepers:
            if until <= self.now and not woken.done():
                woken.set_result(None)
        for _ in range(5):  # let the woken senders run
            await asyncio.sleep(0)


async def test_a_faster_rate_frees_the_senders_waiting_at_the_slower_one_at_once():
    clock = SteppedTime()
    pacer = Pacer(sleep=clock.sleep, clock=clock)
    slow = RateReading(requests_limit=10, requests_remaining=0, requests_reset=10.0)
    pacer.on_success(pacer.start(), slow)
    assert pacer.rate == pytest.approx(0.9)
    waiting = [asyncio.ensure_future(pacer.turn()) for _ in range(3)]
    await clock.advance(0.01)
    assert not any(sender.done() for sender in waiting)  # 1.1, 2.2 and 3.3 s away
    fast = RateReading(requests_limit=10, requests_remaining=0, requests_reset=0.1)
    pacer.on_success(pacer.start(), fast)
    assert pacer.rate == pytest.approx(90.0)
    # they take new turns, 1/90 s apart, instead of going on waiting out the old ones
    await clock.advance(0.01)
    await clock.advance(0.01)
    await clock.advance(0.02)
    assert all(sender.done() for sender in waiting)


async def test_a_reply_saying_nothing_is_left_pauses_until_its_reset_while_no_rate_is_known():
    clock = FakeTime()
    pacer = Pacer(sleep=clock.sleep, clock=clock)
    pacer.on_success(
        pacer.start(), RateReading(requests_limit=100, requests_remaining=100, requests_reset=0.0)
    )
    assert pacer.idle  # requests left: no pause
    pacer.on_success(pacer.start(), RateReading(tokens_remaining=50, tokens_reset=0.5), 400)
    # fewer tokens left than a request needs is as good as nothing left
    assert pacer.paused_until == pytest.approx(clock.now + 0.5)


async def measured_by_a_climb(clock: FakeTime, pacer: Pacer) -> None:
    """A rate the climb's first 429 measured (a bucket five deep)."""
    slow_start_then_429(clock, pacer, 5)
    for _ in range(10):
        pacer.on_success(await pacer.turn())
    pacer.on_push_back(await pacer.turn(), pause=2.0)


async def settled_one_deep(clock: FakeTime, pacer: Pacer) -> None:
    """A pace settled in a bucket one request deep (`pacing.one_deep.GapBracket`)."""
    await paced_against_one_deep(clock, pacer, 5.0, 30)


@pytest.mark.parametrize("paced", [measured_by_a_climb, settled_one_deep])
async def test_429s_in_a_row_at_the_current_rate_pause_every_sender_and_slow_down(paced):
    clock = FakeTime()
    pacer = Pacer(sleep=clock.sleep, clock=clock)
    await paced(clock, pacer)
    # a quota, not a bucket: every request sent at the new rate is refused
    for _ in range(STUCK):
        before = pacer.rate
        assert before is not None
        pacer.on_push_back(await pacer.turn(), pause=2.0)
        if pacer.paused_until > clock.now:
            break
    assert pacer.paused_until == pytest.approx(clock.now + 2.0)
    assert pacer.rate < before * DECREASE * 1.1


# -- rate limits against the scripted server -------------------------------------------------------


def chat_body(content: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-paced",
        "object": "chat.completion",
        "model": "judge-m",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def message_body(content: str) -> dict[str, Any]:
    return {
        "id": "msg_paced",
        "type": "message",
        "role": "assistant",
        "model": "judge-m",
        "content": [{"type": "text", "text": content}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


def openai_headers(remaining: int, reset: str, limit: int = 100) -> dict[str, str]:
    return {
        "x-ratelimit-limit-requests": str(limit),
        "x-ratelimit-remaining-requests": str(remaining),
        "x-ratelimit-reset-requests": reset,
        "x-ratelimit-limit-tokens": "100000",
        "x-ratelimit-remaining-tokens": "99000",
        "x-ratelimit-reset-tokens": "600ms",
    }


def anthropic_headers(
    remaining: int, reset_in: float, limit: int = 100, *, at: datetime | None = None
) -> dict[str, str]:
    reset = ((at or datetime.now(UTC)) + timedelta(seconds=reset_in)).isoformat().replace("+00:00", "Z")
    return {
        "anthropic-ratelimit-requests-limit": str(limit),
        "anthropic-ratelimit-requests-remaining": str(remaining),
        "anthropic-ratelimit-requests-reset": reset,
        "anthropic-ratelimit-tokens-limit": "100000",
        "anthropic-ratelimit-tokens-remaining": "99000",
        "anthropic-ratelimit-tokens-reset": reset,
    }


def make_judge(protocol: str, server, session) -> OpenAIJudge | AnthropicJudge:
    if protocol == "openai":
        return OpenAIJudge(PARAMS, session=session, base_url=server.url, timeout=2)
    return AnthropicJudge(PARAMS, session=session, base_url=server.anthropic_url, api_key=KEY, timeout=2)


def limited_reply(protocol: str, retry_after: str = "0.05") -> Raw:
    if protocol == "openai":
        body: dict[str, Any] = {"error": {"message": "Rate limit reached for requests", "type": "requests"}}
        return Raw(429, body, {"retry-after": retry_after, **openai_headers(0, "50ms")})
    body = {"type": "error", "error": {"type": "rate_limit_error", "message": "Number of requests exceeded"}}
    return Raw(429, body, {"retry-after": retry_after, **anthropic_headers(0, 0.05)})


def ok_reply(protocol: str, remaining: int, reset: float, limit: int = 100) -> Raw:
    if protocol == "openai":
        return Raw(200, chat_body(REPLY), openai_headers(remaining, f"{round(reset * 1000)}ms", limit))
    return Raw(200, message_body(REPLY), anthropic_headers(remaining, reset, limit))


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
async def test_a_429_burst_longer_than_the_retries_loses_nothing(judge_server, http_session, protocol):
    server = await judge_server([limited_reply(protocol)] * 8 + [ok_reply(protocol, 50, 0.5)])
    judge = make_judge(protocol, server, http_session)
    policy = RetryPolicy(attempts=2, timeout=2, base_delay=0.01, max_delay=0.02)  # --retries 1
    completion, retries = await call_with_retries(judge, MESSAGES, policy, ExchangeGate(4))
    assert completion.content == REPLY and retries == 8
    assert server.calls == 9 and server.rejections == []


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
async def test_faults_still_count_between_rate_limits(judge_server, http_session, protocol):
    limited = limited_reply(protocol)
    server = await judge_server([limited, Fault.ERROR_500, limited, limited, Fault.ERROR_500, REPLY])
    policy = RetryPolicy(attempts=2, timeout=2, base_delay=0.01, max_delay=0.02)
    with pytest.raises(TransportError, match=r"HTTP 500.*\(gave up after 2 attempts\)"):
        await call_with_retries(make_judge(protocol, server, http_session), MESSAGES, policy, ExchangeGate(4))
    assert server.calls == 5  # three rate limits waited out, two faults spent the attempts


async def test_a_503_with_retry_after_is_waited_out_not_counted(judge_server, http_session):
    busy = Raw(503, {"error": {"message": "overloaded", "type": "server_error"}}, {"retry-after": "0.01"})
    server = await judge_server([busy] * 4 + [REPLY])
    policy = RetryPolicy(attempts=1, timeout=2, base_delay=0.01, max_delay=0.02)  # --retries 0
    judge = make_judge("openai", server, http_session)
    completion, _ = await call_with_retries(judge, MESSAGES, policy, ExchangeGate(4))
    assert completion.content == REPLY and server.calls == 5


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
async def test_the_rate_limit_deadline_ends_the_call_with_its_cause(judge_server, http_session, protocol):
    server = await judge_server([limited_reply(protocol, retry_after="0.02")])
    policy = RetryPolicy(attempts=3, timeout=2, rate_limit_wait=0.4)
    started = time.monotonic()
    with pytest.raises(
        TransportError, match=r"rate limited \(HTTP 429\).*still rate limited after \d+ s of waiting"
    ) as info:
        await call_with_retries(make_judge(protocol, server, http_session), MESSAGES, policy, ExchangeGate(2))
    assert 0.4 <= time.monotonic() - started < 3.0
    assert info.value.status == 429 and KEY not in str(info.value)
    assert server.calls > 3  # more than the attempts: the rate limits were not counted as such


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
async def test_nothing_left_holds_the_next_request_until_the_reset(protocol):
    """In virtual time, each reading parsed from the headers the provider sends (a loaded machine
    neither delays the sends nor shortens an RFC 3339 reset here)."""
    clock = FakeTime()
    pacer = Pacer(sleep=clock.sleep, clock=clock)
    wall = datetime(2026, 1, 1, tzinfo=UTC)

    def reading(remaining: int, reset: float) -> RateReading | None:
        if protocol == "openai":
            return openai_reading(openai_headers(remaining, f"{round(reset * 1000)}ms", 4))
        headers = anthropic_headers(remaining, reset, 4, at=wall)
        return anthropic_reading(headers, now=wall.timestamp())

    async def send() -> float:
        return pacer.start() if pacer.idle else await pacer.turn()

    # a bucket of 4: 3 left, then none (whole again in 400 ms: 7.5 a second at least)
    sends = [await send()]
    clock.now += 0.02
    pacer.on_success(sends[-1], reading(3, 0.05))
    sends.append(await send())
    clock.now += 0.02
    pacer.on_success(sends[-1], reading(0, 0.4))
    sends.append(await send())
    # after "3 left" the next request goes at once (its reply back); after "0 left of 4, whole in
    # 400 ms" it waits until the bucket holds one again: 1 / 7.5 s after the request it counted
    assert sends[1] - sends[0] == pytest.approx(0.02)
    assert sends[2] - sends[1] == pytest.approx(1 / 7.5)


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
async def test_a_bucket_one_request_deep_tells_its_rate_by_its_reset(judge_server, http_session, protocol):
    accepted: list[float] = []
    refused = 0
    rate = 5.0  # one request deep, whole again 200 ms after each

    def responder(body: dict[str, Any]) -> Raw:
        nonlocal refused
        now = time.monotonic()
        if accepted and now - accepted[-1] < 1 / rate:
            refused += 1
            left = 1 / rate - (now - accepted[-1])
            if protocol == "openai":
                headers = openai_headers(0, f"{max(1, round(left * 1000))}ms", 1)
            else:
                headers = anthropic_headers(0, left, 1)
            return Raw(429, limited_reply(protocol).body, {"retry-after": "1", **headers})
        accepted.append(now)
        return ok_reply(protocol, 0, 1 / rate, 1)

    server = await judge_server(responder)
    judge = make_judge(protocol, server, http_session)
    limiter = ExchangeGate(8)
    policy = RetryPolicy(timeout=2)
    await asyncio.gather(*(call_with_retries(judge, MESSAGES, policy, limiter) for _ in range(6)))
    # "none left of 1, whole in 200 ms" is the rate itself: 5 a second (the lower bound the
    # whole counts give deeper buckets would be none at all)
    assert limiter.pacer.rate == pytest.approx(rate, rel=0.1)
    # the slow start's second request at least; a request or two the network delayed or hurried
    assert len(accepted) == 6 and refused <= 3
    assert accepted[-1] - accepted[0] < 5 / rate + 0.5


async def test_rpm_starts_with_a_small_burst_over_http(judge_server, http_session):
    arrivals: list[float] = []

    def responder(body: dict[str, Any]) -> str:
        arrivals.append(time.monotonic())
        return REPLY

    server = await judge_server(responder)
    judge = make_judge("openai", server, http_session)
    limiter = ExchangeGate(16, rate=RateLimit(rpm=1200))  # 20 a second
    policy = RetryPolicy(timeout=2)
    await asyncio.gather(*(call_with_retries(judge, MESSAGES, policy, limiter) for _ in range(30)))
    arrivals.sort()
    # a second's worth (20) at once, the other 10 at 20 a second (0.5 s); a bucket holding a
    # minute's worth (1,200) would let all 30 go at once
    assert arrivals[29] - arrivals[0] >= 0.4


# -- through `tabench grade` -----------------------------------------------------------------------


def write_answers(path: Path, count: int) -> None:
    lines = [{"system": f"s{i}", "question": "h03", "answer": f"blue, answer {i}"} for i in range(count)]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")


def grade_argv(tmp_path: Path, url: str, *extra: str) -> list[str]:
    battery = write_battery(tmp_path)
    answers = tmp_path / "answers.jsonl"
    write_answers(answers, 6)
    return [
        "grade",
        str(battery),
        "--answers",
        str(answers),
        "--out",
        str(tmp_path / "results.jsonl"),
        "--judge",
        url,
        "--model",
        "m",
        "--no-cache",
        "--timeout",
        "5",
        *extra,
    ]


def records(tmp_path: Path) -> list[dict[str, Any]]:
    text = (tmp_path / "results.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


async def test_grade_loses_no_answer_to_a_long_rate_limit(tmp_path, judge_server, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    served = 0

    def responder(body: dict[str, Any]) -> str | Fault:
        nonlocal served
        served += 1
        return Fault.RATE_LIMIT if served <= 30 else PASS  # 30 429s for 6 answers, --retries 1

    server = await judge_server(responder, retry_after="0.02")
    status = await asyncio.to_thread(main, grade_argv(tmp_path, server.url, "--retries", "1"))
    assert status == 0, capsys.readouterr().err
    got = records(tmp_path)
    assert len(got) == 6 and {r["verdict"] for r in got} == {"pass"}


async def test_grade_rate_limit_wait_ends_an_answer_as_error(tmp_path, judge_server, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    server = await judge_server([Fault.RATE_LIMIT], retry_after="0.05")
    argv = grade_argv(tmp_path, server.url, "--rate-limit-wait", "0.005")  # 0.3 s
    status = await asyncio.to_thread(main, argv)
    assert status == 1
    got = records(tmp_path)
    assert len(got) == 6 and {r["verdict"] for r in got} == {"error"}
    assert all("still rate limited after" in r["reason"] for r in got)
    assert {r["cause"] for r in got} == {"rate_limit"}  # SPEC 8: the deadline's own cause
    capsys.readouterr()


def test_rate_limit_wait_must_not_be_negative(tmp_path, capsys):
    status = main(grade_argv(tmp_path, "http://127.0.0.1:9/v1", "--rate-limit-wait", "-1"))
    assert status == 2
    assert "--rate-limit-wait must be 0 or more" in capsys.readouterr().err
