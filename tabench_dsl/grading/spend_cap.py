"""A spend cap (`grade --max-cost USD`): no request is sent that could take the priced spend past
the cap.

Before each request the grader reserves the most it could cost: every byte of its messages as a
fresh input token (a token is at least one byte of text, so no tokenizer makes more), plus
`MESSAGE_OVERHEAD` tokens a message for the chat format, at the dearer of the input and cache
write prices, and the reply tokens the request asks for at the output price (`Judge.reply_tokens`:
its `max_tokens`, or a larger budget `--judge-param` names, `max_completion_tokens` too, times the
replies `n` asks for). The request goes only while the
spend so far, the reservations of the requests in flight and this one stay within the cap; once it
returns, its reservation is replaced by what its reported tokens cost. A request that would not
fit raises `SpendCapReached`: the grader writes no record for that answer (a reply it already had
is in the reply cache), takes no new answer, and lets the requests in flight finish. `--resume`
with a higher cap continues where it stopped.

The spend counts every priced judge call of the results file, those of earlier runs too
(`spent_before`), so a cap is a budget for the whole grading, not for one run. A request that ends
in a transport error is counted at nothing (the providers do not bill a refused request).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core.errors import UsageError
from ..core.price import Price
from ..core.records import Tokens
from .judges.base import Judge, Message
from .panel import Panel

#: Tokens a chat message may take beyond its text (role markers and separators).
MESSAGE_OVERHEAD = 16
PER_MILLION = 1_000_000


class SpendCapReached(Exception):
    """A request would not fit under the cap: the grading stops taking answers."""


def tokens_cost(tokens: Tokens, price: Price) -> float:
    """What a call's reported tokens cost at `price`, in USD (as totals price them)."""
    fresh = max(0, tokens.prompt - tokens.cached_prompt - tokens.cache_write)
    per_million = (
        fresh * price.input
        + tokens.cached_prompt * price.cached_rate
        + tokens.cache_write * price.write_rate
        + tokens.completion * price.output
    )
    return per_million / PER_MILLION


def worst_cost(messages: Sequence[Message], max_tokens: int, price: Price) -> float:
    """The most one request can cost (module docstring)."""
    prompt = sum(len(m.content.encode("utf-8", "surrogatepass")) + MESSAGE_OVERHEAD for m in messages)
    return (prompt * max(price.input, price.write_rate) + max_tokens * price.output) / PER_MILLION


class SpendCap:
    """The cap in USD, the spend so far (`spent_before` from earlier runs) and what the requests
    in flight have reserved."""

    def __init__(self, cap_usd: float, *, spent_before: float = 0.0) -> None:
        self.cap = cap_usd
        self.spent = spent_before
        self.reserved = 0.0
        #: True once a request was refused: the grading is winding down.
        self.reached = False

    def reserve(self, messages: Sequence[Message], max_tokens: int, price: Price) -> float:
        """Reserve the most a request can cost and return it; `SpendCapReached` when it does not fit."""
        worst = worst_cost(messages, max_tokens, price)
        if self.reached or self.spent + self.reserved + worst > self.cap:
            self.reached = True
            raise SpendCapReached(f"the next request could take the spend past ${self.cap:g}")
        self.reserved += worst
        return worst

    def settle(self, reserved: float, tokens: Tokens | None, price: Price) -> None:
        """A request returned: its reservation becomes what its tokens cost (nothing without a reply)."""
        self.reserved = max(0.0, self.reserved - reserved)
        if tokens is not None:
            self.spent += tokens_cost(tokens, price)

    @property
    def left(self) -> float:
        """What the cap leaves once the spend so far is taken out."""
        return max(0.0, self.cap - self.spent)


def check_cappable(judge: Judge | Panel) -> None:
    """`UsageError` unless a cap can hold for `judge`: one judge (a panel's other judges would have
    to be cancelled mid-request, their spend unknown) with a price to count its spend in."""
    if isinstance(judge, Panel):
        raise UsageError(
            "--max-cost grades with one judge, and this grading has a judge panel; give one --judge"
        )
    if judge.info.price is None:
        raise UsageError(
            "--max-cost needs the judge's price to count the spend: give --price (a battery's "
            "judge.price prices only the judge the battery chose, never one named with --judge or --model)"
        )
