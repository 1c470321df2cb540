"""The pacer as a state machine, judged in virtual time: the gap bracket of a bucket one request deep
(`pacing.one_deep`) transition by transition, then the real pacer, transport and shared pacer
against simulated servers (`support.pacing_sim`): each phase reached the way its server calls for,
each pathological server survived, and every limit of the rate-limit bench's sweep held."""

from __future__ import annotations

import math

import pytest
from support.pacing_sim import Server, simulate

from tabench_dsl.grading.pacing.one_deep import GapBracket
from tabench_dsl.grading.pacing.settings import (
    ARRIVAL_JITTER,
    FELL_RECHECK,
    FELL_RECHECK_ANSWERS,
    FIRST_TURN,
    HOLD_BACKOFF,
    HOLD_EASING,
    HOLD_START,
    LOW_PROBE,
    ONE_DEEP_CLIMB,
    ONE_DEEP_CREEP,
    ONE_DEEP_STEP,
    SETTLED_WIDTH,
)

# -- the gap bracket, one transition at a time -----------------------------------------------------


def test_nothing_answered_the_first_turn_then_a_slower_one_once_refused():
    bracket = GapBracket()
    assert bracket.gap() == FIRST_TURN
    bracket.refuse(FIRST_TURN)
    assert bracket.gap() == pytest.approx(LOW_PROBE * FIRST_TURN)


def test_the_climb_doubles_where_429s_are_spared_and_steps_where_few_are():
    slow = GapBracket()
    slow.answer(0.28)  # 3.6 a second: 15 s of it spare two 429s
    assert slow.gap() == pytest.approx(0.28 / ONE_DEEP_STEP)
    fast = GapBracket()
    fast.answer(0.05)  # 20 a second: 15 s of it spare twelve
    assert fast.gap() == pytest.approx(0.05 / ONE_DEEP_CLIMB)


def test_a_refusal_below_the_gap_answered_brackets_and_its_middle_is_tried_with_429s_to_spare():
    bracket = GapBracket()
    bracket.answer(0.05)
    bracket.refuse(0.025)
    assert bracket.gap() == pytest.approx(math.sqrt(0.05 * 0.025))
    bracket.answer(bracket.gap())  # answered: the bracket halves from below, at no cost
    assert bracket.answered == pytest.approx(math.sqrt(0.05 * 0.025))
    assert bracket.refusals == 2  # the slow start's, which found the bucket, and this one


def test_the_429s_spared_count_the_slow_starts_and_stay_within_five_percent():
    # 5 a second, 15 s of it: 75 answers, so 3 refusals in all (4 would be 5.1% of 79 calls), the
    # slow start's included, however close to the limit the fastest gap answered came.
    bracket = GapBracket()
    bracket.answer(0.199)
    assert bracket.refusals + bracket.spare == 3


def test_with_one_429_to_spare_the_pace_creeps_and_with_none_it_stays():
    bracket = GapBracket()
    bracket.answer(0.28)
    bracket.refuse(0.2)  # two spared at 3.6 a second: one left
    assert bracket.gap() == pytest.approx(0.28 / ONE_DEEP_CREEP + ARRIVAL_JITTER)
    bracket.answer(0.28 / ONE_DEEP_CREEP + ARRIVAL_JITTER)
    bracket.refuse(0.26)  # none left: the gap answered, a jitter more, however wide the bracket
    assert bracket.spare <= 0
    assert bracket.gap() == pytest.approx(bracket.answered + ARRIVAL_JITTER)


def test_a_settled_bracket_with_429s_to_spare_is_held_where_a_few_arrive_early():
    bracket = GapBracket()
    bracket.answer(0.0201)
    bracket.refuse(0.0201 / SETTLED_WIDTH)
    held = bracket.gap()
    assert held == pytest.approx(0.0201 * (1 + HOLD_START))
    bracket.answer(held)
    assert bracket.gap() == pytest.approx(held * (1 - HOLD_EASING))
    bracket.refuse(bracket.gap())  # arrived early: a step back
    assert bracket.gap() == pytest.approx(held * (1 - HOLD_EASING) * (1 + HOLD_BACKOFF))


