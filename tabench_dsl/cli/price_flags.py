"""`--price input=0.40,cached_input=0.10,output=1.60`: the judge's price on the command line.

`grade` and `calibrate` record it in every record's judge (it wins over the manifest's
`judge.price`, which prices only the judge the manifest chose: `judges.factory.judge_price`);
`totals`, `report` and `view` price every record's tokens with it, over the price the records
carry (a results file graded before prices were recorded, or at a price since changed). A bad
value is a usage error (exit 2) that says what is wrong.
"""

from __future__ import annotations

import argparse

from ..core.errors import UsageError
from ..core.price import PRICE_EXAMPLE, Price, parse_price


def add_price_option(parser: argparse.ArgumentParser, *, use: str) -> None:
    """Add `--price` to `parser`; `use` ends its help (what the price is for in that command)."""
    parser.add_argument(
        "--price",
        default=None,
        metavar="KEY=USD,...",
        help=f"the judge's price in USD per million tokens, e.g. {PRICE_EXAMPLE} (keys input, "
        f"cached_input, output, cache_write; input and output required, the others billed as input "
        f"when not given): {use}",
    )


def price_option(args: argparse.Namespace) -> Price | None:
    """The `Price` of `--price` (None when not given), read once; a bad value raises `UsageError`."""
    if args.price is None:
        return None
    try:
        return parse_price(args.price)
    except ValueError as exc:
        raise UsageError(f"--price: {exc}") from None
