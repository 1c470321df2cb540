"""`tabench grade --workers N`: the same records as one process, one writer, clean stops.

Every test runs the real command against the scripted judge server; the workers are real processes
(found through /proc by their command line and working folder).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path

import pytest
from support.helpers_grading import (
    CONTRADICTION,
    FAIL,
    FAIL_SHAPED_PASS,
    MALFORMED,
    PASS,
    write_battery,
)
from support.interrupted_grading import (
    COUNT,
    answer_number,
    check_complete,
    finish,
    grading_under_way,
    slow_judge,
    wait_until_gone,
    workers_in,
    write_answers,
)
from support.interrupted_grading import start_grade as start_one_grade
from support.judge_server import Fault

from tabench_dsl.cli import main
from tabench_dsl.grading.parallel import parse_workers
from tabench_dsl.store.results import iter_records

#: What the judge says to answer n, by n % 7, ask after ask (the last reply repeats).
SCRIPTS: list[list[str | Fault]] = [
    [PASS],
    [FAIL],
    [CONTRADICTION, FAIL],  # the stern retry settles it: fail
    [CONTRADICTION, CONTRADICTION],  # contradiction twice: adjudicate
    [Fault.ERROR_503, PASS],  # one transport retry
    [MALFORMED, FAIL_SHAPED_PASS],  # the format re-ask; a pass with a warning
    [Fault.ERROR_500],  # retries run out: error
]


class Scripted:
    """A responder that answers each answer by its own script, whatever the order of requests."""

    def __init__(self) -> None:
        self.asks: dict[int, int] = {}

    def __call__(self, body: dict) -> str | Fault:
        n = answer_number(body)
        script = SCRIPTS[n % len(SCRIPTS)]
        ask = self.asks.get(n, 0)
        self.asks[n] = ask + 1
        return script[min(ask, len(script) - 1)]


def outcome(path: Path) -> dict[tuple[str, str], tuple]:
    records = list(iter_records(path))
    keys = [(r.system, r.question) for r in records]
    assert len(keys) == len(set(keys)), "an answer recorded twice"
    return {
        (r.system, r.question): (
            r.tier,
            r.verdict,
            r.cause,
            r.reason,
            r.facets,
            r.warnings,
            r.answer,
            [(a.kind, a.raw, a.transport_retries, a.error) for a in r.attempts],
        )
        for r in records
    }


@pytest.mark.slow
async def test_two_workers_record_what_one_process_records(tmp_path: Path, judge_server, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    battery = write_battery(tmp_path, t1=False)
    answers = write_answers(tmp_path, 70)
    responder = Scripted()
    server = await judge_server(responder)
    argv = [
        "grade",
        str(battery),
        "--answers",
        str(answers),
        "--judge",
        server.url,
        "--model",
        "m",
        "--no-cache",
        "--retries",
        "1",
        "--concurrency",
        "6",
        "--json",
    ]
    assert await asyncio.to_thread(main, [*argv, "--out", "one.jsonl"]) == 1  # the n % 7 == 6 errors
    one = outcome(tmp_path / "one.jsonl")
    calls = server.calls
    responder.asks.clear()
    assert await asyncio.to_thread(main, [*argv, "--out", "two.jsonl", "--workers", "2"]) == 1
    two = outcome(tmp_path / "two.jsonl")
    assert server.calls == 2 * calls
    assert len(one) == 70 and two == one
    verdicts = sorted({(v[1], v[2]) for v in two.values()}, key=str)
    assert verdicts == sorted(
        {("pass", None), ("fail", None), ("adjudicate", "contradiction"), ("error", "transport")}, key=str
    )
    assert any(v[5] for v in two.values())  # the fail-shaped pass kept its warning


# -- processes -----------------------------------------------------------------------------------


def start_grade(work: Path, url: str, *extra: str):
    """`tabench grade --workers 2` as a subprocess (see interrupted_grading.start_grade)."""
    return start_one_grade(work, url, "--workers", "2", *extra)


@pytest.mark.slow
async def test_kill_9_of_the_parent_leaves_no_worker_then_resume(tmp_path: Path, judge_server) -> None:
    server, results, proc = await grading_under_way(tmp_path, judge_server, 20, start=start_grade)
    assert len(workers_in(tmp_path)) == 2
    proc.kill()
    await finish(proc)
    assert proc.returncode == -signal.SIGKILL
    await wait_until_gone(tmp_path)
    kept = results.read_bytes()
    kept = kept[: kept.rfind(b"\n") + 1]
    assert 20 <= kept.count(b"\n") < COUNT
    results.write_bytes(kept)

    proc = await start_grade(tmp_path, server.url, "--resume")
    _, err = await finish(proc)
    assert proc.returncode == 0, err.decode()
    assert results.read_bytes().startswith(kept)
    check_complete(results)
    assert not workers_in(tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
async def test_interrupt_exits_130_with_whole_records_then_resume(tmp_path: Path, judge_server, sig) -> None:
    server, results, proc = await grading_under_way(tmp_path, judge_server, 10, start=start_grade)
    proc.send_signal(sig)
    _, err = await finish(proc)
    assert proc.returncode == 130, err.decode()
    assert b"interrupted" in err and b"Traceback" not in err
    assert not workers_in(tmp_path)  # the parent reaped them before exiting
    kept = results.read_bytes()
    assert kept.endswith(b"\n") and kept.count(b"\n") < COUNT
    assert len(list(iter_records(results))) == kept.count(b"\n")  # every line a whole record

    proc = await start_grade(tmp_path, server.url, "--resume")
    _, err = await finish(proc)
    assert proc.returncode == 0, err.decode()
    assert results.read_bytes().startswith(kept)
    check_complete(results)


@pytest.mark.slow
async def test_a_worker_that_dies_is_reported_exit_1_then_resume(tmp_path: Path, judge_server) -> None:
    server, results, proc = await grading_under_way(tmp_path, judge_server, 10, start=start_grade)
    victim = workers_in(tmp_path)[0]
    os.kill(victim, signal.SIGKILL)
    _, err = await finish(proc)
    assert proc.returncode == 1, err.decode()
    assert b"ended unexpectedly" in err and b"Traceback" not in err
    records = list(iter_records(results))
    assert len(records) == len({(r.system, r.question) for r in records}) < COUNT

    proc = await start_grade(tmp_path, server.url, "--resume")
    _, err = await finish(proc)
    assert proc.returncode == 0, err.decode()
    check_complete(results)


async def test_workers_option_is_checked(tmp_path: Path, capsys) -> None:
    battery = write_battery(tmp_path)
    answers = write_answers(tmp_path, 3)
    argv = ["grade", str(battery), "--answers", str(answers), "--out", str(tmp_path / "r.jsonl")]
    assert await asyncio.to_thread(main, [*argv, "--workers", "0"]) == 2
    assert "--workers must be" in capsys.readouterr().err
    assert await asyncio.to_thread(main, [*argv, "--workers", "many"]) == 2
    # The builtin judge in two workers: every answer graded once, T1 included.
    assert await asyncio.to_thread(main, [*argv, "--workers", "2", "--json"]) == 0
    assert len(outcome(tmp_path / "r.jsonl")) == 3
    assert parse_workers("auto") == (2 if (os.cpu_count() or 1) >= 4 else 1)


@pytest.mark.slow
async def test_workers_share_the_reply_cache(tmp_path: Path, judge_server, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TABENCH_CACHE", raising=False)
    battery = write_battery(tmp_path, t1=False)
    answers = write_answers(tmp_path, 30)
    server = await judge_server(slow_judge)
    argv = [
        "grade",
        str(battery),
        "--answers",
        str(answers),
        "--judge",
        server.url,
        "--model",
        "m",
        "--workers",
        "2",
        "--json",
    ]
    assert await asyncio.to_thread(main, [*argv, "--out", "first.jsonl"]) == 0
    assert server.calls == 30
    assert await asyncio.to_thread(main, [*argv, "--out", "again.jsonl"]) == 0
    assert server.calls == 30  # every reply came from the cache both workers wrote
    again = list(iter_records(tmp_path / "again.jsonl"))
    assert len(again) == 30 and all(a.cache_hit for r in again for a in r.attempts)


async def test_refused_key_stops_every_worker_without_leaking_it(
    tmp_path: Path, capsys, judge_server, monkeypatch
) -> None:
    canary = "sk-canary-workers-0123456789abcdef"
    monkeypatch.setenv("OPENAI_API_KEY", canary)
    monkeypatch.chdir(tmp_path)
    server = await judge_server([Fault.UNAUTHORIZED])
    battery = write_battery(tmp_path, t1=False)
    answers = write_answers(tmp_path, 30)
    argv = [
        "grade",
        str(battery),
        "--answers",
        str(answers),
        "--judge",
        server.url,
        "--model",
        "m",
        "--workers",
        "2",
        "--no-cache",
    ]
    assert await asyncio.to_thread(main, argv) == 2
    out, err = capsys.readouterr()
    assert f"the judge at {server.url} (" in err and "refused the request" in err and "401" in err
    assert canary not in out + err and "Traceback" not in err
    assert not (tmp_path / "results.jsonl").exists() and not workers_in(tmp_path)
    # A judge that cannot be configured in the workers is a usage error, as in one process.
    assert await asyncio.to_thread(main, [*argv[:4], "--judge", server.url, "--workers", "2"]) == 2
    assert "needs a model" in capsys.readouterr().err


def test_a_worker_process_never_imports_the_cli() -> None:
    """The runtime never reaches into the command line layer: a worker that has imported all it
    grades with (and ended at once: no configuration on its stdin) holds no `tabench_dsl.cli` module."""
    import subprocess

    script = (
        "import json, sys; from tabench_dsl.grading.parallel.worker import main; main(); "
        "sys.stderr.write(json.dumps(sorted(m for m in sys.modules if m.startswith('tabench_dsl'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], input="", capture_output=True, text=True, check=True, timeout=60
    )
    modules = json.loads(done.stderr.strip().splitlines()[-1])  # data read as data, never run
    assert "tabench_dsl.grading.event_loop" in modules and "tabench_dsl.grading.runner" in modules
    assert [m for m in modules if m.startswith("tabench_dsl.cli")] == []
