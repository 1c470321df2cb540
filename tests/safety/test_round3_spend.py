"""Round 3, money: a battery's `judge.price` never prices a judge the user named on the command line
(a price of 0 would lift every `--max-cost`), and the cap reserves the reply tokens the request
really asks for (`--judge-param max_tokens`, `max_completion_tokens`, `n`). Against a real scripted
judge server."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.helpers_grading import PASS, write_battery

from tabench_dsl.cli import main
from tabench_dsl.core.nodes import JudgeDefaults
from tabench_dsl.core.price import Price
from tabench_dsl.grading.judges.factory import judge_price
from tabench_dsl.grading.judges.request_shape import RequestOptions, RequestShape
from tabench_dsl.store.results import iter_records

FREE = "judge:\n  price: {input: 0, output: 0}\n"


@pytest.fixture
def work(work: Path) -> Path:
    battery = write_battery(work)
    with (battery / "battery.yaml").open("a") as manifest:
        manifest.write(FREE)  # the battery's author says the judge is free
    rows = [{"system": s, "question": "h03", "answer": f"sky {s}"} for s in ("s1", "s2", "s3")]
    (work / "answers.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return work


def _grade(work: Path, url: str, *extra: str) -> list[str]:
    return ["grade", str(work / "battery"), "--answers", "answers.jsonl", "--judge", url, "--model", "m",
            "--no-cache", "--concurrency", "1", *extra]  # fmt: skip


async def test_a_battery_s_price_never_lifts_the_cap_of_a_judge_named_on_the_command_line(
    work: Path, judge_server, capsys
) -> None:
    server = await judge_server([PASS])
    status = await asyncio.to_thread(main, _grade(work, server.url, "--max-cost", "0.01"))
    assert status == 2
    assert "--max-cost needs the judge's price" in capsys.readouterr().err
    assert server.requests == []


def test_the_price_of_a_judge_is_the_command_line_s_or_the_manifest_s_for_its_own_judge() -> None:
    theirs, mine = Price(input=0.0, output=0.0), Price(input=2.0, output=8.0)
    manifest = JudgeDefaults(model="gpt-x", price=theirs)
    assert judge_price(None, None, None, manifest) == theirs  # the manifest's own judge
    assert judge_price(None, "gpt-x", None, manifest) == theirs  # the same model, said again
    assert judge_price("http://127.0.0.1:1/v1", None, None, manifest) is None
    assert judge_price(None, "other", None, manifest) is None
    assert judge_price("openai:gpt-x", None, mine, manifest) == mine


@pytest.mark.parametrize(
    ("params", "reserved"),
    [
        ({}, 300),
        ({"max_tokens": 100_000}, 100_000),
        ({"max_completion_tokens": 50_000}, 50_000),
        ({"max_tokens": 10}, 300),  # the smaller of two budgets is never the one reserved
        ({"n": 8}, 2_400),
        ({"max_tokens": 1000, "n": 4, "best_of": 6}, 6_000),
        ({"max_output_tokens": "4000"}, 4_000),
        ({"max_tokens": 2.5e3, "n": True}, 2_500),
        ({"max_tokens": "lots", "n": -3}, 300),
    ],
)
def test_the_reply_tokens_a_request_asks_for(params: dict, reserved: int) -> None:
    assert RequestShape(RequestOptions(params=params)).reply_tokens(300) == reserved


async def test_the_cap_reserves_the_judge_param_budget(work: Path, judge_server, capsys) -> None:
    server = await judge_server([PASS])
    # At $10 per million reply tokens, 100,000 tokens may cost $1: a $0.50 cap sends nothing.
    argv = _grade(work, server.url, "--price", "input=1,output=10", "--max-cost", "0.5")
    status = await asyncio.to_thread(main, [*argv, "--judge-param", "max_tokens=100000"])
    assert status == 1
    assert "spend cap reached" in capsys.readouterr().err
    assert server.requests == []
    status = await asyncio.to_thread(main, [*argv, "--judge-param", "n=2000", "--out", "n.jsonl"])
    assert status == 1 and server.requests == []
    # The same cap with the default 300 reply tokens grades every answer.
    assert await asyncio.to_thread(main, [*argv, "--out", "plain.jsonl"]) == 0
    assert len(server.requests) == 3


# -- secrets too short to keep ---------------------------------------------------------------------


async def test_a_short_header_value_or_key_is_warned_about_not_cut_from_replies(
    work: Path, judge_server, capsys, monkeypatch
) -> None:
    server = await judge_server([PASS])
    monkeypatch.setenv("OPENAI_API_KEY", "s")  # every reply holds an s
    # The reply says `"missing_minor": false`: cutting "false" out would leave it malformed.
    argv = _grade(work, server.url, "--judge-header", "Helicone-Cache-Enabled=false")
    assert await asyncio.to_thread(main, argv) == 0
    err = capsys.readouterr().err
    assert "warning: --judge-header Helicone-Cache-Enabled: the value is shorter than 20 characters" in err
    assert "warning: OPENAI_API_KEY: the value is shorter than 20 characters" in err
    assert "false" not in err  # the value itself is never shown
    assert {r.verdict for r in iter_records(work / "results.jsonl")} == {"pass"}
    assert "[redacted]" not in (work / "results.jsonl").read_text()  # no word of a reply was cut


def test_secrets_are_cut_at_twenty_characters_or_more() -> None:
    from tabench_dsl.core.redact import MIN_SECRET_LENGTH, scrub

    assert MIN_SECRET_LENGTH == 20
    reply = '{"verdict": "pass", "facets": {"extra_correct_info": true}}'
    assert scrub(reply, ["x", "true", "extra_correct_info"]) == reply
    gateway = "gw-0123456789abcdefXYZ"  # 22 characters
    assert scrub(f"echo {gateway}!", [gateway]) == "echo [redacted]!"


# -- token counts a reply reports ------------------------------------------------------------------


async def test_a_negative_token_count_is_an_error_of_the_reply_not_a_figure(
    work: Path, judge_server, capsys
) -> None:
    from support.judge_server import Raw

    completion = {
        "id": "c",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": PASS}}],
        "usage": {"prompt_tokens": -1_000_000_000, "completion_tokens": 5, "total_tokens": 0},
    }
    server = await judge_server([Raw(body=completion)])
    argv = _grade(work, server.url, "--price", "input=1,output=1", "--retries", "0", "--json")
    await asyncio.to_thread(main, argv)
    totals = json.loads(capsys.readouterr().out)
    assert totals["all"]["cost_usd"] in (0, None)
    for record in iter_records(work / "results.jsonl"):
        assert record.verdict in ("error", "adjudicate")
        assert all(a.tokens.prompt >= 0 for a in record.attempts)
        assert any("a count is never below 0" in (a.error or "") for a in record.attempts)


def test_a_manifest_panel_member_given_the_user_s_model_has_no_battery_price() -> None:
    from tabench_dsl.core.nodes import PanelJudge
    from tabench_dsl.grading.session import GradingOptions, chosen_judges

    theirs = Price(input=0.0, output=0.0)
    manifest = JudgeDefaults(
        price=theirs, panel=(PanelJudge(backend="openai", model="gpt-x"), PanelJudge(backend="anthropic"))
    )
    own, other = (defaults.price for _, _, defaults in chosen_judges(GradingOptions(), manifest))
    assert (own, other) == (theirs, theirs)  # the battery's own judges
    named, unnamed = (
        defaults.price for _, _, defaults in chosen_judges(GradingOptions(model="mine"), manifest)
    )
    assert (named, unnamed) == (theirs, None)  # the second judge asks the user's model


@settings(max_examples=200, derandomize=True, deadline=None)
@given(
    text=st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=200),
    short=st.text(min_size=1, max_size=19),
    long=st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=20, max_size=40),
)
def test_a_short_secret_never_changes_text_and_a_long_one_never_survives(
    text: str, short: str, long: str
) -> None:
    from tabench_dsl.core.redact import KEY_SHAPED, scrub

    if KEY_SHAPED.search(text) is None:
        assert scrub(text, [short]) == text
    assert long not in scrub(f"{text}{long}{text}", [long])
