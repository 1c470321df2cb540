"""A `tabench grade` process killed mid-run (SIGKILL, SIGINT), then `--resume`: nothing written is
lost, nothing is written twice, a torn last line is repaired before anything is appended."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

from helpers_grading import FAIL, PASS, user_content, write_battery

from tabench_dsl.results import iter_records

COUNT = 120


def write_answers(folder: Path) -> Path:
    path = folder / "answers.jsonl"
    questions = ["h01", "h02", "h03"]
    with open(path, "w", encoding="utf-8") as f:
        for i in range(COUNT):
            system, question = f"s{i // 3:03d}", questions[i % 3]
            f.write(f'{{"system": "{system}", "question": "{question}", "answer": "reply {i}"}}\n')
    return path


async def slow_judge(body: dict) -> str:
    await asyncio.sleep(0.03)
    return PASS if int(user_content(body).rsplit(" ", 1)[1]) % 2 else FAIL


async def start_grade(work: Path, url: str, *extra: str) -> asyncio.subprocess.Process:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "TABENCH_CACHE")}
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tabench_dsl", "grade", str(work / "battery"), "--answers",
        str(work / "answers.jsonl"), "--judge", url, "--model", "m", "--concurrency", "4", "--json", *extra,
        cwd=work, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )


async def wait_for_lines(path: Path, count: int, proc: asyncio.subprocess.Process) -> None:
    for _ in range(600):  # at most 30 s
        if path.exists() and path.read_bytes().count(b"\n") >= count:
            return
        assert proc.returncode is None, "the grading ended before it could be interrupted"
        await asyncio.sleep(0.05)
    raise AssertionError("the grading made no progress")


def check_complete(results: Path) -> None:
    records = list(iter_records(results))
    keys = [(r.system, r.question) for r in records]
    assert len(keys) == COUNT and len(set(keys)) == COUNT  # none lost, none twice
    assert all(r.verdict in ("pass", "fail") for r in records)
    assert results.read_bytes().endswith(b"\n")


async def test_kill_9_then_resume(tmp_path: Path, judge_server) -> None:
    write_battery(tmp_path, t1=False)
    write_answers(tmp_path)
    server = await judge_server(slow_judge)
    results = tmp_path / "results.jsonl"
    proc = await start_grade(tmp_path, server.url)
    await wait_for_lines(results, 20, proc)
    proc.kill()
    await proc.communicate()
    assert proc.returncode == -signal.SIGKILL
    kept = results.read_bytes()
    kept = kept[: kept.rfind(b"\n") + 1]  # a kill may land mid-write: only whole lines count
    assert 20 <= kept.count(b"\n") < COUNT
    # What a crash in the middle of a write leaves: a torn last line.
    torn = b'{"system":"s999","question":"h01","tier":"t2","verdict":"pa'
    results.write_bytes(kept + torn)

    proc = await start_grade(tmp_path, server.url, "--resume")
    _, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()
    assert f"cut a torn last line ({len(torn)} bytes)".encode() in err
    data = results.read_bytes()
    assert data.startswith(kept) and b"s999" not in data
    check_complete(results)


async def test_ctrl_c_writes_nothing_half_then_resume(tmp_path: Path, judge_server) -> None:
    write_battery(tmp_path, t1=False)
    write_answers(tmp_path)
    server = await judge_server(slow_judge)
    results = tmp_path / "results.jsonl"
    proc = await start_grade(tmp_path, server.url)
    await wait_for_lines(results, 10, proc)
    proc.send_signal(signal.SIGINT)
    _, err = await proc.communicate()
    assert proc.returncode == 130, err.decode()
    assert b"interrupted" in err and b"Traceback" not in err
    kept = results.read_bytes()
    assert kept.endswith(b"\n") and kept.count(b"\n") < COUNT
    calls = server.calls

    proc = await start_grade(tmp_path, server.url, "--resume")
    _, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()
    assert results.read_bytes().startswith(kept)
    check_complete(results)
    # Every answer already recorded was served from the cache or skipped, never asked twice
    # (the interrupted answers in flight were asked again, at most four of them).
    assert server.calls - calls <= COUNT - kept.count(b"\n") + 4
