"""`grade --batch files:DIR`: each round's requests written as an OpenAI batch input file, results
read from an OpenAI batch output file that an engine (here support/batch_files.py, and a real Ray Data
pipeline in local mode) wrote by calling the scripted judge server. Same records as a live grading."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import sys
from collections import Counter
from pathlib import Path

import pytest
from support.batch_files import answer_round, check_request_line, output_line, pending_rounds
from support.helpers_grading import CONTRADICTION, FAIL, MALFORMED, PASS, write_battery

from tabench_dsl.cli import main
from tabench_dsl.grading.batch import Ended, Submitted, read_ledger
from tabench_dsl.store.results import iter_records

MIXED = [
    ("a", "h02", "the port is 7311 ans-t1"),  # T1 settles it
    ("a", "h03", "ans-p"),  # pass at once
    ("b", "h03", "ans-m"),  # malformed, then pass: round 2 holds its format re-ask
    ("c", "h03", "ans-c"),  # contradiction, then a consistent fail: round 2 holds the stern retry
    ("d", "h03", "ans-mm"),  # malformed twice: adjudicate
]
PLANS = {"t1": [PASS], "p": [PASS], "m": [MALFORMED, PASS], "c": [CONTRADICTION, FAIL], "mm": [MALFORMED]}


def scripted(plans: dict[str, list[str]]):
    asked: Counter[str] = Counter()

    def respond(body: dict):
        text = " ".join(m["content"] for m in body["messages"] if m["role"] == "user")
        name = re.search(r"ans-(\w+)", text)[1]
        reply = plans[name][min(asked[name], len(plans[name]) - 1)]
        asked[name] += 1
        return reply

    return respond


@pytest.fixture
def work(work: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TABENCH_BATCH_POLL", "0.05")
    write_battery(work)
    (work / "answers.jsonl").write_text(
        "".join(json.dumps({"system": s, "question": q, "answer": a}) + "\n" for s, q, a in MIXED)
    )
    return work


def argv(work: Path, judge: str, *extra: str) -> list[str]:
    return [
        "grade",
        str(work / "battery"),
        "--answers",
        "answers.jsonl",
        "--judge",
        judge,
        "--model",
        "m",
        *extra,
    ]


async def engine(folder: Path, judge_url: str, grading: asyncio.Future) -> list[int]:
    """Answer each round's requests file as it appears, until the grading ends; requests a round."""
    sizes = []
    while not grading.done():
        for batch in pending_rounds(folder) if folder.is_dir() else []:
            sizes.append(await answer_round(folder, batch, judge_url))
        await asyncio.sleep(0.02)
    return sizes


def same_records(a: Path, b: Path) -> None:
    left = {(r.system, r.question): r for r in iter_records(a)}
    right = {(r.system, r.question): r for r in iter_records(b)}
    assert left.keys() == right.keys()
    for pair, record in left.items():
        other = right[pair]
        assert (other.verdict, other.reason, other.cause, other.tier) == (
            record.verdict,
            record.reason,
            record.cause,
            record.tier,
        )
        assert [(x.kind, x.raw, x.request_sha256) for x in other.attempts] == [
            (x.kind, x.raw, x.request_sha256) for x in record.attempts
        ]