def test_a_bracket_narrower_than_the_margin_a_pace_keeps_is_settled():
    bracket = GapBracket(jitter=0.003)
    bracket.answer(0.1005)
    bracket.refuse(0.099)  # 1.5 ms apart, under the 2 ms margin: probing would find the jitter
    assert bracket.gap() == pytest.approx(0.1005 * (1 + HOLD_START))
    wide = GapBracket(jitter=0.003)
    wide.answer(0.1005)
    wide.refuse(0.096)  # 4.5 ms apart: its middle is tried
    assert wide.gap() == pytest.approx(math.sqrt(0.1005 * 0.096))
    fast = GapBracket(jitter=0.003)
    fast.answer(0.0216)
    fast.refuse(0.0188)  # under the jitter, but 13% of a turn (50 a second): still probed
    assert fast.gap() == pytest.approx(math.sqrt(0.0216 * 0.0188))


def test_two_refusals_in_a_row_at_a_pace_once_answered_mean_the_limit_fell():
    bracket = GapBracket()
    bracket.answer(0.28)
    bracket.refuse(0.2)
    bracket.refuse(0.28)  # at the gap answered: early, perhaps; the pace answered still stands
    assert bracket.answered == 0.28 and bracket.refused == 0.2
    bracket.refuse(0.29)  # again, before any answer: the limit fell
    assert bracket.answered == pytest.approx(0.29 * ONE_DEEP_STEP)
    assert bracket.refused == pytest.approx(0.29)
    assert bracket.gap() > 0.29


def fallen_bracket() -> GapBracket:
    """A bracket whose limit fell at 0.1 s (two refusals in a row at a gap once answered), with no
    429 left to spare (a loaded machine's bunching spent them), so nothing but the recheck probes."""
    bracket = GapBracket()
    bracket.answer(0.1)
    for _ in range(4):
        bracket.refuse(None)
    bracket.refuse(0.1)
    bracket.refuse(0.1)
    assert bracket.answered == pytest.approx(0.1 * ONE_DEEP_STEP)
    return bracket


def answer_until_the_recheck(bracket: GapBracket) -> float:
    """Answers at the paced gap until the gap a fall is rechecked at comes (in FELL_RECHECK seconds
    of answers, a turn more at most); that gap."""
    for _ in range(1 + max(FELL_RECHECK_ANSWERS, math.ceil(FELL_RECHECK / (0.1 * ONE_DEEP_STEP)))):
        gap = bracket.gap()
        if gap < 0.1 * ONE_DEEP_STEP:
            return gap
        bracket.answer(gap)
    raise AssertionError("no recheck")


def test_a_fall_is_rechecked_once_and_an_answer_there_puts_the_pace_back():
    """A loaded machine's bunching read as a fall would leave the pace a step slower for good."""
    bracket = fallen_bracket()
    recheck = answer_until_the_recheck(bracket)
    assert recheck == pytest.approx(bracket.recheck_gap()) and recheck < 0.1 * 1.03
    bracket.answer(recheck)
    assert bracket.gap() < 0.1 * 1.06  # was 0.126: the margin widened by the refusals, no more
    assert bracket.fell_answers is None


def test_a_fall_the_recheck_confirms_stays_down_and_is_not_rechecked_again():
    bracket = fallen_bracket()
    recheck = answer_until_the_recheck(bracket)
    refusals = bracket.refusals
    bracket.refuse(recheck)
    assert bracket.refusals == refusals + 1 and bracket.fell_answers is None
    for _ in range(50):
        gap = bracket.gap()
        assert gap > recheck or bracket.spare > 0  # only the 429s spared probe again
        bracket.answer(gap)


def test_an_answer_at_a_gap_once_refused_opens_the_bracket_again():
    bracket = GapBracket()
    bracket.answer(0.1)
    bracket.refuse(0.08)
    bracket.answer(0.079)  # the limit rose
    assert bracket.refused is None and bracket.answered == 0.079


def test_an_outcome_at_a_gap_nobody_knows_spends_its_429_and_moves_nothing():
    """The client's process paused (`Pacer._paused_about`): the gap the server saw is unknown."""
    bracket = GapBracket()
    bracket.answer(0.1)
    bracket.refuse(0.098)
    before = (bracket.answered, bracket.refused, bracket.held, bracket.in_a_row, bracket.widened)
    refusals, answers = bracket.refusals, bracket.answers
    for _ in range(3):  # three in a row at a gap once answered would mean the limit fell
        bracket.refuse(None)
    assert (bracket.answered, bracket.refused, bracket.held, bracket.in_a_row, bracket.widened) == before
    bracket.answer(None)
    assert bracket.answered == 0.1 and bracket.refused == 0.098
    assert (bracket.refusals, bracket.answers) == (refusals + 3, answers + 1)


