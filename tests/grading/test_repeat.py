"""`--repeat K`: each T2 answer asked K times of a real scripted judge, each ask cached apart; asks
that disagree end adjudicate (unstable), and totals and calibrate report the flip rate."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from support.helpers_grading import FAIL, PASS, user_content, write_battery

from tabench_dsl.cli import main
from tabench_dsl.core.records import Record
from tabench_dsl.grading.repeats import combine_repeats, repeat_kind
from tabench_dsl.review.totals import compute_totals
from tabench_dsl.store.light_records import iter_light_records
from tabench_dsl.store.results import iter_records


def flipping_judge():
    """azure: pass, fail, pass over its three asks; anything else: pass every time."""
    seen: dict[str, int] = {}

    def respond(body: dict) -> str:
        answer = user_content(body)
        count = seen[answer] = seen.get(answer, 0) + 1
        if "azure" in answer:
            return FAIL if count == 2 else PASS
        return PASS

    return respond


def answers_file(folder: Path) -> Path:
    rows = [("a", "h03", "azure"), ("b", "h03", "blue"), ("a", "h02", "port 7311")]
    path = folder / "answers.jsonl"
    path.write_text("".join(json.dumps({"system": s, "question": q, "answer": a}) + "\n" for s, q, a in rows))
    return path


async def test_repeat_asks_k_times_flags_the_unstable_and_replays_from_the_cache(
    work: Path, judge_server, capsys
) -> None:
    server = await judge_server(flipping_judge())
    battery = write_battery(work)
    argv = [
        "grade",
        str(battery),
        "--answers",
        str(answers_file(work)),
        "--judge",
        server.url,
        "--model",
        "m",
    ]
    argv += ["--repeat", "3", "--cache", str(work / "c.sqlite"), "--out", str(work / "r.jsonl")]
    assert await asyncio.to_thread(main, argv) == 0
    assert len(server.requests) == 6  # two T2 answers, three asks each; 7311 passes T1, never asked
    records = {r.system: r for r in iter_records(work / "r.jsonl") if r.tier == "t2"}
    azure, blue = records["a"], records["b"]
    assert (azure.verdict, azure.cause) == ("adjudicate", "unstable")
    assert azure.reason == "the judge, asked 3 times, did not agree with itself: 2 pass, 1 fail"
    assert [v.verdict for v in azure.repetitions] == ["pass", "fail", "pass"]
    assert azure.attempts == [] and azure.facets == {}
    assert (blue.verdict, blue.cause, blue.reason) == ("pass", None, "names all four stages")
    assert [v.verdict for v in blue.repetitions] == ["pass"] * 3
    capsys.readouterr()

    # Each ask has its own cache entry: a second grading asks nothing and gets the same verdicts.
    argv[argv.index(str(work / "r.jsonl"))] = str(work / "again.jsonl")
    assert await asyncio.to_thread(main, argv) == 0
    assert len(server.requests) == 6
    again = {r.system: r for r in iter_records(work / "again.jsonl") if r.tier == "t2"}
    assert [v.verdict for v in again["a"].repetitions] == ["pass", "fail", "pass"]
    assert all(a.cache_hit for v in again["a"].repetitions for a in v.attempts)
    capsys.readouterr()

    assert main(["totals", str(work / "r.jsonl"), "--json"]) == 0
    totals = json.loads(capsys.readouterr().out)
    stability = totals["stability"]
    assert stability["asks"] == 3
    assert (stability["overall"]["repeated"], stability["overall"]["flipped"]) == (2, 1)
    assert [(q["name"], q["flip_rate"]["value"]) for q in stability["questions"]] == [("h03", 0.5)]
    assert [(j["name"], j["repeated"]) for j in stability["judges"]] == [
        (f"{records['a'].judge.describe()}", 2)
    ]
    assert totals["systems"][0]["judge_calls"] == 3  # every ask counted, as its tokens are
    # The light reading grade's closing totals use sees the same asks.
    light = compute_totals(iter_light_records(work / "r.jsonl"))
    assert (
        light.systems[0].judge_calls == 3
        and light.stability == compute_totals(iter_records(work / "r.jsonl")).stability
    )


async def test_a_rerun_after_a_refused_temperature_asks_nothing(work: Path, judge_server, capsys) -> None:
    # Every lookup and every store keys an ask alike (the judge as built, the ask's number, the
    # request's shape), also the ask the judge made again without the refused temperature: so a
    # second run finds every reply the first stored.
    server = await judge_server(flipping_judge(), refuse_temperature=True)
    battery = write_battery(work)
    argv = ["grade", str(battery), "--answers", str(answers_file(work)), "--judge", server.url]
    argv += ["--model", "m", "--repeat", "2", "--structured", "on", "--cache", str(work / "c.sqlite")]
    assert await asyncio.to_thread(main, [*argv, "--out", str(work / "r.jsonl")]) == 0
    assert "refused temperature 0" in capsys.readouterr().err
    assert len(server.rejections) == 1 and server.calls == 4  # two T2 answers, two asks each
    assert all("response_format" in body for body in server.requests)
    first = {r.system: r for r in iter_records(work / "r.jsonl") if r.tier == "t2"}

    assert await asyncio.to_thread(main, [*argv, "--out", str(work / "again.jsonl")]) == 0
    assert len(server.rejections) == 1 and server.calls == 4
    again = {r.system: r for r in iter_records(work / "again.jsonl") if r.tier == "t2"}
    assert {s: [v.verdict for v in r.repetitions] for s, r in again.items()} == {
        s: [v.verdict for v in r.repetitions] for s, r in first.items()
    }
    assert all(a.cache_hit for r in again.values() for v in r.repetitions for a in v.attempts)


def test_the_rule_of_the_asks_by_hand() -> None:
    from support.make_results import make_record

    def asks(*outcomes: str) -> list[Record]:
        return [make_record("s", "q", o) for o in outcomes]

    assert combine_repeats(asks("pass", "pass")).verdict == "pass"
    assert combine_repeats(asks("fail", "fail", "fail")).reason == "Claims a Summarize stage."
    mixed = combine_repeats(asks("pass", "error", "fail"))
    assert (mixed.verdict, mixed.cause) == ("error", "transport")  # --resume asks again
    unsure = combine_repeats(asks("fail", "adjudicate"))
    assert (unsure.verdict, unsure.cause) == ("adjudicate", "unstable")
    assert unsure.reason.endswith(": 1 fail, 1 adjudicate")
    assert (repeat_kind("first", 0), repeat_kind("stern", 2)) == ("first", "stern#3")


async def test_calibrate_repeat_reports_the_exemplars_that_flipped(work: Path, judge_server, capsys) -> None:
    rubric = (
        'question h03 {\n  prompt "What colour is the sky?"\n  gold "blue"\n  t1 off\n'
        '  exemplar correct "azure" why "a blue"\n  exemplar correct "blue" why "the gold"\n}\n'
    )
    server = await judge_server(flipping_judge())
    battery = write_battery(work, rubric=rubric)
    argv = ["calibrate", str(battery), "--judge", server.url, "--model", "m", "--no-cache", "--repeat", "3"]
    assert await asyncio.to_thread(main, [*argv, "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert (obj["repeated"], obj["flipped"], obj["agree"]) == (2, 1, 1)
    fresh = await judge_server(flipping_judge())  # the same script from its start
    argv[argv.index(server.url)] = fresh.url
    assert await asyncio.to_thread(main, argv) == 0
    assert "  stability: 1 of 2 exemplar(s) asked more than once got differing verdicts (50.0% flipped)" in (
        capsys.readouterr().out
    )


def test_repeat_out_of_range_is_refused(work: Path, capsys) -> None:
    battery = write_battery(work)
    base = ["grade", str(battery), "--answers", str(answers_file(work)), "--judge", "builtin"]
    for value in ("0", "21"):
        assert main([*base, "--repeat", value]) == 2
        assert "--repeat must be from 1 to 20" in capsys.readouterr().err


def test_the_dry_run_counts_every_ask(work: Path, capsys) -> None:
    battery = write_battery(work)
    argv = ["grade", str(battery), "--answers", str(answers_file(work)), "--judge", "openai:gpt-x"]
    argv += ["--dry-run", "--json", "--no-cache"]
    assert main(argv) == 0
    once = json.loads(capsys.readouterr().out)["dry_run"]["judge_calls"]
    assert main([*argv, "--repeat", "3"]) == 0
    assert json.loads(capsys.readouterr().out)["dry_run"]["judge_calls"] == 3 * once == 6
