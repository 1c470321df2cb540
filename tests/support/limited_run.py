"""`tabench` in a subprocess under a memory limit, for the tests where memory is the point."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

#: The repository (the worktree the tests run from).
ROOT = Path(__file__).resolve().parents[2]

#: The address space a command run under `limited` may use: far more than grading a small file
#: needs, far less than what an unbounded reader takes on these files.
MEMORY_LIMIT = 3 * 1024**3


def limited(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """`tabench ARGV` in a subprocess whose address space is capped at `MEMORY_LIMIT` (RLIMIT_AS)."""

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))

    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(cwd / "xdg-cache")}
    return subprocess.run(
        [sys.executable, "-m", "tabench_dsl", *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=cap,
    )
