"""`grade --replica URL` (repeatable): more endpoints of the one judge, each question sent to the
same one (grading/replicas.py). The replicas are named on the command line only, never by a battery:
a replica receives the user's key (under a `--judge URL`'s rules) and the answers."""

from __future__ import annotations

import argparse

from ..core.errors import UsageError


def add_replica_option(parser: argparse.ArgumentParser) -> None:
    """Add `--replica URL` to a grade parser."""
    parser.add_argument(
        "--replica",
        action="append",
        dest="replicas",
        default=None,
        metavar="URL",
        help="another Chat Completions server of the same judge model (repeatable): each question's "
        "answers go to one replica, so its prefix cache keeps the question's SYSTEM prompt; a replica "
        "that fails hands its questions to the others",
    )


def check_replica_option(args: argparse.Namespace) -> None:
    """Usage errors of `--replica`."""
    if args.replicas and args.batch:
        raise UsageError("--replica sends live calls; --batch sends batches to one service: choose one")
