"""`grade --shard K/N` and `tabench merge`: N shards graded against the scripted judge server, merged,
count what one unsharded grading counts; conflicts are named; OUT is checked like any output."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from support.helpers_grading import FAIL, PASS, user_content, write_battery

from tabench_dsl.cli import main
from tabench_dsl.core.errors import UsageError
from tabench_dsl.core.records import Answer
from tabench_dsl.grading.shards import Shard, audit_share, in_shard, parse_shard
from tabench_dsl.store.results import iter_records


async def run(argv: list[str]) -> int:
    return await asyncio.to_thread(main, argv)


def answers(folder: Path, count: int = 40) -> Path:
    """`count` systems answering h01..h03: some pass T1, the judge grades the rest by their text."""
    path = folder / "answers.jsonl"
    lines = []
    for n in range(count):
        lines.append({"system": f"s{n}", "question": "h02", "answer": "7311" if n % 3 else "80"})
        lines.append({"system": f"s{n}", "question": "h03", "answer": "blue" if n % 2 else "green"})
        lines.append({"system": f"s{n}", "question": "h01", "answer": "Ingest, Index" if n % 5 else "none"})
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def by_answer(request: dict) -> str:
    return PASS if "blue" in user_content(request) or "Ingest" in user_content(request) else FAIL


def test_shards_partition_the_pairs_by_the_audit_hash() -> None:
    pairs = [(f"s{n}", f"q{m}") for n in range(50) for m in range(20)]
    shards = [Shard(k, 4) for k in range(1, 5)]
    for system, question in pairs:
        holders = [s.index for s in shards if s.holds(system, question)]
        # Exactly one shard each, and the one the T1 audit's share puts it in.
        assert holders == [int(audit_share(system, question) * 4) + 1]
    sizes = [sum(s.holds(*p) for p in pairs) for s in shards]
    assert sum(sizes) == len(pairs) and min(sizes) > 200
    answer = [Answer(system=s, question=q, answer="x") for s, q in pairs]
    assert [a.system for a in in_shard(answer, None)] == [a.system for a in answer]


@pytest.mark.parametrize("text", ["0/4", "5/4", "1", "a/b", "1/0", "-1/2"])
def test_bad_shards_are_usage_errors(text: str) -> None:
    with pytest.raises(UsageError, match="--shard"):
        parse_shard(text)


async def test_merged_shards_total_what_one_grading_totals(work: Path, capsys, judge_server) -> None:
    server = await judge_server(by_answer)
    battery, given = write_battery(work), answers(work)
    common = [
        "grade",
        str(battery),
        "--answers",
        str(given),
        "--judge",
        server.url,
        "--model",
        "m",
        "--no-cache",
    ]
    assert await run([*common, "--out", "whole.jsonl"]) == 0
    capsys.readouterr()
    shards = []
    for k in (1, 2, 3):
        shards.append(f"part{k}.jsonl")
        assert await run([*common, "--shard", f"{k}/3", "--out", shards[-1]]) == 0
    sizes = [len(list(iter_records(work / s))) for s in shards]
    assert sum(sizes) == 120 and all(sizes)  # each answer in exactly one shard
    # A shard resumed grades nothing again: its answers are the same ones.
    assert await run([*common, "--shard", "2/3", "--out", shards[1], "--resume"]) == 0
    assert "all " + str(sizes[1]) + " answer(s) already done" in capsys.readouterr().err
    assert await run(["merge", "merged.jsonl", *shards]) == 0
    assert "merged 120 record(s) of 120 pair(s) from 3 file(s)" in capsys.readouterr().err

    assert await run(["totals", "whole.jsonl", "--json"]) == 0
    whole = json.loads(capsys.readouterr().out)
    assert await run(["totals", "merged.jsonl", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == whole
    assert whole["records"] == 120 and whole["all"]["judge_calls"] > 0
    assert {s["pass"] > 0 and s["fail"] > 0 for s in whole["systems"]} >= {True}


async def test_pairs_graded_differently_are_named(work: Path, capsys, judge_server) -> None:
    passing, failing = await judge_server([PASS]), await judge_server([FAIL])
    battery, given = write_battery(work), answers(work, 2)
    for name, server in (("a.jsonl", passing), ("b.jsonl", failing)):
        argv = ["grade", str(battery), "--answers", str(given), "--judge", server.url, "--model", "m"]
        assert await run([*argv, "--no-cache", "--question", "h03", "--out", name]) == 0
    (work / "a.decisions.jsonl").write_text("")  # an empty decisions file joins as nothing
    capsys.readouterr()
    assert await run(["merge", "m.jsonl", "a.jsonl", "b.jsonl"]) == 1
    err = capsys.readouterr().err
    assert "s0 / h03 graded differently (a.jsonl: pass, b.jsonl: fail); the last stands" in err
    assert "2 pair(s) graded differently" in err
    assert {r.verdict for r in iter_records(work / "m.jsonl")} == {"pass", "fail"}
    assert await run(["totals", "m.jsonl", "--json"]) == 0
    systems = json.loads(capsys.readouterr().out)["systems"]
    assert [(s["pass"], s["fail"]) for s in systems] == [(0, 1), (0, 1)]  # b's stand


async def test_merge_outputs_are_checked(work: Path, capsys) -> None:
    battery = write_battery(work)
    given = answers(work, 3)
    assert (
        await run(["grade", str(battery), "--answers", str(given), "--question", "h02", "--out", "r.jsonl"])
        == 0
    )
    (work / "notes.txt").write_text("mine\n")
    capsys.readouterr()
    assert await run(["merge", "notes.txt", "r.jsonl"]) == 2
    assert "is not a results file written by tabench" in capsys.readouterr().err
    assert (work / "notes.txt").read_text() == "mine\n"
    assert await run(["merge", "x.jsonl", "r.jsonl", "r.jsonl"]) == 0  # OUT among the inputs: merged into
    assert await run(["merge", "x.jsonl", "missing.jsonl"]) == 2
    # A results file tabench wrote is replaced whole (with --force); the inputs' decisions follow.
    (work / "r.decisions.jsonl").write_text("{torn")
    assert await run(["merge", "x.jsonl", "r.jsonl", "--force"]) == 0
    assert not (work / "x.decisions.jsonl").exists()
    assert await run(["merge", "x.jsonl", "r.jsonl", "r.jsonl", "--force"]) == 0
    assert len(list(iter_records(work / "x.jsonl"))) == 6
    err = capsys.readouterr().err
    assert "Traceback" not in err


async def test_batch_shards_merge_their_ledgers(work: Path, capsys, judge_server, monkeypatch) -> None:
    from support.batch_files import answer_round, pending_rounds

    from tabench_dsl.grading.batch import Submitted, read_ledger

    monkeypatch.setenv("TABENCH_BATCH_POLL", "0.05")
    server = await judge_server(by_answer)
    battery, given = write_battery(work), answers(work, 6)
    for k in (1, 2):
        folder = work / f"files{k}"
        argv = ["grade", str(battery), "--answers", str(given), "--judge", server.url, "--model", "m"]
        argv += ["--no-cache", "--shard", f"{k}/2", "--batch", f"files:{folder}", "--out", f"b{k}.jsonl"]
        grading = asyncio.ensure_future(run(argv))
        while not grading.done():
            for batch in pending_rounds(folder) if folder.is_dir() else []:
                await answer_round(folder, batch, server.url)
            await asyncio.sleep(0.02)
        assert await grading == 0
    assert await run(["merge", "all.jsonl", "b1.jsonl", "b2.jsonl"]) == 0
    ledgers = [list(read_ledger(work / f"b{k}.batches.jsonl")) for k in (1, 2)]
    assert list(read_ledger(work / "all.batches.jsonl")) == ledgers[0] + ledgers[1]
    assert {e.endpoint for e in ledgers[0] + ledgers[1] if isinstance(e, Submitted)} == {
        str(work / "files1"),
        str(work / "files2"),
    }
    capsys.readouterr()
    assert await run(["batches", "all.jsonl"]) == 0
    assert capsys.readouterr().out.count("completed (ended)") == 2


async def test_a_shard_is_the_same_with_workers(work: Path) -> None:
    battery, given = write_battery(work), answers(work, 12)
    common = ["grade", str(battery), "--answers", str(given), "--shard", "2/3"]
    assert await run([*common, "--out", "one.jsonl"]) == 0
    assert await run([*common, "--workers", "2", "--out", "two.jsonl"]) == 0
    pairs = [
        sorted((r.system, r.question) for r in iter_records(work / f)) for f in ("one.jsonl", "two.jsonl")
    ]
    assert pairs[0] == pairs[1] and 0 < len(pairs[0]) < 36
    assert all(Shard(2, 3).holds(*p) for p in pairs[0])


async def test_lines_that_are_not_records_are_named_and_left_out(work: Path, capsys) -> None:
    battery, given = write_battery(work), answers(work, 2)
    assert (
        await run(["grade", str(battery), "--answers", str(given), "--question", "h02", "--out", "r.jsonl"])
        == 0
    )
    with open(work / "r.jsonl", "a") as f:
        f.write('{"system": "x"}\n')
    capsys.readouterr()
    assert await run(["merge", "m.jsonl", "r.jsonl"]) == 1
    err = capsys.readouterr().err
    assert "r.jsonl:3: not a result record" in err and "Traceback" not in err
    assert len(list(iter_records(work / "m.jsonl"))) == 2