# -- the phases, reached the way the server calls for ------------------------------------------


@pytest.mark.parametrize(
    ("server", "phases"),
    [
        (Server(rate=20, depth=4, answers=300), ("SLOW_START", "AWAITING", "CLIMBING", "FOLLOWING")),
        (Server(rate=5, depth=1, answers=75), ("SLOW_START", "AWAITING", "ONE_DEEP")),
        (Server(rate=20, depth=4, answers=300, headers=True), ("SLOW_START", "FOLLOWING")),
        (Server(rate=5, depth=1, answers=75, headers=True), ("SLOW_START", "AWAITING", "TOLD")),
    ],
    ids=["deep", "one-deep", "deep-headers", "one-deep-headers"],
)
def test_each_server_takes_the_pacer_through_its_phases(server, phases):
    figures = simulate(server)
    assert figures.phases == phases
    assert figures.met()


@pytest.mark.parametrize("depth", [4, 1])
def test_a_quota_pauses_every_sender_and_loses_nothing(depth):
    """Nothing refills from 3 s to 6 s: the 429s in a row at the current rate are a quota, every
    sender waits out its Retry-After, and no answer is lost."""
    rate = 20.0 if depth > 1 else 5.0
    figures = simulate(Server(rate=rate, depth=depth, answers=75, schedule=((3.0, 1e-6), (6.0, rate))))
    assert "PAUSED" in figures.phases and figures.phases[-1] != "PAUSED"
    assert figures.lost == 0


# -- pathological servers ----------------------------------------------------------------------


@pytest.mark.parametrize("retry_after", [None, 0.0, 3600.0], ids=["none", "zero", "an-hour"])
@pytest.mark.parametrize("depth", [4, 1])
def test_a_429s_retry_after_neither_stalls_nor_hurries_the_pace(retry_after, depth):
    """No Retry-After, one of 0 (no reason to ask again at once) or of an hour (the pace does not
    wait it out while answers prove the rate): the limit is held all the same."""
    rate = 20.0 if depth > 1 else 5.0
    figures = simulate(Server(rate=rate, depth=depth, answers=round(15 * rate), retry_after=retry_after))
    assert figures.met()
    assert figures.seconds < 16.0


@pytest.mark.parametrize(
    ("server", "least"),
    [
        (Server(rate=20, depth=20, answers=300, schedule=((5.0, 10.0),)), 0.95),
        (Server(rate=20, depth=4, answers=300, schedule=((5.0, 10.0),)), 0.95),
        (Server(rate=100, depth=20, answers=1500, headers=True, schedule=((5.0, 50.0),)), 0.95),
        (Server(rate=10, depth=1, answers=150, schedule=((5.0, 5.0),)), 0.80),
    ],
    ids=["deep", "shallow", "headers", "one-deep"],
)
def test_a_limit_that_halves_mid_run_is_followed(server, least):
    figures = simulate(server)
    assert figures.lost == 0 and figures.share >= least
    assert figures.limited_share <= 0.1


@pytest.mark.parametrize(("workers", "seed"), [(1, 3), (2, 2)])
def test_a_client_paused_now_and_then_is_no_sign_the_limit_fell(workers, seed):
    """A loaded machine pauses the client's process 50-100 ms, 1.5 times a second: the requests it
    had queued leave bunched, and a few are refused. Read as "the limit fell", they stepped the
    pace down for good (these seeds: 55% and 69% of the limit). The pauses themselves cost about
    7% (a turn due in one goes at its end)."""
    figures = simulate(Server(rate=10, depth=1, answers=250, pauses=1.5, workers=workers, seed=seed))
    assert figures.lost == 0 and figures.share >= 0.88, figures


