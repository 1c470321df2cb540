"""Ctrl-C and SIGTERM at many moments of a `tabench grade` run, one process and `--workers 2`.

Whatever the moment (workers starting, no record yet, after 1, 5 or 20 records, while the run is
finishing), the command ends cleanly: exit 130 with the one-line message (or 0 when the run had
already finished), never a traceback or a loop error, every line in the results file a whole
record, no worker left behind, and `--resume` completes the grading with nothing twice.
"""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import pytest
from support.helpers_grading import write_battery
from support.interrupted_grading import (
    COUNT,
    check_complete,
    finish,
    slow_judge,
    start_grade,
    wait_until_gone,
    workers_in,
    write_answers,
)

from tabench_dsl.store.results import iter_records

pytestmark = pytest.mark.slow  # 48 gradings in subprocesses, each interrupted and resumed

#: When the signal is sent. "starting": as soon as the worker processes exist (one process: as
#: soon as the judge has its first request); a number: once the results hold that many records;
#: "finishing": once every record is written, while the command reaps workers and prints totals.
MOMENTS = ["starting", 0, 1, 5, 20, "finishing"]
#: Anything that shows an interrupt was not handled cleanly.
UNCLEAN = (b"Traceback", b"Exception in callback", b"Task was destroyed", b"never awaited", b"Error")


async def _reach(moment: str | int, work: Path, results: Path, server, proc, workers: int) -> None:
    """Wait until the grading in `work` is at `moment`."""
    for _ in range(1200):  # at most 30 s
        lines = results.read_bytes().count(b"\n") if results.exists() else 0
        if moment == "starting":
            reached = bool(workers_in(work)) if workers > 1 else server.calls > 0
        elif moment == "finishing":
            reached = lines >= COUNT
        else:
            reached = server.calls > 0 and lines >= moment
        if reached:
            return
        if proc.returncode is not None:
            raise AssertionError(f"the grading ended ({proc.returncode}) before {moment!r}")
        await asyncio.sleep(0.025)
    raise AssertionError(f"the grading never reached {moment!r}")


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("moment", MOMENTS)
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
async def test_an_interrupt_at_any_moment_exits_cleanly(
    tmp_path: Path, judge_server, sig: signal.Signals, moment: str | int, workers: int
) -> None:
    write_battery(tmp_path, t1=False)
    write_answers(tmp_path)
    server = await judge_server(slow_judge)
    results = tmp_path / "results.jsonl"
    extra = ("--workers", str(workers)) if workers > 1 else ()
    proc = await start_grade(tmp_path, server.url, *extra)
    await _reach(moment, tmp_path, results, server, proc, workers)
    proc.send_signal(sig)
    _, err = await finish(proc)

    finished = moment == "finishing" and proc.returncode == 0  # the signal came after the end
    assert proc.returncode == 130 or finished, (proc.returncode, err.decode())
    for mark in UNCLEAN:
        assert mark not in err, err.decode()
    if not finished:
        assert err.rstrip().endswith(b"tabench: interrupted; results written so far are kept"), err.decode()
        assert err.count(b"interrupted") == 1
    await wait_until_gone(tmp_path)
    kept = results.read_bytes() if results.exists() else b""
    assert not kept or kept.endswith(b"\n")
    assert len(list(iter_records(results))) == kept.count(b"\n") if kept else True  # whole records

    proc = await start_grade(tmp_path, server.url, "--resume", *extra)
    _, err = await finish(proc)
    assert proc.returncode == 0, err.decode()
    assert results.read_bytes().startswith(kept)
    check_complete(results)
    assert not workers_in(tmp_path)
