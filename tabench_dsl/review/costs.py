"""Tokens and dollars: what the judge calls of a results file used and cost (docs/results.md, "Cost").

Totals add every judge call's tokens here (`Spend.add_call`); a cache hit is no call and costs
nothing. A call is priced at the price its record's judge carries (`JudgeInfo.price`, written by
grade from `--price` or the manifest's `judge.price`), or at the price the reader gives (`totals
--price`), which wins. In USD, with prices per million tokens:

    cost = ( (prompt - cached_prompt - cache_write) * input
           + cached_prompt * cached_input          (input when cached_input is not given)
           + cache_write * cache_write_price       (input when no cache_write price is given)
           + completion * output ) / 1,000,000

`prompt` counts every input token, the cached and the written ones included (`records.Tokens`), so
the fresh part is what is left of it (never below 0, whatever a server reported). A judge that is
no language model (builtin) or that replays recorded replies bills nothing: its calls cost 0. A
cost is None (JSON null) as soon as one billed call has no price: a total that left calls out
would read as the whole bill.
"""

from __future__ import annotations

from collections.abc import Iterator

import msgspec

from ..core.price import Price
from ..core.records import Attempt, JudgeInfo, Record, Tokens

#: Decimals a cost is rounded to: a billionth of a dollar, finer than any one token is priced, and
#: enough to drop the float noise of the sum (0.00026000000000000003 reads 0.00026).
COST_DECIMALS = 9
#: Tokens per million: prices are per million tokens.
PER_MILLION = 1_000_000


class TokenCounts(msgspec.Struct):
    """Tokens judge calls used, added up: `prompt` (every input token), the part of it read from
    the provider's prompt cache (`cached_prompt`) and written to it (`cache_write`), `completion`,
    and the part of it spent reasoning (`reasoning`, where the server said; billed as completion)."""

    prompt: int = 0
    cached_prompt: int = 0
    completion: int = 0
    cache_write: int = 0
    reasoning: int = 0

    def add(self, tokens: Tokens | TokenCounts) -> None:
        """Add one call's tokens (or another sum)."""
        self.prompt += tokens.prompt
        self.cached_prompt += tokens.cached_prompt
        self.completion += tokens.completion
        self.cache_write += tokens.cache_write
        self.reasoning += tokens.reasoning

    def take(self, tokens: Tokens | TokenCounts) -> None:
        """Take back one call's tokens (`add` was given them)."""
        self.prompt -= tokens.prompt
        self.cached_prompt -= tokens.cached_prompt
        self.completion -= tokens.completion
        self.cache_write -= tokens.cache_write
        self.reasoning -= tokens.reasoning

    @property
    def total(self) -> int:
        """Input and output tokens together (the cached ones are part of `prompt`)."""
        return self.prompt + self.completion


def judged_attempts(record: Record) -> list[tuple[JudgeInfo, Attempt]]:
    """Every judge attempt of `record` (`Record.all_attempts`) with the judge that made it, so
    each is billed at its own judge's price: a panel's judges may be different providers. A list:
    a count reads it twice (calls and the models that served them)."""
    if record.panel is msgspec.UNSET and record.repeats is msgspec.UNSET and record.audit is msgspec.UNSET:
        judge = record.judge  # one judge, asked once: nearly every record, counted a million times
        return [(judge, attempt) for attempt in record.attempts]
    return list(_every_judged_attempt(record))


def _every_judged_attempt(record: Record) -> Iterator[tuple[JudgeInfo, Attempt]]:
    for attempt in record.attempts:
        yield record.judge, attempt
    audit = record.audited
    for vote in (*record.votes, *record.repetitions, *(audit.panel if audit is not None else ())):
        for attempt in vote.attempts:
            yield vote.judge, attempt
    if audit is not None:
        for attempt in audit.attempts:
            yield audit.judge, attempt


