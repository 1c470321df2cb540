"""Ctrl-C is how `tabench view` stops ("Ctrl-C stops", its --help: exit 0, stopped): it says it
stopped and exits 0, not 130 with the message of an interrupted command."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import pytest
from support.make_results import small_results, write_results

pytestmark = pytest.mark.slow  # a viewer in a subprocess, stopped


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
async def test_ctrl_c_stops_the_viewer_with_exit_0(tmp_path: Path, sig: signal.Signals) -> None:
    results = write_results(tmp_path / "results.jsonl", small_results())
    env = {k: v for k, v in os.environ.items() if k != "TABENCH_CACHE"}
    argv = ["view", str(results), "--no-browser", "--port", "0"]
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tabench_dsl", *argv, cwd=tmp_path, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdout is not None
    line = await asyncio.wait_for(proc.stdout.readline(), 60)
    assert b"serving http://127.0.0.1:" in line and b"(Ctrl-C stops)" in line
    proc.send_signal(sig)
    _, err = await asyncio.wait_for(proc.communicate(), 60)
    assert (proc.returncode, err.decode()) == (0, "tabench view: stopped\n")
