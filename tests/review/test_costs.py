"""Tokens and dollars: prices from the manifest and --price, what totals bills, checked by hand.

Every expected dollar figure below is worked out by hand in its comment, from prices in USD per
million tokens: cost = ((prompt - cached - written) * input + cached * cached_input
+ written * cache_write + completion * output) / 1e6.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from support.helpers_grading import PASS, write_battery

from tabench_dsl.cli import main
from tabench_dsl.core.price import Price, parse_price
from tabench_dsl.core.records import Attempt, JudgeInfo, Record, Tokens
from tabench_dsl.language.battery import load_battery, read_battery
from tabench_dsl.review.costs import cost_usd, format_usd
from tabench_dsl.review.totals import compute_totals, totals_json
from tabench_dsl.store.results import ResultsWriter, iter_records

PRICE = Price(input=0.40, cached_input=0.10, output=1.60)
PRICED = JudgeInfo(backend="openai", model="m", price=PRICE)
UNPRICED = JudgeInfo(backend="openai", model="m")


def rec(system, question, judge=PRICED, attempts=(), tier="t2"):
    return Record(
        system=system,
        question=question,
        tier=tier,
        verdict="pass",
        reason="r",
        prompt_sha256="h",
        judge=judge,
        attempts=list(attempts),
    )


def call(prompt, completion, cached=0, written=0, cache_hit=False, kind="first"):
    return Attempt(kind, "{}", tokens=Tokens(prompt, completion, cached, written), cache_hit=cache_hit)


# -- the arithmetic --------------------------------------------------------------------------------
def test_cost_of_one_call_by_hand():
    # 1,000 fresh at 0.40 + 1,000 cached at 0.10 + 100 out at 1.60 = 400 + 100 + 160 = 660 / 1e6
    assert cost_usd(Tokens(prompt=2000, completion=100, cached_prompt=1000), PRICE) == pytest.approx(0.00066)
    # cached_input not given: cached tokens at the input price: 2,000 * 0.40 + 100 * 1.60 = 960 / 1e6
    plain = Price(input=0.40, output=1.60)
    assert cost_usd(Tokens(prompt=2000, completion=100, cached_prompt=1000), plain) == pytest.approx(0.00096)
    # cache_write at input unless priced: 3,000 written of 4,000 -> (1,000 + 3,000) * 3 + 0 = 12,000 / 1e6
    anthropic = Price(input=3.0, cached_input=0.30, output=15.0)
    assert cost_usd(Tokens(prompt=4000, cache_write=3000), anthropic) == pytest.approx(0.012)
    # ... and at its own price when given: 1,000 * 3 + 3,000 * 3.75 = 3,000 + 11,250 = 14,250 / 1e6
    written = Price(input=3.0, cached_input=0.30, output=15.0, cache_write=3.75)
    assert cost_usd(Tokens(prompt=4000, cache_write=3000), written) == pytest.approx(0.01425)


def test_format_usd():
    assert [format_usd(v) for v in (None, 0.0, 12.345, 0.0312, 0.00026, 1234.5)] == [
        "-",
        "$0.00",
        "$12.35",
        "$0.0312",
        "$0.000260",
        "$1,234.50",
    ]


# -- totals ------------------------------------------------------------------------------------------
def hand_records():
    return [
        # a: two calls and a cache hit (not billed, not counted)
        rec("a", "q1", attempts=[call(1200, 50, cached=1000), call(300, 20, kind="stern")]),
        rec("a", "q2", attempts=[call(999, 9, cache_hit=True)]),
        rec("a", "q3", tier="t1"),
        # b: one call
        rec("b", "q1", attempts=[call(2000, 100)]),
    ]


def test_totals_tokens_and_cost_per_system_and_all_by_hand():
    totals = compute_totals(hand_records())
    a, b = totals.systems
    # a: prompt 1,200 + 300 = 1,500 (1,000 cached), completion 50 + 20 = 70
    assert (a.tokens.prompt, a.tokens.cached_prompt, a.tokens.completion) == (1500, 1000, 70)
    # a: fresh 500 * 0.40 = 200; cached 1,000 * 0.10 = 100; out 70 * 1.60 = 112 -> 412 / 1e6
    assert a.cost_usd == 0.000412
    # b: 2,000 * 0.40 = 800; 100 * 1.60 = 160 -> 960 / 1e6
    assert b.cost_usd == 0.00096
    assert totals.usage.judge_calls == 3
    assert (totals.usage.tokens.prompt, totals.usage.tokens.completion) == (3500, 170)
    assert totals.usage.cost_usd == 0.001372  # 412 + 960 = 1,372 / 1e6


def test_totals_json_shape():
    document = json.loads(totals_json(compute_totals(hand_records())))
    a = document["systems"][0]
    assert a["tokens"] == {
        "prompt": 1500,
        "cached_prompt": 1000,
        "completion": 70,
        "cache_write": 0,
        "reasoning": 0,
    }
    assert a["cost_usd"] == 0.000412
    assert document["all"] == {
        "judge_calls": 3,
        "tokens": {
            "prompt": 3500,
            "cached_prompt": 1000,
            "completion": 170,
            "cache_write": 0,
            "reasoning": 0,
        },
        "cost_usd": 0.001372,
        "unpriced_calls": 0,
    }
    # Each judge carries the price its records were graded at.
    assert document["judges"][0]["price"] == {"input": 0.4, "output": 1.6, "cached_input": 0.1}


def test_a_billed_call_without_a_price_makes_the_cost_unknown():
    records = [*hand_records(), rec("c", "q1", judge=UNPRICED, attempts=[call(10, 1)])]
    totals = compute_totals(records)
    a, b, c = totals.systems
    assert (a.cost_usd, b.cost_usd, c.cost_usd) == (0.000412, 0.00096, None)
    assert (totals.usage.cost_usd, totals.usage.unpriced_calls) == (None, 1)
    # The reader's price prices every call, over the records' own: c is 10 * 1 + 1 * 2 = 12 / 1e6.
    flat = compute_totals(records, price=Price(input=1.0, output=2.0))
    assert [s.cost_usd for s in flat.systems] == [0.001640, 0.00220, 0.000012]
    # a: 1,500 * 1 + 70 * 2 = 1,640; b: 2,000 + 200 = 2,200 (no cached price: cached at input).


def test_a_judge_that_bills_nothing_costs_zero_without_a_price():
    builtin = JudgeInfo(backend="builtin", model="lexical-1", language_model=False)
    totals = compute_totals([rec("a", "q1", judge=builtin, attempts=[call(0, 0)]), rec("a", "q2", tier="t1")])
    assert totals.systems[0].cost_usd == 0.0 and totals.usage.cost_usd == 0.0


def results_file(path: Path, records) -> Path:
    with ResultsWriter(path) as writer:
        for record in records:
            writer.write(record)
    return path


def test_totals_command_json_table_and_price_flag(tmp_path: Path, capsys):
    results = results_file(tmp_path / "r.jsonl", hand_records())
    assert main(["totals", str(results), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["all"]["cost_usd"] == 0.001372
    assert main(["totals", str(results)]) == 0
    out = capsys.readouterr().out
    assert "tokens in" in out and "$0.000412" in out and "$0.000960" in out
    assert (
        "all: 3 judge call(s), 3,500 prompt tokens (1,000 cached), 170 completion tokens; cost $0.00137"
        in out
    )
    assert main(["totals", str(results), "--json", "--price", "input=1,output=2"]) == 0
    # 3,500 * 1 + 170 * 2 = 3,840 / 1e6
    assert json.loads(capsys.readouterr().out)["all"]["cost_usd"] == 0.00384


def test_totals_says_why_a_cost_is_unknown(tmp_path: Path, capsys):
    results = results_file(tmp_path / "r.jsonl", [rec("a", "q1", judge=UNPRICED, attempts=[call(10, 1)])])
    assert main(["totals", str(results), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["systems"][0]["cost_usd"] is None and document["all"]["cost_usd"] is None
    assert main(["totals", str(results)]) == 0
    assert "cost unknown: 1 call(s) have no price (give --price" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("input=x,output=1", "--price: input must be a number (USD per million tokens), not 'x'"),
        ("input=-1,output=1", "--price: input must be a finite number, 0 or more"),
        ("input=nan,output=1", "--price: input must be a finite number, 0 or more"),
        ("input=1", "--price: a price needs output; write input=0.40,cached_input=0.10,output=1.60"),
        ("input=1,output=2,input=3", "--price: price key 'input' given twice"),
        ("input=1,output=2,fee=3", "--price: unknown price key 'fee'; price keys are input, cached_input"),
        ("0.40", "--price: '0.40' is not KEY=USD"),
        ("", "--price: '' is not KEY=USD"),
    ],
)
def test_bad_price_flag_is_a_usage_error(tmp_path: Path, capsys, value: str, message: str):
    results = results_file(tmp_path / "r.jsonl", hand_records())
    assert main(["totals", str(results), "--price", value]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_parse_price_keeps_what_was_given():
    assert parse_price(" input=0.40 , cached_input=0.10,output=1.60") == PRICE
    assert parse_price("input=3,output=15,cache_write=3.75").write_rate == 3.75


# -- the manifest ------------------------------------------------------------------------------------
def priced_battery(root: Path, judge: str) -> Path:
    folder = write_battery(root)
    manifest = folder / "battery.yaml"
    manifest.write_text(manifest.read_text() + judge, encoding="utf-8")
    return folder


def test_manifest_price_is_read(tmp_path: Path):
    folder = priced_battery(tmp_path, "judge:\n  price: {input: 0.40, cached_input: 0.10, output: 2}\n")
    assert load_battery(folder).judge.price == Price(input=0.40, cached_input=0.10, output=2.0)


@pytest.mark.parametrize(
    ("judge", "where", "message"),
    [
        ("judge:\n  price: 3\n", "7:10", "judge price must be a mapping, not '3'"),
        (
            "judge:\n  price: {input: -1, output: 1}\n",
            "7:18",
            "price input must be a finite number, 0 or more",
        ),
        ("judge:\n  price: {input: 1, output: cheap}\n", "7:29", "price output must be a number"),
        ("judge:\n  price: {input: 1, output: true}\n", "7:29", "price output must be a number"),
        ("judge:\n  price: {input: 1, output: 1, tip: 2}\n", "7:32", "unknown price key 'tip'"),
        ("judge:\n  price: {input: 1}\n", "7:10", "judge price needs 'output'"),
        ("judge:\n  price: {input: 1, output: 1, input: 2}\n", "7:32", "duplicate price key 'input'"),
    ],
)
def test_bad_manifest_price_is_a_positioned_error(tmp_path: Path, capsys, judge, where, message):
    folder = priced_battery(tmp_path, judge)
    errors = read_battery(folder).errors
    assert [f"{e.line}:{e.col}: {e.message}"[: len(where) + 2 + len(message)] for e in errors] == [
        f"{where}: {message}"
    ]
    # The commands say it with file:line:col and exit 2, no traceback.
    (tmp_path / "answers.jsonl").write_text("")
    argv = ["grade", str(folder), "--answers", str(tmp_path / "answers.jsonl"), "--dry-run"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"battery.yaml:{where}: {message}" in err and "Traceback" not in err


# -- grade records the price -------------------------------------------------------------------------
async def test_grade_records_the_flag_price_over_the_manifest(
    tmp_path: Path, capsys, judge_server, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    server = await judge_server([PASS])
    folder = priced_battery(tmp_path, "judge:\n  price: {input: 9, output: 9}\n")
    answers = tmp_path / "answers.jsonl"
    answers.write_text(json.dumps({"system": "a", "question": "h03", "answer": "azure"}) + "\n")
    argv = ["grade", str(folder), "--answers", str(answers), "--judge", server.url, "--model", "m"]
    argv += ["--no-cache", "--json", "--price", "input=1,output=2"]
    assert await asyncio.to_thread(main, argv) == 0
    (record,) = iter_records(tmp_path / "results.jsonl")
    assert record.judge.price == Price(input=1.0, output=2.0)
    # The server counts words: prompt P words, reply C words -> (P * 1 + C * 2) / 1e6.
    tokens = record.attempts[0].tokens
    assert tokens.prompt > 0 and tokens.completion > 0
    document = json.loads(capsys.readouterr().out)
    assert document["all"]["cost_usd"] == round((tokens.prompt + 2 * tokens.completion) / 1e6, 9)
    # Without the flag, a judge named on the command line has no price: the manifest's is for
    # the judge the manifest chose, never for one the user named.
    argv = ["grade", str(folder), "--answers", str(answers), "--judge", server.url, "--model", "m"]
    argv += ["--no-cache", "--out", str(tmp_path / "second.jsonl")]
    assert await asyncio.to_thread(main, argv) == 0
    (record,) = iter_records(tmp_path / "second.jsonl")
    assert record.judge.price is None


# -- the report and the viewer -----------------------------------------------------------------------
def test_report_shows_tokens_and_cost_and_takes_price(tmp_path: Path, capsys):
    results = results_file(tmp_path / "r.jsonl", hand_records())
    page = tmp_path / "report.html"
    assert main(["report", str(results), "--html", str(page)]) == 0
    html = page.read_text()
    assert "<th>tokens in</th><th>cached</th><th>out</th><th>cost</th>" in html
    # a's row: 1,500 in, 1,000 cached, 70 out, $0.000412 (worked out above)
    assert "<td>1,500</td><td>1,000</td><td>70</td><td>$0.000412</td>" in html
    assert "3,500 prompt tokens (1,000 cached), 170 completion tokens; cost $0.00137" in html
    assert main(["report", str(results), "--html", str(page), "--price", "input=1,output=2"]) == 0
    assert "<td>1,500</td><td>1,000</td><td>70</td><td>$0.00164</td>" in page.read_text()
    assert main(["report", str(results), "--html", str(page), "--price", "output=2"]) == 2
    assert "--price: a price needs input" in capsys.readouterr().err


async def test_viewer_api_carries_tokens_and_cost(tmp_path: Path, aiohttp_client):
    from tabench_dsl.review.viewer.app import make_app
    from tabench_dsl.review.viewer.queries import Index
    from tabench_dsl.review.viewer.run import load_run

    run = load_run(results_file(tmp_path / "r.jsonl", hand_records()))
    client = await aiohttp_client(make_app(Index(run)))
    totals = await (await client.get("/api/totals")).json()
    assert totals["all"]["cost_usd"] == 0.001372
    assert totals["usage_text"].endswith("cost $0.00137")
    page = await (await client.get("/api/systems")).json()
    a = page["items"][0]
    assert (a["tokens"]["prompt"], a["tokens"]["cached_prompt"], a["cost_text"]) == (1500, 1000, "$0.000412")
    assert page["items"] == totals["systems"]
    # The reader's price (view --price) prices every call.
    run.price = Price(input=1.0, output=2.0)
    client = await aiohttp_client(make_app(Index(run)))
    page = await (await client.get("/api/systems")).json()
    assert [s["cost_text"] for s in page["items"]] == ["$0.00164", "$0.00220"]


def test_a_panel_bills_each_judge_at_its_own_price():
    from tabench_dsl.core.records import PanelVote

    cheap = JudgeInfo(backend="openai", model="small", price=Price(input=1.0, output=2.0))
    dear = JudgeInfo(backend="anthropic", model="big", price=Price(input=3.0, output=15.0))
    record = rec("a", "q1", judge=JudgeInfo(backend="panel", model="majority"))
    record.panel = [
        PanelVote(judge=cheap, verdict="pass", reason="r", attempts=[call(1000, 100)]),
        PanelVote(judge=dear, verdict="pass", reason="r", attempts=[call(1000, 100)]),
    ]
    totals = compute_totals([record])
    # cheap: 1,000 * 1 + 100 * 2 = 1,200; dear: 1,000 * 3 + 100 * 15 = 4,500 -> 5,700 / 1e6
    assert totals.systems[0].cost_usd == 0.0057
    assert (totals.usage.judge_calls, totals.usage.tokens.prompt) == (2, 2000)
