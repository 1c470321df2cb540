"""A judge's price: US dollars per million tokens, as the manifest (`judge: {price: ...}`) and the
`--price` flag give it and as every record carries it (`JudgeInfo.price`).

A results file says what its grading cost without the battery at hand: grade writes the price it
graded at into each record's judge, and totals, the report and the viewer price the tokens with it
(`review.costs` does the arithmetic). `input` and `output` are required, since a price missing one
would quietly bill those tokens at nothing; `cached_input` (tokens read from the provider's prompt
cache) and `cache_write` (tokens written to it) are billed as `input` when not given.

The flag's syntax is the manifest's mapping on one line:

    --price input=0.40,cached_input=0.10,output=1.60[,cache_write=0.50]
"""

from __future__ import annotations

import math
from collections.abc import Collection

import msgspec

#: The keys of a price, in the order messages and hints list them.
PRICE_KEYS: tuple[str, ...] = ("input", "cached_input", "output", "cache_write")
#: The keys every price must give.
REQUIRED_PRICE_KEYS: tuple[str, ...] = ("input", "output")
#: A price written out, for hints.
PRICE_EXAMPLE = "input=0.40,cached_input=0.10,output=1.60"


class Price(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """USD per million tokens: fresh `input`, `cached_input` read from the provider's prompt cache,
    `output`, and `cache_write` written to that cache (the last two None: billed as input)."""

    input: float
    output: float
    cached_input: float | None = None
    cache_write: float | None = None

    @property
    def cached_rate(self) -> float:
        """What a cached prompt token costs (per million): `cached_input`, else `input`."""
        return self.input if self.cached_input is None else self.cached_input

    @property
    def write_rate(self) -> float:
        """What a prompt token written to the cache costs (per million): `cache_write`, else `input`."""
        return self.input if self.cache_write is None else self.cache_write

    def describe(self) -> str:
        """`input $0.40, cached input $0.10, output $1.60 per million tokens`: the price as every
        output shows it."""
        parts = [f"input ${self.input:g}"]
        if self.cached_input is not None:
            parts.append(f"cached input ${self.cached_input:g}")
        parts.append(f"output ${self.output:g}")
        if self.cache_write is not None:
            parts.append(f"cache write ${self.cache_write:g}")
        return ", ".join(parts) + " per million tokens"


def price_value_problem(value: object) -> str | None:
    """Why `value` cannot be a price in USD per million tokens (None when it can): it must be a
    finite number, 0 or more. A bool is no number here, though Python counts it as one."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "must be a number (USD per million tokens)"
    if not math.isfinite(value) or value < 0:
        return "must be a finite number, 0 or more (USD per million tokens)"
    return None


def missing_price_keys(keys: Collection[str]) -> list[str]:
    """The required price keys not among `keys`."""
    return [key for key in REQUIRED_PRICE_KEYS if key not in keys]


def parse_price(text: str) -> Price:
    """The price of a `--price` value (`input=0.40,cached_input=0.10,output=1.60`); raises
    `ValueError` with a message that names what is wrong (an unknown or repeated key, a value that
    is no number or below 0, a required key missing)."""
    values: dict[str, float] = {}
    for item in text.split(","):
        key, equals, number = (part.strip() for part in item.partition("="))
        if not equals or not key:
            raise ValueError(f"{item.strip()!r} is not KEY=USD; write {PRICE_EXAMPLE}")
        if key not in PRICE_KEYS:
            raise ValueError(f"unknown price key {key!r}; price keys are {', '.join(PRICE_KEYS)}")
        if key in values:
            raise ValueError(f"price key {key!r} given twice")
        try:
            value = float(number)
        except ValueError:
            raise ValueError(f"{key} must be a number (USD per million tokens), not {number!r}") from None
        problem = price_value_problem(value)
        if problem is not None:
            raise ValueError(f"{key} {problem}, not {number!r}")
        values[key] = value
    missing = missing_price_keys(values)
    if missing:
        raise ValueError(f"a price needs {' and '.join(missing)}; write {PRICE_EXAMPLE}")
    return msgspec.convert(values, Price)
