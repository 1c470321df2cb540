"""How `grade` and `calibrate` end: why answers ended in error or adjudicate, one line per cause.

`grading.causes` counts; this module words it for the terminal. Messages come from judges and
servers (a reply, an exception's text): each is put on one line, cut, and shown as text.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from ..core.display import shown
from ..grading.causes import CauseCount

#: Characters of a cause's first message shown in the terminal (the whole is in the results file).
MESSAGE_WIDTH = 160


def cause_lines(causes: Sequence[CauseCount]) -> list[str]:
    """`causes` as lines: a heading, then `  N verdict (cause): first message` per cause."""
    if not causes:
        return []
    lines = ["why answers ended in error or adjudicate (count, verdict, cause: the first message):"]
    for c in causes:
        message = " ".join(c.first.split()) or "(no message)"
        if len(message) > MESSAGE_WIDTH:
            message = message[: MESSAGE_WIDTH - 3] + "..."
        lines.append(f"  {c.count} {c.verdict} ({shown(c.cause)}): {shown(message)}")
    return lines


def print_causes(causes: Sequence[CauseCount]) -> None:
    """Print `cause_lines(causes)` on stderr (nothing when there are none)."""
    for line in cause_lines(causes):
        print(line, file=sys.stderr)
