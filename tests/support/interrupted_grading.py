"""Helpers for tests that interrupt a `tabench grade` subprocess (kill -9, Ctrl-C, SIGTERM) and resume.

A slow scripted judge keeps the grading busy long enough to be interrupted mid-run; the answers are
numbered so the judge's verdict follows from the answer alone and a resumed run must agree.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from pathlib import Path

from support.helpers_grading import FAIL, PASS, user_content
from tabench_dsl.grading.parallel import WORKER_COMMAND
from tabench_dsl.store.results import iter_records

#: Answers in the file: 40 systems x 3 questions.
COUNT = 120
QUESTIONS = ["h01", "h02", "h03"]
#: Seconds a `tabench grade` subprocess gets to end once it is expected to (a whole run of COUNT
#: answers takes a few seconds); past that it hangs, and the test fails instead of blocking the suite.
FINISH_SECONDS = 60.0


def write_answers(folder: Path, count: int = COUNT) -> Path:
    """`answers.jsonl` in `folder`: answer i is `reply i`, system s<i//3>, question QUESTIONS[i%3]."""
    path = folder / "answers.jsonl"
    with open(path, "w", encoding="utf-8") as f:
        for i in range(count):
            line = {"system": f"s{i // 3:03d}", "question": QUESTIONS[i % 3], "answer": f"reply {i}"}
            f.write(json.dumps(line))
            f.write("\n")
    return path


def answer_number(body: dict) -> int:
    """The i of `reply i` in a judge request's user message."""
    found = re.search(r"reply (\d+)", user_content(body))
    assert found, "no answer in the user message"
    return int(found[1])


async def slow_judge(body: dict) -> str:
    """30 ms a reply; odd answers pass, even ones fail."""
    await asyncio.sleep(0.03)
    return PASS if answer_number(body) % 2 else FAIL


async def start_grade(work: Path, url: str, *extra: str) -> asyncio.subprocess.Process:
    """`tabench grade` of work/battery with work/answers.jsonl against `url`, as a subprocess."""
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "TABENCH_CACHE")}
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tabench_dsl",
        "grade",
        str(work / "battery"),
        "--answers",
        str(work / "answers.jsonl"),
        "--judge",
        url,
        "--model",
        "m",
        "--concurrency",
        "4",
        "--json",
        *extra,
        cwd=work,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def finish(proc: asyncio.subprocess.Process) -> tuple[bytes, bytes]:
    """`proc.communicate()` within FINISH_SECONDS: its (stdout, stderr) once it has exited. A
    process that hangs is killed (its workers see their input close and exit) and the test fails."""
    try:
        return await asyncio.wait_for(proc.communicate(), FINISH_SECONDS)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise AssertionError(f"the grading did not end within {FINISH_SECONDS:g} s") from None


async def wait_for_lines(path: Path, count: int, proc: asyncio.subprocess.Process) -> None:
    """Wait until `path` holds `count` lines, failing if the grading ends first."""
    for _ in range(600):  # at most 30 s
        if path.exists() and path.read_bytes().count(b"\n") >= count:
            return
        if proc.returncode is not None:
            _, err = await finish(proc)
            raise AssertionError(f"the grading ended ({proc.returncode}) before it was interrupted: {err!r}")
        await asyncio.sleep(0.05)
    raise AssertionError("the grading made no progress")


def check_complete(results: Path) -> None:
    """Every answer recorded exactly once, each with a verdict, and the file ends with a whole line."""
    records = list(iter_records(results))
    keys = [(r.system, r.question) for r in records]
    assert len(keys) == COUNT and len(set(keys)) == COUNT  # none lost, none twice
    assert all(r.verdict in ("pass", "fail") for r in records)
    assert results.read_bytes().endswith(b"\n")


async def grading_under_way(work: Path, judge_server, lines: int, start=start_grade):
    """A battery, answers and a slow judge in `work`, and a grading started by `start` that has
    written `lines` records: returns (server, results path, process), ready to be interrupted."""
    from support.helpers_grading import write_battery

    write_battery(work, t1=False)
    write_answers(work)
    server = await judge_server(slow_judge)
    results = work / "results.jsonl"
    proc = await start(work, server.url)
    await wait_for_lines(results, lines, proc)
    return server, results, proc


def workers_in(folder: Path) -> list[int]:
    """Live grading workers (started with `WORKER_COMMAND`) whose working folder is `folder`
    (zombies do not count)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            cwd = os.readlink(f"/proc/{entry}/cwd")
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if WORKER_COMMAND.encode() in cmdline and cwd == str(folder) and state != "Z":
            found.append(int(entry))
    return found


async def wait_until_gone(folder: Path) -> None:
    for _ in range(100):  # at most 10 s
        if not workers_in(folder):
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"grading workers still running: {workers_in(folder)}")