async def test_rounds_of_files_give_the_records_live_grading_gives(work: Path, judge_server, capsys) -> None:
    server = await judge_server(scripted(PLANS))
    folder = work / "batches"
    grading = asyncio.ensure_future(
        asyncio.to_thread(main, argv(work, server.url, "--batch", f"files:{folder}"))
    )
    sizes = await engine(folder, server.url, grading)
    assert await grading == 0
    assert sizes == [4, 3]  # round 1: the first asks T1 left; round 2: the two re-asks, the stern retry
    err = capsys.readouterr().err
    assert "batch: 7 request(s) submitted in 2 batch(es), 2 round(s)" in err
    for line in (folder / "round-1.requests.jsonl").read_text().splitlines():
        check_request_line(line)  # the OpenAI batch input format, body a Chat Completions request
    entries = list(read_ledger(work / "results.batches.jsonl"))
    submitted = [e for e in entries if isinstance(e, Submitted)]
    assert [(e.id, e.service, e.endpoint, e.round) for e in submitted] == [
        ("round-1", "files", str(folder), 1),
        ("round-2", "files", str(folder), 2),
    ]
    assert [e.state for e in entries if isinstance(e, Ended)] == ["completed", "completed"]

    live = await judge_server(scripted(PLANS))
    assert await asyncio.to_thread(main, argv(work, live.url, "--no-cache", "--out", "live.jsonl")) == 0
    same_records(work / "results.jsonl", work / "live.jsonl")
    # A second grading of the same answers: every reply is in the cache, no file is written.
    assert (
        await asyncio.to_thread(
            main, argv(work, server.url, "--batch", f"files:{folder}", "--out", "again.jsonl")
        )
        == 0
    )
    assert not (folder / "round-3.requests.jsonl").exists()


async def test_killed_while_waiting_then_resume_reads_the_results(work: Path, judge_server, capsys) -> None:
    server = await judge_server(scripted(PLANS))
    folder = work / "batches"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    command = [sys.executable, "-m", "tabench_dsl", *argv(work, server.url, "--batch", f"files:{folder}")]
    process = await asyncio.create_subprocess_exec(*command, env=env, stderr=asyncio.subprocess.PIPE)
    for _ in range(600):
        if (work / "results.batches.jsonl").exists() and (folder / "round-1.requests.jsonl").exists():
            break
        await asyncio.sleep(0.05)
    process.send_signal(signal.SIGINT)
    _, err = await process.communicate()
    assert process.returncode == 130
    assert "the requests files are in" in err.decode() and "--resume" in err.decode()
    # The folder the ledger names is not where `tabench batches` looks on the ledger's word: the
    # user names it now, and one the ledger does not name is refused, both named.
    assert await asyncio.to_thread(main, ["batches", "results.jsonl"]) == 2
    err = capsys.readouterr().err
    assert f"the ledger names the endpoint '{folder.resolve()}'" in err and "--judge files:DIR" in err
    assert await asyncio.to_thread(main, ["batches", "results.jsonl", "--judge", f"files:{work}"]) == 2
    assert f"names '{work.resolve()}'" in capsys.readouterr().err
    # `tabench batches` asks the files: round 1 waits for its results, none of its 4 requests done.
    assert await asyncio.to_thread(main, ["batches", "results.jsonl", "--judge", f"files:{folder}"]) == 0
    assert re.search(r"round-1\s+files\s+1\s+4\s+waiting, 0/4 done", capsys.readouterr().out)
    # The engine runs the round while no grading waits; --resume reads its results, asks no more
    # than the next round.
    assert await answer_round(folder, "round-1", server.url) == 4
    grading = asyncio.ensure_future(
        asyncio.to_thread(main, argv(work, server.url, "--batch", f"files:{folder}", "--resume"))
    )
    assert await engine(folder, server.url, grading) == [3]
    assert await grading == 0
    assert len(list(iter_records(work / "results.jsonl"))) == 5


async def test_a_bad_results_line_stops_with_its_place(work: Path, judge_server, capsys) -> None:
    server = await judge_server(scripted(PLANS))
    folder = work / "batches"
    grading = asyncio.ensure_future(
        asyncio.to_thread(main, argv(work, server.url, "--batch", f"files:{folder}"))
    )
    while not (folder / "round-1.requests.jsonl").exists():
        await asyncio.sleep(0.02)
    names = [json.loads(x)["custom_id"] for x in (folder / "round-1.requests.jsonl").read_text().splitlines()]
    lines = [output_line(n, 500, {"error": {"message": "engine down"}}) for n in names[1:]]
    (folder / "round-1.results.jsonl").write_text(
        f'{{"custom_id": "{names[0]}", "response": 7}}\n' + "\n".join(lines) + "\n"
    )
    assert await grading == 2
    err = capsys.readouterr().err
    assert f"{folder / 'round-1.results.jsonl'}:1:" in err and "not a batch output line" in err
    assert "Traceback" not in err


