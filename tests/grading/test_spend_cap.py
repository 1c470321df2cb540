"""`grade --max-cost USD`: no request that could pass the cap is sent, the records stay exact,
exit 1 says what is left, and --resume with a higher cap continues. Against a real scripted judge."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from support.helpers_grading import PASS, write_battery

from tabench_dsl.cli import main
from tabench_dsl.core.price import Price
from tabench_dsl.core.records import Tokens
from tabench_dsl.grading.judges.base import Message
from tabench_dsl.grading.spend_cap import MESSAGE_OVERHEAD, SpendCap, SpendCapReached, tokens_cost, worst_cost
from tabench_dsl.store.results import iter_records

PRICE = Price(input=2.0, output=10.0, cache_write=4.0)


def test_the_most_a_request_can_cost_by_hand() -> None:
    # "abc" is 3 bytes and "é" 2: 5 prompt tokens at most, plus 16 a message, at the dearer of input
    # ($2) and cache write ($4) per million; 300 reply tokens at $10 per million.
    messages = [Message("system", "abc"), Message("user", "é")]
    assert MESSAGE_OVERHEAD == 16
    assert worst_cost(messages, 300, PRICE) == pytest.approx(((5 + 32) * 4.0 + 300 * 10.0) / 1e6)
    # What reported tokens cost: 100 prompt of which 40 cached (at input, no cached price) and 10
    # written, 20 completion.
    spent = tokens_cost(Tokens(prompt=100, completion=20, cached_prompt=40, cache_write=10), PRICE)
    assert spent == pytest.approx((50 * 2.0 + 40 * 2.0 + 10 * 4.0 + 20 * 10.0) / 1e6)


def test_reservations_and_settling_by_hand() -> None:
    messages = [Message("user", "x" * 84)]  # 100 tokens at most, $4 per million: $0.0004, + $0.003
    one = worst_cost(messages, 300, PRICE)
    assert one == pytest.approx(0.0034)
    cap = SpendCap(0.01, spent_before=0.002)
    first = cap.reserve(messages, 300, PRICE)
    second = cap.reserve(messages, 300, PRICE)  # 0.002 + 2 * 0.0034 = 0.0088: fits
    with pytest.raises(SpendCapReached):
        cap.reserve(messages, 300, PRICE)  # 0.0122 would not
    assert cap.reached
    cap.settle(first, Tokens(prompt=100, completion=50), PRICE)  # $0.0002 + $0.0005
    cap.settle(second, None, PRICE)  # a transport error: nothing billed
    assert cap.reserved == 0.0 and cap.spent == pytest.approx(0.0027)
    assert cap.left == pytest.approx(0.0073)


def answers(folder: Path) -> Path:
    path = folder / "answers.jsonl"
    rows = [{"system": s, "question": "h03", "answer": f"sky {s}"} for s in ("s1", "s2", "s3", "s4")]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


async def test_the_cap_stops_before_the_next_request_and_resume_continues(
    work: Path, judge_server, capsys
) -> None:
    server = await judge_server([PASS])
    battery = write_battery(work)
    base = ["grade", str(battery), "--answers", str(answers(work)), "--judge", server.url, "--model", "m"]
    base += ["--no-cache", "--concurrency", "1", "--price", "input=2,output=10"]
    # A grading without a cap gives what one call costs and the most one could.
    assert await asyncio.to_thread(main, [*base, "--out", str(work / "free.jsonl")]) == 0
    free = list(iter_records(work / "free.jsonl"))
    price = Price(input=2.0, output=10.0)
    cost = tokens_cost(free[0].attempts[0].tokens, price)
    assert all(tokens_cost(r.attempts[0].tokens, price) == pytest.approx(cost) for r in free)
    system = battery_system(work, battery)
    worst = worst_cost([Message("system", system), Message("user", user_of(server))], 300, price)
    capsys.readouterr()

    # Room for the worst of one request after two have been paid for, not after three.
    cap = worst + 2.5 * cost
    out = work / "capped.jsonl"
    status = await asyncio.to_thread(main, [*base, "--out", str(out), "--max-cost", repr(cap)])
    err = capsys.readouterr().err
    assert status == 1
    assert len(server.requests) == 4 + 3
    assert [r.system for r in iter_records(out)] == ["s1", "s2", "s3"]
    assert (
        f"tabench: spend cap reached: ${3 * cost:.6f} of --max-cost ${cap:g} spent on this results file; "
        "1 answer(s) left ungraded; raise --max-cost and pass --resume to continue"
    ) in err

    # The spend of the file counts: the same cap again sends nothing; a higher one grades the rest.
    assert await asyncio.to_thread(main, [*base, "--out", str(out), "--max-cost", repr(cap), "--resume"]) == 1
    assert len(server.requests) == 7
    capsys.readouterr()
    assert await asyncio.to_thread(main, [*base, "--out", str(out), "--max-cost", "1", "--resume"]) == 0
    assert [r.system for r in iter_records(out)] == ["s1", "s2", "s3", "s4"]


def battery_system(work: Path, battery: Path) -> str:
    from tabench_dsl.language.battery import load_battery
    from tabench_dsl.language.render import compile_battery

    return compile_battery(load_battery(battery)).questions["h03"].system


def user_of(server) -> str:
    return server.requests[0]["messages"][1]["content"]


def test_a_cap_needs_a_price_and_one_live_process(work: Path, capsys) -> None:
    battery = write_battery(work)
    base = ["grade", str(battery), "--answers", str(answers(work)), "--judge", "builtin", "--max-cost"]
    assert main([*base, "0"]) == 2
    assert "--max-cost must be a positive amount of USD" in capsys.readouterr().err
    assert main([*base, "1", "--workers", "2"]) == 2
    assert "--max-cost is held by one grading process; leave out --workers" in capsys.readouterr().err
    assert main([*base, "1", "--out", str(work / "r.jsonl")]) == 2
    assert "--max-cost needs the judge's price to count the spend" in capsys.readouterr().err
