"""`grade --dry-run`: nothing sent, nothing written, the cache only read, the counts right.

A real judge server stands by through every dry run, and must receive no request; the reply cache
is warmed by a real grading first, so the dry run's cache hits are those a grading would have.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import aiohttp
import pytest
from support.helpers_grading import PASS, write_battery

from tabench_dsl.cli import main
from tabench_dsl.grading.cache import default_path
from tabench_dsl.grading.judges.factory import make_judge
from tabench_dsl.grading.judges.identity import judge_identity
from tabench_dsl.grading.judges.request_shape import RequestOptions
from tabench_dsl.language.battery import load_battery
from tabench_dsl.language.render import compile_battery


async def run(argv: list[str]) -> int:
    return await asyncio.to_thread(main, argv)


def answers_file(path: Path, rows: list[tuple[str, str, str]]) -> Path:
    path.write_text("".join(json.dumps({"system": s, "question": q, "answer": a}) + "\n" for s, q, a in rows))
    return path


#: a/h02 passes T1 (the gold is 7311); h03 has T1 off; a/h01 misses a stage, so T1 does not pass it.
ROWS = [
    ("a", "h02", "It listens on 7311."),
    ("a", "h03", "azure"),
    ("b", "h03", "sky blue"),
    ("c", "h03", "green"),
    ("a", "h01", "Ingest and Index"),
]


async def test_dry_run_sends_nothing_writes_nothing_and_counts_by_hand(work: Path, capsys, judge_server):
    server = await judge_server([PASS])
    battery = write_battery(work)
    judge = ["--judge", server.url, "--model", "m", "--cache", "c.sqlite"]
    # Warm the reply cache with a real grading of a/h03 and b/h03.
    warm = answers_file(work / "warm.jsonl", ROWS[1:3])
    assert (
        await run(["grade", str(battery), "--answers", str(warm), "--out", "warm-results.jsonl", *judge]) == 0
    )
    assert server.calls == 2
    answers = answers_file(work / "answers.jsonl", ROWS)
    cache_bytes = (work / "c.sqlite").read_bytes()
    listing = sorted(p.name for p in work.iterdir())
    capsys.readouterr()

    argv = ["grade", str(battery), "--answers", str(answers), *judge, "--dry-run", "--json"]
    assert await run([*argv, "--price", "input=1,output=2"]) == 0
    assert server.calls == 2  # not one request more
    assert (work / "c.sqlite").read_bytes() == cache_bytes
    assert sorted(p.name for p in work.iterdir()) == listing  # no results.jsonl, no cache -wal/-shm
    dry = json.loads(capsys.readouterr().out)["dry_run"]

    # The first asks still needed: c/h03 and a/h01, SYSTEM + USER each, as the runner builds them.
    compiled = compile_battery(load_battery(battery))
    chars = [
        len(compiled.questions[q].system) + len(compiled.user.fill(answer))
        for _, q, answer in (ROWS[3], ROWS[4])
    ]
    tokens = sum(c // 4 for c in chars)  # four characters a token, per request
    (one,) = dry["judges"]
    assert {k: dry[k] for k in ("answers", "t1_passes", "cache_hits", "judge_calls")} == {
        "answers": 5,
        "t1_passes": 1,
        "cache_hits": 2,
        "judge_calls": 2,
    }
    assert (one["questions"], one["cache_hits"], one["judge_calls"], one["price"]) == (
        2,
        2,
        2,
        {"input": 1.0, "output": 2.0},
    )
    assert (dry["prompt_chars"], dry["prompt_tokens"], dry["completion_tokens_max"]) == (
        sum(chars),
        tokens,
        600,
    )
    # input $1 and output $2 per million: tokens * 1 + 2 calls * 300 max_tokens * 2 = tokens + 1,200.
    assert dry["cost_usd"]["prompt"] == round(tokens / 1e6, 9)
    assert dry["cost_usd"]["completion_max"] == 0.0012
    assert dry["cost_usd"]["total_max"] == round((tokens + 1200) / 1e6, 9)
    assert dry["cost_usd"]["with_provider_cache_max"] is None  # no cached_input price given
    assert dry["token_estimate"].startswith("characters / 4")

    # The text form says the same.
    assert await run(argv[:-1]) == 0
    out = capsys.readouterr().out
    assert "dry run: no judge built or contacted, nothing written" in out
    assert "T1 passes: 1" in out and "2 first ask(s) answered by the reply cache" in out
    assert "judge calls still needed: 2 first ask(s) over 2 question(s)" in out
    assert f"prompt to send: {sum(chars):,} characters, about {tokens:,} tokens" in out
    assert "estimated cost: no price known (give --price" in out
    assert server.calls == 2


async def test_dry_run_with_the_manifest_price_and_a_provider_cache_estimate(
    work: Path, capsys, judge_server, monkeypatch
):
    server = await judge_server([PASS])
    battery = write_battery(work)
    manifest = battery / "battery.yaml"
    # The manifest's price prices the manifest's own judge (its model, reached through the
    # environment), never one named with --judge or --model.
    manifest.write_text(
        manifest.read_text() + "judge: {model: m, price: {input: 2, cached_input: 0.5, output: 4}}\n"
    )
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    # Three answers to h03, none cached: the 2nd and 3rd repeat h03's SYSTEM prompt.
    answers = answers_file(work / "answers.jsonl", ROWS[1:4])
    argv = ["grade", str(battery), "--answers", str(answers)]
    assert await run([*argv, "--dry-run", "--json"]) == 0
    dry = json.loads(capsys.readouterr().out)["dry_run"]
    assert server.calls == 0 and not default_path().exists() and not (work / "results.jsonl").exists()
    compiled = compile_battery(load_battery(battery))
    system = len(compiled.questions["h03"].system) // 4
    (one,) = dry["judges"]
    assert (one["cache_read"], dry["judge_calls"], dry["repeated_prompt_tokens"]) == (False, 3, 2 * system)
    tokens = dry["prompt_tokens"]
    # input 2, output 4: tokens * 2 + 900 * 4; with the repeated SYSTEMs at 0.5 instead of 2.
    assert dry["cost_usd"]["total_max"] == round((tokens * 2 + 3600) / 1e6, 9)
    assert dry["cost_usd"]["with_provider_cache_max"] == round(
        ((tokens - 2 * system) * 2 + 2 * system * 0.5 + 3600) / 1e6, 9
    )
    assert one["price"] == {"input": 2.0, "output": 4.0, "cached_input": 0.5}
    assert one["cost_usd"] == dry["cost_usd"]


async def test_dry_run_needs_no_key_and_skips_what_resume_skips(work: Path, capsys):
    battery = write_battery(work)
    answers = answers_file(work / "answers.jsonl", ROWS)
    # openai:MODEL on api.openai.com without OPENAI_API_KEY: grading refuses, a dry run need not.
    assert await run(["grade", str(battery), "--answers", str(answers), "--judge", "openai:gpt-x"]) == 2
    assert "needs OPENAI_API_KEY" in capsys.readouterr().err
    # The builtin judge grades a/h02..c/h03 into results.jsonl; --resume then skips them.
    assert await run(["grade", str(battery), "--answers", str(answers), "--limit", "3"]) == 0
    capsys.readouterr()
    results = (work / "results.jsonl").read_bytes()
    index = (work / "results.index.sqlite").read_bytes()  # the closing totals' index
    argv = ["grade", str(battery), "--answers", str(answers), "--judge", "openai:gpt-x", "--dry-run"]
    assert await run([*argv, "--resume", "--json"]) == 0
    dry = json.loads(capsys.readouterr().out)["dry_run"]
    assert (dry["answers"], dry["skipped"], dry["judge_calls"]) == (5, 3, 2)
    assert dry["judges"][0]["judge"] == "openai:gpt-x"
    assert (work / "results.jsonl").read_bytes() == results
    assert (work / "results.index.sqlite").read_bytes() == index  # read, never written


async def test_bad_command_lines_are_usage_errors_in_a_dry_run_too(work: Path, capsys):
    battery = write_battery(work)
    answers = answers_file(work / "answers.jsonl", ROWS)
    base = ["grade", str(battery), "--answers", str(answers), "--dry-run"]
    assert await run([*base, "--price", "input=1"]) == 2
    assert "--price: a price needs output" in capsys.readouterr().err
    assert await run([*base, "--model", "m"]) == 2  # a model nothing reaches
    assert "nothing reaches it" in capsys.readouterr().err
    assert await run([*base, "--question", "h99"]) == 2
    assert "the battery has no question h99" in capsys.readouterr().err
    assert await run([*base, "--system", "nobody"]) == 2  # a typo estimates nothing: an error
    assert "--system: no answer is from nobody (systems in the answers: a, b, c)" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("spec", "env"),
    [
        ("builtin", {}),
        ("openai:m", {"OPENAI_API_KEY": "sk-test"}),
        ("openai", {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1/chat/completions/"}),
        ("http://127.0.0.1:9", {}),
        ("https://user@judge.example:8443/v1", {}),
        ("anthropic:claude-x", {"ANTHROPIC_API_KEY": "k"}),
        ("anthropic", {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9/v1/messages"}),
    ],
)
async def test_the_identity_is_the_judge_make_judge_builds(tmp_path: Path, spec: str, env: dict[str, str]):
    compiled = compile_battery(load_battery(write_battery(tmp_path)))
    async with aiohttp.ClientSession() as session:
        kwargs = {"model": "m", "manifest_judge": compiled.judge, "settings": compiled.settings, "env": env}
        if spec.startswith("https://user@"):
            with pytest.raises(Exception) as built_error:
                make_judge(spec, session=session, **kwargs)
            with pytest.raises(type(built_error.value)):
                judge_identity(spec, **kwargs)
            return
        judge = make_judge(spec, session=session, **kwargs)
        identity = judge_identity(spec, **kwargs)
        assert identity.info == judge.info
        if judge.info.language_model:
            assert identity.params == judge.params


@pytest.mark.parametrize(
    ("spec", "env"),
    [
        ("builtin", {}),
        ("replay:old.jsonl", {}),
        ("openai:m", {"OPENAI_API_KEY": "sk-test"}),
        ("http://127.0.0.1:9", {}),
        ("anthropic:claude-x", {"ANTHROPIC_API_KEY": "k"}),
    ],
)
async def test_the_identity_names_the_request_shape_the_judge_sends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spec: str, env: dict[str, str]
):
    # Each backend declares with its identity whether its requests carry what the user adds
    # (`register_identity(..., carries_request_shape=...)`): builtin and replay send none.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "old.jsonl").write_text("")
    compiled = compile_battery(load_battery(write_battery(tmp_path)))
    request = RequestOptions(structured="on", params={"seed": 1}, headers=(("X-Team", "t"),))
    kwargs = {"model": "m", "manifest_judge": compiled.judge, "settings": compiled.settings, "env": env}
    async with aiohttp.ClientSession() as session:
        judge = make_judge(spec, session=session, request=request, **kwargs)
        identity = judge_identity(spec, request=request, **kwargs)
        assert identity.request_shape == judge.request_shape
        assert (identity.request_shape == "") == (judge.info.backend in ("builtin", "replay"))


async def test_a_panel_is_counted_judge_by_judge_at_each_price(work: Path, capsys, judge_server):
    first, second = await judge_server([PASS]), await judge_server([PASS])
    battery = write_battery(work)
    answers = answers_file(work / "answers.jsonl", ROWS)
    argv = ["grade", str(battery), "--answers", str(answers), "--judge", first.url, "--judge", second.url]
    assert await run([*argv, "--model", "m", "--dry-run", "--json", "--price", "input=1,output=2"]) == 0
    dry = json.loads(capsys.readouterr().out)["dry_run"]
    assert first.calls == second.calls == 0
    one, two = dry["judges"]
    assert (one["judge_calls"], two["judge_calls"], dry["judge_calls"]) == (4, 4, 8)
    assert dry["cost_usd"]["total_max"] == round(one["cost_usd"]["total_max"] * 2, 9)
    # The manifest's panel: each judge at its own price, none needing a key for a dry run.
    manifest = battery / "battery.yaml"
    manifest.write_text(
        manifest.read_text() + "judge:\n  model: m\n  panel:\n"
        "    - {backend: openai, price: {input: 1, output: 2}}\n"
        "    - {backend: anthropic, price: {input: 3, output: 15}}\n"
    )
    assert await run(["grade", str(battery), "--answers", str(answers), "--dry-run", "--json"]) == 0
    dry = json.loads(capsys.readouterr().out)["dry_run"]
    assert [(j["judge"], j["price"]["input"]) for j in dry["judges"]] == [
        ("openai:m", 1.0),
        ("anthropic:m", 3.0),
    ]
    tokens = dry["judges"][0]["prompt_tokens"]
    # openai: tokens * 1 + 4 * 300 * 2; anthropic: tokens * 3 + 4 * 300 * 15
    assert dry["cost_usd"]["total_max"] == round((tokens + 2400 + tokens * 3 + 18000) / 1e6, 9)


async def test_the_dry_run_counts_the_t1_audit_asks_the_grading_makes(work: Path, capsys, judge_server):
    server = await judge_server([PASS])
    battery = write_battery(work)
    answers = answers_file(work / "answers.jsonl", ROWS)
    argv = ["grade", str(battery), "--answers", str(answers), "--judge", server.url, "--model", "m"]
    argv += ["--t1-audit", "1", "--no-cache"]
    assert await run([*argv, "--dry-run", "--json"]) == 0
    dry = json.loads(capsys.readouterr().out)["dry_run"]
    assert server.calls == 0
    assert (dry["t1_passes"], dry["t1_audits"]) == (1, 1)
    assert await run(argv) == 0
    # Four answers T1 leaves to the judge and the audited T1 pass: as many calls as counted.
    assert dry["judge_calls"] == server.calls == 5
    assert await run([*argv, "--dry-run"]) == 0
    assert "T1 passes: 1 (1 of them also asked of the judge, --t1-audit)" in capsys.readouterr().out