async def test_the_files_need_a_chat_completions_judge(work: Path, capsys) -> None:
    assert await asyncio.to_thread(main, argv(work, "builtin", "--batch", "files:b")) == 2
    assert "--batch files:DIR writes Chat Completions requests" in capsys.readouterr().err
    assert (
        await asyncio.to_thread(
            main, ["grade", str(work / "battery"), "--answers", "answers.jsonl", "--batch", "lots"]
        )
        == 2
    )
    assert "the only value --batch takes is files:DIR" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.timeout(300)  # Ray's start-up alone takes tens of seconds on a loaded 2-core machine
async def test_a_ray_data_pipeline_runs_the_rounds(work: Path, judge_server) -> None:
    ray = pytest.importorskip("ray", reason="the ray extra (ray[data]) is not installed")
    pytest.importorskip("ray.data", reason="Ray Data is not installed (the ray extra: ray[data])")
    import requests

    server = await judge_server(scripted(PLANS))
    folder = work / "batches"
    url = server.url

    def call_judge(row: dict) -> dict:
        response = requests.post(f"{url}/chat/completions", json=row["body"], timeout=30)
        return json.loads(output_line(row["custom_id"], response.status_code, response.json()))

    def pipeline(batch: str) -> None:
        requests_file = ray.data.read_json(str(folder / f"{batch}.requests.jsonl")).materialize()
        requests_file.map(call_judge).write_json(str(folder / f".{batch}.ray"))
        # Put in place once whole: tabench then reads the folder of part files Ray wrote.
        os.rename(folder / f".{batch}.ray", folder / f"{batch}.results.jsonl")

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    # The grading runs in its own process, so a failing pipeline cannot leave it waiting forever.
    command = [sys.executable, "-m", "tabench_dsl", *argv(work, url, "--batch", f"files:{folder}")]
    ray.init(
        num_cpus=1,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": env["PYTHONPATH"]}},
    )
    process = await asyncio.create_subprocess_exec(*command, env=env, stdout=asyncio.subprocess.DEVNULL)
    done = 0
    try:
        while process.returncode is None:
            for batch in pending_rounds(folder) if folder.is_dir() else []:
                await asyncio.to_thread(pipeline, batch)
                done += 1
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(process.wait(), 0.05)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
        ray.shutdown()
    assert process.returncode == 0
    assert done == 2
    assert (folder / "round-1.results.jsonl").is_dir()
    live = await judge_server(scripted(PLANS))
    assert await asyncio.to_thread(main, argv(work, live.url, "--no-cache", "--out", "live.jsonl")) == 0
    same_records(work / "results.jsonl", work / "live.jsonl")


async def test_the_file_service_reads_whole_lines_and_cancels(tmp_path: Path) -> None:
    from tabench_dsl.grading.batch.file_batches import FileBatches

    service = FileBatches(tmp_path / "b")
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "x"}]}).encode()
    status = await service.submit([service.entry("tb-first-1", body), service.entry("tb-first-2", body)])
    assert (status.id, status.state, status.total, status.ended) == ("round-1", "waiting", 2, False)
    assert [
        check_request_line(x).custom_id for x in service.requests_file("round-1").read_text().splitlines()
    ] == [
        "tb-first-1",
        "tb-first-2",
    ]
    completion = {
        "id": "c",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "hi"}}],
    }
    whole = output_line("tb-first-2", 200, completion)
    service.results_file("round-1").write_text(whole + "\n" + whole[:20])  # the second line is half written
    status = await service.status("round-1")
    assert (status.state, status.done, status.ended) == ("in_progress", 1, False)
    status = await service.cancel("round-1")
    assert (status.state, status.ended) == ("cancelled", True)
    assert [(name, result.kind) for name, result in [x async for x in service.results(status)]] == [
        ("tb-first-2", "reply")
    ]
    # A second submission never writes over the first round's files.
    assert (await service.submit([service.entry("tb-first-3", body)])).id == "round-2"
