"""`--compare B.jsonl` on report and view: a second grading's verdicts beside the first's."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_compare_option(parser: argparse.ArgumentParser) -> None:
    """`--compare B.jsonl`: another results file of the same answers (a new judge, scorer or battery)."""
    parser.add_argument(
        "--compare",
        type=Path,
        default=None,
        metavar="B.jsonl",
        help="another grading of the same answers: show its verdict beside each answer, the flips "
        "and the agreement (as `tabench diff`)",
    )


def load_compared(args: argparse.Namespace, first):
    """The `--compare` run (a `viewer.run.Run`), or None without the option.

    With `--tag` the second file is cut to the same slice: the pairs the first run shows, and any
    of its own records with one of the tags (a file graded before tags were recorded has none)."""
    if args.compare is None:
        return None
    from ..review.viewer.run import load_run
    from .run_problems import warn_run_problems

    second = load_run(args.compare)
    warn_run_problems(second)
    if args.tags:
        keys, wanted = {r.key for r in first.records}, set(args.tags)
        second.records = [r for r in second.records if r.key in keys or wanted.intersection(r.tags)]
    return second
