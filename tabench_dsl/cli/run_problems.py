"""Warnings the result-reading commands (view, report, adjudicate) print the same way."""

from __future__ import annotations

import sys

from ..core.display import shown

#: How many bad lines are named one by one before the rest are only counted.
SHOWN_PROBLEMS = 5


def warn_run_problems(run_data) -> None:
    """Print a loaded run's bad lines and stale decisions to stderr (a `viewer.run.Run`), the names
    and paths in them shown as text."""
    for problem in run_data.problems[:SHOWN_PROBLEMS]:
        print(f"tabench: warning: {shown(problem)}", file=sys.stderr)
    if len(run_data.problems) > SHOWN_PROBLEMS:
        print(
            f"tabench: warning: {len(run_data.problems) - SHOWN_PROBLEMS} more bad lines skipped",
            file=sys.stderr,
        )
    for stale in run_data.stale:
        d = stale.decision
        print(
            f"tabench: warning: decision on {shown(d.system)}/{shown(d.question)} ignored: {stale.reason}",
            file=sys.stderr,
        )
