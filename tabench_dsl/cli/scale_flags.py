"""`grade --replica URL` and `grade --shard K/N`: grading past one machine (docs/scaling.md).

`--replica URL` (repeatable) gives the one judge more endpoints, each question sent to the same one
(grading/replicas.py). Replicas are named on the command line only, never by a battery: a replica
receives the user's key (under a `--judge URL`'s rules) and the answers. `--shard K/N` grades only
the answers of shard K of N (grading/shards.py); `tabench merge` joins the shards' results.
"""

from __future__ import annotations

import argparse

from ..grading.shards import parse_shard


def add_scale_options(parser: argparse.ArgumentParser) -> None:
    """Add `--replica URL` and `--shard K/N` to a grade parser."""
    add = parser.add_argument
    add(
        "--replica",
        action="append",
        dest="replicas",
        default=None,
        metavar="URL",
        help="another Chat Completions server of the same judge model (repeatable): each question's "
        "answers go to one replica, so its prefix cache keeps the question's SYSTEM prompt; a replica "
        "that fails hands its questions to the others",
    )
    add(
        "--shard",
        type=parse_shard,
        default=None,
        metavar="K/N",
        help="grade only shard K of N (K from 1): the answers whose sha256 of system NUL question "
        "falls in it, the same on every machine; join the shards with `tabench merge`",
    )
