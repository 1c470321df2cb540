"""How much of the totals the terminal shows: a screenful per section, `--by SECTION` for all of
one, and the line `grade` ends with instead of the sections after the per-system table.

A screenful is the terminal's height when the output is a terminal (`LINES` when set, as rich and
`shutil` read it), else `PIPE_ROWS`: a pipe or a file gets what one page of a pager shows. A section
(`review.useful_rows.SECTIONS`) whose rows and frame would run past it shows its most useful rows,
and a note naming how many it left out and the `--by` flag that shows it whole. The per-system
table is never cut, nor any figure of `--json` or `--csv`.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from ..core.display import shown
from ..review.useful_rows import SECTIONS, Limits

if TYPE_CHECKING:
    from ..review.totals import Totals

#: The rows of a screenful when the output is no terminal (a pipe, a file).
PIPE_ROWS = 40
#: The lines of a section that are not its rows: the title, three rules, the header, a caption
#: line and the cut note (which may take two).
SECTION_FRAME = 8
#: A section keeps at least this many rows, however short the terminal.
MIN_ROWS = 10


def add_by_option(parser: argparse.ArgumentParser) -> None:
    """Add `--by SECTION` (repeatable) to `totals`' parser."""
    parser.add_argument(
        "--by",
        action="append",
        choices=tuple(SECTIONS),
        default=None,
        help="show this section whole (repeatable): a section longer than a screenful otherwise "
        "shows its most useful rows (the lowest scores, the most observed facets, the largest "
        "significant differences) and says how many it left out",
    )


def screen_rows() -> int:
    """The lines of a screenful (module docstring)."""
    lines = os.environ.get("LINES", "")
    if lines.isdigit() and int(lines) > 0:
        return int(lines)
    if sys.stdout.isatty():
        return shutil.get_terminal_size().lines
    return PIPE_ROWS


def section_limits(by: list[str] | None) -> Limits:
    """The row limit of every section on this terminal, with the sections `--by` names whole."""
    return Limits(rows=max(screen_rows() - SECTION_FRAME, MIN_ROWS), whole=frozenset(by or ()))


def rest_line(totals: Totals, results: Path) -> str:
    """The line `grade` ends with under the per-system table: what else `tabench totals` shows of
    the results file, and the command."""
    parts = [f"{len(totals.questions)} question(s)"]
    if totals.tags:
        parts.append(f"{len(totals.tags)} tag(s)")
    if totals.facets:
        parts.append(f"{len(totals.facets)} facet(s)")
    if totals.comparisons.pairs:
        parts.append(f"{len(totals.comparisons.pairs)} pair(s) of systems compared")
    checks = [
        name
        for name, present in (
            ("the judge panel", totals.panel is not None),
            ("the T1 audit", totals.t1_audit is not None),
            ("the blind audits", totals.usage.audit is not msgspec.UNSET),
            ("the flip rate", totals.stability is not msgspec.UNSET),
        )
        if present
    ]
    return f"tabench totals {shown(shlex.quote(str(results)))} shows the rest: {', '.join(parts + checks)}"
