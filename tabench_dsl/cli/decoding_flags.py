"""The decoding flags of `grade` and `calibrate`: `--temperature`, `--max-tokens`,
`--reasoning-effort` and `--thinking-budget`, each over the manifest's `judge:` and the scorer's
(`grading.judges.decoding.decoding_params` decides what a judge is asked with)."""

from __future__ import annotations

import argparse
import math
from typing import TYPE_CHECKING

from ..core.errors import UsageError

if TYPE_CHECKING:
    from ..grading.judges.decoding import DecodingFlags


def add_decoding_options(parser: argparse.ArgumentParser) -> None:
    """Add the decoding flags to a grading command's `parser`."""
    from ..grading.judges.decoding import REASONING_EFFORTS

    add = parser.add_argument
    add(
        "--temperature",
        type=float,
        default=None,
        metavar="T",
        help="the judge's sampling temperature (default: the manifest's judge.temperature, else the "
        "scorer's, else 0; a model that refuses it is asked without it)",
    )
    add(
        "--max-tokens",
        type=int,
        default=None,
        metavar="N",
        help="the judge's reply budget in tokens (default: the manifest's judge.max_tokens, else the "
        "scorer's, else 300); a reply cut off at it is asked again once with twice as many",
    )
    add(
        "--reasoning-effort",
        choices=REASONING_EFFORTS,
        default=None,
        help="OpenAI's reasoning_effort for a reasoning judge (default: the manifest's "
        "judge.reasoning.effort, else none sent)",
    )
    add(
        "--thinking-budget",
        type=int,
        default=None,
        metavar="N",
        help="Anthropic's extended thinking with a budget of N tokens (>= 1024; no temperature is "
        "sent, and max_tokens must be above N; default: the manifest's judge.reasoning.budget_tokens)",
    )


def _check_decoding_options(args: argparse.Namespace) -> None:
    """Raise `UsageError` for a decoding flag out of range, naming it."""
    from ..grading.judges.decoding import MIN_THINKING_BUDGET

    if args.temperature is not None and not (math.isfinite(args.temperature) and 0 <= args.temperature <= 2):
        raise UsageError("--temperature must be a number from 0 to 2")
    if args.max_tokens is not None and args.max_tokens < 1:
        raise UsageError("--max-tokens must be at least 1")
    if args.thinking_budget is not None and args.thinking_budget < MIN_THINKING_BUDGET:
        raise UsageError(f"--thinking-budget must be at least {MIN_THINKING_BUDGET} tokens")
    if args.thinking_budget is not None and args.temperature is not None:
        raise UsageError(
            "--temperature cannot go with --thinking-budget: Anthropic's extended thinking takes "
            "no temperature"
        )


def decoding_flags(args: argparse.Namespace) -> DecodingFlags:
    """The `decoding.DecodingFlags` of a grading command line; `UsageError` for a flag out of range."""
    from ..grading.judges.decoding import DecodingFlags

    _check_decoding_options(args)
    return DecodingFlags(
        temperature=args.temperature,
        max_tokens=args.max_tokens,
        reasoning_effort=args.reasoning_effort,
        thinking_budget=args.thinking_budget,
    )
