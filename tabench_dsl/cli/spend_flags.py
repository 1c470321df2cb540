"""`grade --max-cost USD`: the option, its checks, the spend a results file already holds, and the
message when the cap stopped a grading (`grading.spend_cap` keeps the cap itself)."""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.errors import UsageError

if TYPE_CHECKING:
    from ..core.price import Price
    from ..grading.runner import RunStats
    from ..grading.session import GradingOptions


def add_max_cost_option(parser: argparse.ArgumentParser) -> None:
    """Add `--max-cost USD` to `grade`'s parser."""
    parser.add_argument(
        "--max-cost",
        type=float,
        default=None,
        metavar="USD",
        help="send no request that could take the results file's priced spend past USD (needs a "
        "price); the records written stay exact, exit 1 says what is left, --resume continues",
    )


def max_cost_option(args: argparse.Namespace, *, workers: int, batch: bool) -> float | None:
    """`--max-cost` read once (None when not given); `UsageError` for a cap that is no positive
    amount or that one process cannot hold (`workers` above 1, or `batch`)."""
    if args.max_cost is None:
        return None
    if not (math.isfinite(args.max_cost) and args.max_cost > 0):
        raise UsageError("--max-cost must be a positive amount of USD")
    if workers > 1:
        raise UsageError("--max-cost is held by one grading process; leave out --workers")
    if batch:
        raise UsageError("--max-cost counts live requests; leave out --batch")
    return args.max_cost


def spent_in(results: Path, price: Price | None) -> float:
    """The priced spend of every judge call in `results` (earlier runs of this grading), in USD,
    at `price` (`--price`) over the price each record carries; calls with neither cost nothing here."""
    from ..review.costs import cost_usd, judged_attempts
    from ..store.light_records import iter_light_records

    if not results.is_file():
        return 0.0
    spent = 0.0
    for record in iter_light_records(results):
        for judge, attempt in judged_attempts(record):
            charged = price or judge.price
            if charged is not None and not attempt.cache_hit and attempt.raw is not None:
                spent += cost_usd(attempt.tokens, charged)
    return spent


def capped_options(options: GradingOptions, out: Path) -> GradingOptions:
    """`options` with the spend `out` already holds, when they carry a cap (`--max-cost`)."""
    import msgspec

    if options.max_cost is None:
        return options
    return msgspec.structs.replace(options, spent_before=spent_in(out, options.price))


def cap_message(stats: RunStats, cap: float, left: int) -> str:
    """What a grading the cap stopped says: the spend, the cap, the answers left and how to go on."""
    spent = stats.spent_usd or 0.0
    return (
        f"tabench: spend cap reached: ${spent:.6f} of --max-cost ${cap:g} spent on this results file; "
        f"{left} answer(s) left ungraded; raise --max-cost and pass --resume to continue"
    )
