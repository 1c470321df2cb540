"""The decoding parameters of a judge call, worked out in one place: `decoding_params`.

Each setting is taken from the first of these that sets it: the command line (`--temperature`,
`--max-tokens`, `--reasoning-effort`, `--thinking-budget`: a `DecodingFlags`), the manifest's
`judge:` mapping, the scorer's `judge:` settings, then temperature 0 and 300 tokens. The judge the
grading builds (`factory.make_judge`), the dry run's account of it (`identity.judge_identity`) and
the Inspect scorer's judge (`inspect.scorer`) all call this, so they cannot disagree.

Reasoning controls:

    reasoning_effort   OpenAI's `reasoning_effort` (minimal, low, medium, high), sent as given
    thinking_budget    Anthropic's extended thinking, `thinking: {type: enabled, budget_tokens: N}`

Extended thinking takes no temperature and needs `max_tokens` above its budget (the budget is part
of it). So with a thinking budget no temperature is sent (a `--temperature` beside it is a
`UsageError`; the manifest's rules are checked at their line and column by `language`), and a
`max_tokens` that neither the flag nor the manifest set is the budget plus the scorer's (or the
default) reply length. A `max_tokens` that is set and not above the budget is a `UsageError`.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ...core.errors import UsageError
from ...core.nodes import JudgeDefaults
from ...core.scorer import JudgeSettings
from .base import DEFAULT_MAX_TOKENS, DEFAULT_TEMPERATURE

#: The values OpenAI's `reasoning_effort` takes.
REASONING_EFFORTS: tuple[str, ...] = ("minimal", "low", "medium", "high")
#: The smallest thinking budget Anthropic takes.
MIN_THINKING_BUDGET = 1024


class DecodingFlags(msgspec.Struct, frozen=True):
    """The decoding settings the command line gives (None: not given)."""

    temperature: float | None = None
    max_tokens: int | None = None
    reasoning_effort: str | None = None
    thinking_budget: int | None = None


class Decoding(msgspec.Struct, frozen=True):
    """The decoding parameters every call of one judge carries (`JudgeParams` holds them).
    `temperature` None: none is sent."""

    temperature: float | None
    max_tokens: int
    reasoning_effort: str | None = None
    thinking_budget: int | None = None


def decoding_params(
    flags: DecodingFlags | None = None,
    manifest: JudgeDefaults | None = None,
    scorer: JudgeSettings | None = None,
) -> Decoding:
    """The decoding parameters of the module docstring's precedence; `UsageError` for a flag that
    breaks extended thinking's rules."""
    flags = flags or DecodingFlags()
    manifest = manifest or JudgeDefaults()
    scorer = scorer or JudgeSettings()
    reasoning = manifest.reasoning
    effort = _first(flags.reasoning_effort, reasoning.effort if reasoning else None)
    budget = _first(flags.thinking_budget, reasoning.budget_tokens if reasoning else None)
    set_tokens = _first(flags.max_tokens, manifest.max_tokens)
    reply_tokens = int(_first(set_tokens, scorer.max_tokens, DEFAULT_MAX_TOKENS))
    if budget is None:
        temperature = float(
            _first(flags.temperature, manifest.temperature, scorer.temperature, DEFAULT_TEMPERATURE)
        )
        return Decoding(temperature, reply_tokens, effort, None)
    if flags.temperature is not None:
        raise UsageError(
            "--temperature cannot go with a thinking budget: Anthropic's extended thinking takes no "
            "temperature (drop one of them)"
        )
    if set_tokens is None:
        return Decoding(None, budget + reply_tokens, effort, budget)
    if set_tokens <= budget:
        where = "--max-tokens" if flags.max_tokens is not None else "judge.max_tokens"
        raise UsageError(
            f"{where} {set_tokens} must be above the thinking budget {budget} (the budget is part "
            f"of max_tokens): raise it, e.g. to {budget + DEFAULT_MAX_TOKENS}, or leave it out"
        )
    return Decoding(None, set_tokens, effort, budget)


def _first(*values: Any) -> Any:
    return next((v for v in values if v is not None), None)
