"""`grade --reasoning-tags OPEN,CLOSE`: the reasoning blocks cut from answers before grading.

Given, the flag wins over the manifest's `reasoning_tags:` (`core.reasoning`): each use names one
open/close pair, repeated for several; `--reasoning-tags none` cuts nothing. Not given, the
manifest's setting (default `<think>,</think>`) stands.
"""

from __future__ import annotations

import argparse

import msgspec

from ..core.compiled import CompiledBattery
from ..core.errors import UsageError
from ..core.reasoning import reasoning_tag_problem

#: The value of `--reasoning-tags` that cuts nothing.
NO_REASONING_TAGS = "none"


def _pair(value: str) -> tuple[str, str] | None:
    """One `--reasoning-tags` value: an (open, close) pair, or None for `none`."""
    if value == NO_REASONING_TAGS:
        return None
    opener, comma, closer = value.partition(",")
    if not comma or "," in closer:
        raise argparse.ArgumentTypeError(
            f"{value!r}: give one pair as OPEN,CLOSE (for example '<think>,</think>'), or none"
        )
    for tag in (opener, closer):
        problem = reasoning_tag_problem(tag)
        if problem is not None:
            raise argparse.ArgumentTypeError(f"{value!r}: {problem}")
    return opener, closer


def add_reasoning_option(parser: argparse.ArgumentParser) -> None:
    """Add `--reasoning-tags` (repeatable) to `parser`; its values land in `args.reasoning_tags`."""
    parser.add_argument(
        "--reasoning-tags",
        action="append",
        type=_pair,
        default=None,
        metavar="OPEN,CLOSE",
        help="cut the reasoning blocks between OPEN and CLOSE from each answer before T1 and the judge "
        "(repeatable; none: cut nothing; default: the manifest's reasoning_tags, else <think>,</think>)",
    )


def reasoning_tags_option(args: argparse.Namespace) -> tuple[tuple[str, str], ...] | None:
    """The pairs `--reasoning-tags` names, read once (None: not given, the manifest's stand; empty:
    `none`, cut nothing). `UsageError` for `none` given beside a pair."""
    given: list[tuple[str, str] | None] | None = args.reasoning_tags
    if given is None:
        return None
    pairs = tuple(pair for pair in given if pair is not None)
    if pairs and len(pairs) < len(given):
        raise UsageError("--reasoning-tags none cuts nothing: it cannot stand beside a pair")
    return pairs


def with_reasoning_flag(
    compiled: CompiledBattery, pairs: tuple[tuple[str, str], ...] | None
) -> CompiledBattery:
    """`compiled` with the tags `--reasoning-tags` names (`reasoning_tags_option`) in place of the
    manifest's (as it is when the flag is not given)."""
    if pairs is None:
        return compiled
    return msgspec.structs.replace(compiled, reasoning_tags=pairs)
