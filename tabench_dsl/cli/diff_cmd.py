"""`tabench diff A.jsonl B.jsonl [--json]`: two gradings of the same answers, compared.

Each file is read as totals reads it (the last record of a pair stands, its decisions applied);
`review.diff` says what each figure counts. Exit status 1 when some lines were not records.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.display import json_for_terminal
from .command_help import add_command
from .run_problems import warn_run_problems

if TYPE_CHECKING:
    from ..review.diff import Diff, ShownDiff

#: Pairs found in one file only that the terminal names one by one (`--json` names them all).
SHOWN_ONLY_IN = 20
#: Flips shown in the table: at a million pairs a table of every flip takes minutes to draw and
#: runs far past any screen; `--json` lists them all.
SHOWN_FLIPS = 200
#: What the terminal shows of a diff (and the index keeps of it for the terminal): flips, pairs.
SHOWN = (SHOWN_FLIPS, SHOWN_ONLY_IN)
#: Characters of a reason the terminal's table shows (`--json` gives them whole).
REASON_WIDTH = 80


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = add_command(
        sub,
        "diff",
        help="compare two gradings of the same answers (flipped verdicts, agreement, kappa, McNemar)",
        description="Compare two results files that graded the same answers (a new judge model, "
        "scorer or battery): every verdict that flipped with both reasons, the agreement and Cohen's "
        "kappa, and McNemar's exact test of the change in pass rate; pairs in only one file are "
        "counted and named. The last record of each pair stands and human decisions are applied. "
        "An error on either side is listed as a flip but left out of agreement, kappa and McNemar.",
        exit_codes=((0, "done"), (1, "some lines were not records (each named on stderr, left out)")),
    )
    parser.add_argument("a", type=Path, metavar="A", help="the first results file (the baseline)")
    parser.add_argument("b", type=Path, metavar="B", help="the second results file (the new grading)")
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of tables")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ..review.diff import diff_json, shown_diff
    from ..review.indexed_diff import kept_diff, kept_shown_diff

    # The diff of two files that did not change since the last `diff A B`: from A's index (the
    # terminal's part of it alone when that is all that is printed).
    if args.json:
        diff = kept_diff(args.a, args.b)
        if diff is not None:
            sys.stdout.buffer.write(json_for_terminal(diff_json(diff)) + b"\n")
            return 0
    else:
        shown = kept_shown_diff(args.a, args.b, SHOWN)
        if shown is not None:
            print_diff(shown)
            return 0
    diff, status = _computed_diff(args.a, args.b)
    if args.json:
        sys.stdout.buffer.write(json_for_terminal(diff_json(diff)) + b"\n")
    else:
        print_diff(shown_diff(diff, shown_flips=SHOWN_FLIPS, shown_only_in=SHOWN_ONLY_IN))
    return status


def _computed_diff(a: Path, b: Path) -> tuple[Diff, int]:
    """The diff of `a` and `b` read from both files (their problems warned of), kept in A's index
    when neither has a bad line or a stale decision; the diff and the exit status."""
    from ..review.diff_files import diff_files
    from ..review.indexed_diff import keep_diff
    from ..store.results_index import measure

    before = (measure(a), measure(b))
    # Streamed: per pair only its outcome, and the reasons of the flips (`review.diff_files`).
    diff, first, second = diff_files(a, b)
    for loaded in (first, second):
        warn_run_problems(loaded)
    if not (first.problems or second.problems or first.stale or second.stale):
        keep_diff(a, b, diff, before=before, shown=SHOWN)
    return diff, 1 if first.problems or second.problems else 0


def print_diff(shown: ShownDiff) -> None:
    """The diff as a summary, a table of the flips and the pairs found on one side only (the ones
    `shown` holds, and how many more there are)."""
    from rich.console import Console

    from ..review.diff import render_diff

    console = Console(width=None if sys.stdout.isatty() else 160, markup=False, emoji=False)
    console.print(render_diff(shown, reason_width=REASON_WIDTH))
