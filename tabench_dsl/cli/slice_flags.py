"""The slice options of a `grade` command line (`--question`, `--system`, `--tag`, `--limit`), read
into the library's `grading.answer_slice.SliceFlags`, and where its results go by default.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..core.display import shown
from ..grading.answer_slice import SliceFlags
from .tag_flags import add_tag_option

#: Where results go when `--out` is not given (relative to the working folder).
DEFAULT_OUT = Path("results.jsonl")


def add_slice_options(parser: argparse.ArgumentParser) -> None:
    """`--limit`, `--question` and `--system`: grade a slice of the answers first (a quick look at a
    new judge or battery before paying for the whole file)."""
    add = parser.add_argument
    add(
        "--limit",
        type=int,
        default=None,
        metavar="N",
        help="send at most N answers to grading (after --question/--system; answers --resume skips "
        "do not count)",
    )
    add(
        "--question",
        action="append",
        dest="questions",
        default=None,
        metavar="ID",
        help="grade only the answers to this question (repeatable)",
    )
    add(
        "--system",
        action="append",
        dest="systems",
        default=None,
        metavar="NAME",
        help="grade only the answers of this system (repeatable)",
    )
    add_tag_option(parser, verb="grade")


def slice_flags(args: argparse.Namespace) -> SliceFlags:
    """The slice options of `args`, as given (`answer_slice` checks them against the battery)."""
    return SliceFlags(
        questions=tuple(args.questions) if args.questions else None,
        tags=tuple(args.tags) if args.tags else None,
        systems=tuple(args.systems) if args.systems else None,
        shard=getattr(args, "shard", None),
        limit=args.limit,
    )


def stderr_line(line: str) -> None:
    """One line of untrusted text on stderr, shown literally (`core.display`)."""
    print(shown(line, lines=True), file=sys.stderr)
