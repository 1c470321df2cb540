"""`python -m tabench_dsl` exits with the status the command chose, even after an interrupt landed
in code Python ran from a string (`exec` of source text, as `dataclasses` builds methods at a lazy
import): CPython notes such a `KeyboardInterrupt` and, under `-m`, kills the process with SIGINT at
exit when the note is still set, so exit 130 became death by signal (`core.interrupts.ignore`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

#: A `-m` module that imports every command first (so nothing evaluates source after this), lets a
#: KeyboardInterrupt end a string's evaluation, as a signal landing inside a dataclass's generated
#: method does, catches it as the CLI catches an interrupt, then runs tabench's program entry.
PROBE = """\
import sys
from tabench_dsl.cli import build_parser, entry

build_parser(None)
try:
    exec("raise KeyboardInterrupt")
except KeyboardInterrupt:
    pass
sys.argv = ["tabench", "--version"]
entry()
"""


def test_an_interrupt_caught_in_evaluated_source_does_not_turn_the_exit_into_a_signal(tmp_path: Path) -> None:
    (tmp_path / "probe_entry").mkdir()
    (tmp_path / "probe_entry" / "__main__.py").write_text(PROBE)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(REPO)]))
    done = subprocess.run(
        [sys.executable, "-m", "probe_entry"], env=env, capture_output=True, timeout=60, check=False
    )
    assert done.returncode == 0, (done.returncode, done.stderr.decode())
    assert done.stdout.startswith(b"tabench ")
