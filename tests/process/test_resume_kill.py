"""A `tabench grade` process killed mid-run (SIGKILL, SIGINT), then `--resume`: nothing written is
lost, nothing is written twice, a torn last line is repaired before anything is appended."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from support.interrupted_grading import COUNT, check_complete, finish, grading_under_way, start_grade

pytestmark = pytest.mark.slow  # gradings in subprocesses, killed and resumed


async def test_kill_9_then_resume(tmp_path: Path, judge_server) -> None:
    server, results, proc = await grading_under_way(tmp_path, judge_server, 20)
    proc.kill()
    await finish(proc)
    assert proc.returncode == -signal.SIGKILL
    kept = results.read_bytes()
    kept = kept[: kept.rfind(b"\n") + 1]  # a kill may land mid-write: only whole lines count
    assert 20 <= kept.count(b"\n") < COUNT
    # What a crash in the middle of a write leaves: a torn last line.
    torn = b'{"system":"s999","question":"h01","tier":"t2","verdict":"pa'
    results.write_bytes(kept + torn)

    proc = await start_grade(tmp_path, server.url, "--resume")
    _, err = await finish(proc)
    assert proc.returncode == 0, err.decode()
    assert f"cut a torn last line ({len(torn)} bytes)".encode() in err
    data = results.read_bytes()
    assert data.startswith(kept) and b"s999" not in data
    check_complete(results)


async def test_ctrl_c_writes_nothing_half_then_resume(tmp_path: Path, judge_server) -> None:
    server, results, proc = await grading_under_way(tmp_path, judge_server, 10)
    proc.send_signal(signal.SIGINT)
    _, err = await finish(proc)
    assert proc.returncode == 130, err.decode()
    assert b"interrupted" in err and b"Traceback" not in err
    # It says how to continue: the same command with --resume.
    hint = (
        b"tabench: to continue this grading, run the same command with --resume: the answers already graded"
    )
    assert hint in err and err.rstrip().endswith(b"tabench: interrupted; results written so far are kept")
    kept = results.read_bytes()
    assert kept.endswith(b"\n") and kept.count(b"\n") < COUNT
    calls = server.calls

    proc = await start_grade(tmp_path, server.url, "--resume")
    _, err = await finish(proc)
    assert proc.returncode == 0, err.decode()
    assert results.read_bytes().startswith(kept)
    check_complete(results)
    # Every answer already recorded was served from the cache or skipped, never asked twice
    # (the interrupted answers in flight were asked again, at most four of them).
    assert server.calls - calls <= COUNT - kept.count(b"\n") + 4