def cost_usd(tokens: Tokens | TokenCounts, price: Price) -> float:
    """What `tokens` cost at `price`, in USD, unrounded (module docstring for the formula)."""
    fresh = max(0, tokens.prompt - tokens.cached_prompt - tokens.cache_write)
    per_million = (
        fresh * price.input
        + tokens.cached_prompt * price.cached_rate
        + tokens.cache_write * price.write_rate
        + tokens.completion * price.output
    )
    return per_million / PER_MILLION


def rounded_usd(value: float) -> float:
    """A cost as totals report it: rounded to `COST_DECIMALS`."""
    return round(value, COST_DECIMALS)


class Spend:
    """The judge calls of one row of totals (a system, or the whole file): their tokens, and the
    tokens billed at each price, so the cost is summed once per price at the end."""

    def __init__(self, price: Price | None = None) -> None:
        #: The reader's price (`--price`): when given, every billed call is priced at it.
        self.price = price
        self.tokens = TokenCounts()
        self.calls = 0
        #: Billed calls with no price known: while there is one, the cost is unknown.
        self.unpriced_calls = 0
        self._billed: dict[Price, TokenCounts] = {}

    def add_call(self, tokens: Tokens, judge: JudgeInfo, times: int = 1) -> None:
        """Count one judge call (not a cache hit) made by `judge`, or `times` such calls alike."""
        self.calls += times
        used: Tokens | TokenCounts = tokens
        if times != 1:
            used = TokenCounts(*(times * getattr(tokens, name) for name in TokenCounts.__struct_fields__))
        self.tokens.add(used)
        if judge.deterministic:  # builtin or replay: nothing was billed
            return
        price = self.price or judge.price
        if price is None:
            self.unpriced_calls += times
            return
        self._billed.setdefault(price, TokenCounts()).add(used)

    def take_call(self, tokens: Tokens, judge: JudgeInfo) -> None:
        """Take back one call `add_call` counted (the price it was billed at keeps its place)."""
        self.calls -= 1
        self.tokens.take(tokens)
        if judge.deterministic:
            return
        price = self.price or judge.price
        if price is None:
            self.unpriced_calls -= 1
            return
        self._billed[price].take(tokens)

    def merge(self, other: Spend) -> None:
        """Add another row's calls (a system's, into the whole file's)."""
        self.calls += other.calls
        self.tokens.add(other.tokens)
        self.unpriced_calls += other.unpriced_calls
        for price, tokens in other._billed.items():
            self._billed.setdefault(price, TokenCounts()).add(tokens)

    def billed(self) -> list[tuple[Price, TokenCounts]]:
        """The tokens billed at each price, in the order the prices were first met."""
        return list(self._billed.items())

    @classmethod
    def restored(
        cls,
        price: Price | None,
        calls: int,
        tokens: TokenCounts,
        unpriced_calls: int,
        billed: list[tuple[Price, TokenCounts]],
    ) -> Spend:
        """The `Spend` whose figures these are (`billed` in its order): one kept (`kept_count`)."""
        spend = cls(price)
        spend.calls, spend.tokens, spend.unpriced_calls = calls, tokens, unpriced_calls
        spend._billed = dict(billed)
        return spend

    def cost(self) -> float | None:
        """The cost in USD (rounded), or None while a billed call has no price."""
        if self.unpriced_calls:
            return None
        return rounded_usd(sum((cost_usd(tokens, price) for price, tokens in self._billed.items()), 0.0))


def format_usd(value: float | None, missing: str = "-") -> str:
    """A cost as people read it: `$12.34`, `$0.0312`, `$0.000260`; `missing` when unknown.

    Cents from a dollar up; below, enough decimals to show three significant figures, since one
    grading of a small battery costs a fraction of a cent."""
    if value is None:
        return missing
    if value == 0 or value >= 1:
        return f"${value:,.2f}"
    decimals = 2
    while value < 10 ** -(decimals - 2) and decimals < COST_DECIMALS:
        decimals += 1
    return f"${value:.{decimals}f}"