@pytest.mark.parametrize("rate", [10.0, 2.0])
def test_a_judge_uneven_to_answer_is_no_sign_its_requests_arrived_late(rate):
    """Replies of 0.5 s plus an exponential 0.2 s (a language model's time to answer varies): a
    reply slower than the fastest says nothing of when its request arrived. Read as lateness, it
    moved every turn on and left most outcomes unread (10 a second: 57% of the limit; 2: 84%, with
    18 of 48 calls refused). Replies that slow still teach the pace late: 83-85% at 10 a second."""
    server = Server(rate=rate, depth=1, answers=round(15 * rate), latency=0.5, latency_spread=0.2)
    figures = simulate(server)
    assert figures.lost == 0 and figures.share >= 0.8, figures
    assert figures.limited <= max(4, 0.05 * figures.calls), figures


@pytest.mark.parametrize("step", [5.0, -5.0], ids=["forward", "back"])
@pytest.mark.parametrize("depth", [4, 1])
def test_a_clock_step_costs_no_waiting(step, depth):
    """The clock the pacer reads jumps 5 s 3 s into the run: forward, or back (the turns it owed
    would otherwise wait the step out)."""
    rate = 20.0 if depth > 1 else 5.0
    figures = simulate(Server(rate=rate, depth=depth, answers=round(15 * rate), clock_step=(3.0, step)))
    assert figures.met()
    assert figures.seconds < 16.0


# -- every limit of the sweep --------------------------------------------------------------------


def sweep_points() -> list:
    """The rate-limit bench's sweep (`bench/ratelimit_bench.py --sweep`), one and two workers, and
    the 2,000 answers at 100 a second with a 20-request burst; the misses still known xfail."""
    known_short = {
        (50.0, 1.0, False): "one deep at 50/s: the arrival jitter the bench's mock measured (p99 1-2.5 "
        "ms, 5-12% of a turn; `support.pacing_sim`) holds it near 88%, as in real runs",
    }
    points = []
    for workers in (1, 2):
        for rate in (5.0, 20.0, 100.0, 500.0):
            for burst in (1.0, 0.2):
                for headers in (True, False):
                    points.append((rate, max(1.0, rate * burst), headers, workers, round(15 * rate)))
        for rate in (1.0, 2.0, 5.0, 10.0, 50.0):
            points.append((rate, 1.0, False, workers, max(40, round(15 * rate))))
    points += [(100.0, 20.0, headers, 1, 2000) for headers in (False, True)]
    return [
        pytest.param(
            *point,
            marks=[pytest.mark.slow]
            + (
                [pytest.mark.xfail(strict=True, reason=known_short[point[:3]])]
                if point[:3] in known_short
                else []
            ),
            id=f"{point[3]}w-{point[0]:g}/s-depth{point[1]:g}-{'headers' if point[2] else 'bare'}-{point[4]}",
        )
        for point in dict.fromkeys(points)
    ]


@pytest.mark.parametrize(("rate", "depth", "headers", "workers", "answers"), sweep_points())
def test_every_limit_of_the_sweep_is_held_in_virtual_time(rate, depth, headers, workers, answers):
    figures = simulate(Server(rate=rate, depth=depth, headers=headers, workers=workers, answers=answers))
    assert figures.met(), figures


@pytest.mark.parametrize("rate", [2.0, 5.0, 10.0])
def test_a_strict_gateway_one_request_deep_is_held(rate):
    """The sweep's buckets one request deep that the pacer holds, quickly (the rest: slow)."""
    figures = simulate(Server(rate=rate, depth=1, answers=max(40, round(15 * rate))))
    assert figures.met(), figures


@pytest.mark.parametrize("rate", [5.0, 10.0, 20.0])
def test_a_bucket_two_requests_deep_is_held(rate):
    """Between one deep and the sweep's shallowest: the climb's replay from the first send knows
    its depth, so the middle of its bracket is the rate (its least held 10/s at 83%)."""
    figures = simulate(Server(rate=rate, depth=2, answers=round(15 * rate)))
    assert figures.met(), figures


@pytest.mark.parametrize("rate", [15.0, 30.0])
def test_a_strict_gateway_that_sends_headers_is_held(rate):
    """One request deep with headers telling its reset (TOLD): each turn counts from when the last
    request most likely arrived, which a fastest round trip forgotten too soon put too early."""
    figures = simulate(Server(rate=rate, depth=1, headers=True, answers=round(15 * rate)))
    assert figures.met(), figures
