"""`tabench grade BATTERY --answers A --dry-run`: what a grading would send and cost, sending nothing.

No judge is built or contacted (so no API key is needed), no results file is written and the reply
cache is only read (`grading.estimate`). It prints the answers, the T1 passes, the first asks the
reply cache answers and those still needed, the prompt characters and an estimated token count and,
with a price (`--price` or the manifest's `judge.price`), the estimated cost of those first asks:
the prompt at the input price plus a reply of at most `max_tokens` each at the output price, and,
when a cached-input price is given, the same with the provider's prompt cache serving each
question's SYSTEM prompt after its first ask. `--json` prints the same as one document.
"""

from __future__ import annotations

import argparse
import sys

import msgspec

from ..core.display import json_for_terminal, shown
from ..core.price import Price
from ..core.records import JudgeInfo
from ..grading.estimate import TOKEN_ESTIMATE, Estimate


class DryRunCost(msgspec.Struct):
    """The estimated cost of the first asks in USD: the prompt, the replies at most, their sum, and
    the sum with each question's SYSTEM served from the provider's prompt cache after its first ask
    (None without a cached-input price)."""

    prompt: float
    completion_max: float
    total_max: float
    with_provider_cache_max: float | None = None


def estimate_cost(estimate: Estimate, judge: JudgeInfo, price: Price | None) -> DryRunCost | None:
    """What the first asks `estimate` counts would cost at `price`; zero for a judge that bills
    nothing (builtin, replay), None without a price."""
    from ..review.costs import TokenCounts, cost_usd, rounded_usd

    if judge.deterministic:
        return DryRunCost(0.0, 0.0, 0.0, None)
    if price is None:
        return None
    prompt = cost_usd(TokenCounts(prompt=estimate.prompt_tokens), price)
    completion = cost_usd(TokenCounts(completion=estimate.completion_tokens_max), price)
    cached = None
    if price.cached_input is not None:
        counts = TokenCounts(prompt=estimate.prompt_tokens, cached_prompt=estimate.repeated_prompt_tokens)
        cached = rounded_usd(cost_usd(counts, price) + completion)
    return DryRunCost(rounded_usd(prompt), rounded_usd(completion), rounded_usd(prompt + completion), cached)


def report(
    args: argparse.Namespace, estimate: Estimate, judge: JudgeInfo, price: Price | None, bad_lines: int
) -> int:
    """Print the dry run (text, or JSON with `--json`); exit 1 when some answer lines were bad, as
    grading would."""
    cost = estimate_cost(estimate, judge, price)
    if args.json:
        document = {
            "dry_run": {
                **msgspec.to_builtins(estimate),
                "judge": judge.describe(),
                "token_estimate": TOKEN_ESTIMATE,
                "bad_lines": bad_lines,
                "price": msgspec.to_builtins(price),
                "cost_usd": msgspec.to_builtins(cost),
            }
        }
        sys.stdout.buffer.write(json_for_terminal(msgspec.json.encode(document)) + b"\n")
    else:
        print(_text(args, estimate, judge, price, cost, bad_lines))
    return 1 if bad_lines else 0


def _text(
    args: argparse.Namespace,
    estimate: Estimate,
    judge: JudgeInfo,
    price: Price | None,
    cost: DryRunCost | None,
    bad_lines: int,
) -> str:
    from ..review.costs import format_usd

    e = estimate
    cache = (
        f"{e.cache_hits:,} first ask(s) answered by the reply cache"
        if e.cache_read
        else "reply cache not read ("
        + ("--no-cache" if args.no_cache else "nothing cached for this judge or no cache file yet")
        + ")"
    )
    lines = [
        "dry run: no judge built or contacted, nothing written",
        f"judge: {shown(judge.describe())}",
        f"answers: {e.answers:,}"
        + (f" ({e.skipped:,} already done, skipped by --resume)" if e.skipped else "")
        + (f"; {bad_lines:,} bad answer line(s)" if bad_lines else ""),
        f"oversized (not sent, adjudicate): {e.oversized:,}",
        f"T1 passes: {e.t1_passes:,}",
        cache,
        f"judge calls still needed: {e.judge_calls:,} first ask(s) over {e.questions:,} question(s) "
        "(a format re-ask or stern retry adds a call where a reply asks for it)",
        f"prompt to send: {e.prompt_chars:,} characters, about {e.prompt_tokens:,} tokens "
        f"({TOKEN_ESTIMATE}); replies at most {e.completion_tokens_max:,} tokens "
        f"({e.max_tokens:,} max_tokens a call)",
    ]
    if judge.deterministic:
        lines.append("estimated cost: $0.00 (this judge runs locally and bills nothing)")
    elif cost is None:
        lines.append("estimated cost: no price known (give --price or the manifest's judge: {price: ...})")
    else:
        assert price is not None  # a cost is priced
        lines.append(
            f"estimated cost of the first asks: at most {format_usd(cost.total_max)} (prompt "
            f"{format_usd(cost.prompt)} + replies at most {format_usd(cost.completion_max)}) at "
            f"{price.describe()}"
        )
        if cost.with_provider_cache_max is not None:
            lines.append(
                f"  with the provider's prompt cache serving each question's SYSTEM after its first "
                f"ask: at most {format_usd(cost.with_provider_cache_max)}"
            )
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """The dry run of a `grade` command line (its options already checked)."""
    import os

    from ..core.results import done_pairs
    from ..grading.answers import AnswerReader
    from ..grading.estimate import estimate_grading
    from ..grading.judges.identity import judge_identity
    from ..grading.runner import MAX_ANSWER_BYTES
    from ..spec.battery import load_battery
    from ..spec.render import compile_battery
    from .grade_cmd import DEFAULT_OUT, _check_slice, _slice, _stderr_line
    from .grading_flags import grading_options

    compiled = compile_battery(load_battery(args.battery, allow_dirs=args.allow_dirs))
    _check_slice(args, compiled.questions)
    options = grading_options(args)
    identity = judge_identity(
        options.judge,
        model=options.model,
        manifest_judge=compiled.judge,
        settings=compiled.settings,
        env=os.environ,
    )
    out = args.out or DEFAULT_OUT
    skip = done_pairs(out) if args.resume else set()
    reader = AnswerReader(
        args.answers,
        compiled.questions,
        on_problem=lambda p: _stderr_line(p.render()),
        on_warning=lambda p: _stderr_line(f"tabench: warning: {p.render()}"),
    )
    estimate = estimate_grading(
        compiled,
        _slice(reader, args, skip),
        identity,
        cache=options.cache,
        skip=skip,
        max_answer_bytes=options.max_answer_bytes or MAX_ANSWER_BYTES,
    )
    price = options.price or compiled.judge.price
    return report(args, estimate, identity.info, price, reader.problems)
