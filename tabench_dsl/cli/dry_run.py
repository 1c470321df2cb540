"""`tabench grade BATTERY --answers A --dry-run`: what a grading would send and cost, sending nothing.

No judge is built or contacted (so no API key is needed), no results file is written and the reply
cache is only read (`grading.estimate`). It prints the answers, the T1 passes, the first asks the
reply cache answers and those still needed, the prompt characters and an estimated token count and,
with a price (`--price` or the manifest's `judge.price`), the estimated cost of those first asks:
the prompt at the input price plus a reply of at most `max_tokens` each at the output price, and,
when a cached-input price is given, the same with the provider's prompt cache serving each
question's SYSTEM prompt after its first ask. A judge panel is counted judge by judge, each at its
own price, and added up. `--json` prints the same as one document.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import msgspec

from ..core.compiled import CompiledBattery
from ..core.display import json_for_terminal, shown
from ..grading.estimate import TOKEN_ESTIMATE, Estimate, JudgeAsks
from ..grading.judges.base import JudgeIdentity
from ..grading.session import GradingOptions, chosen_judges

if TYPE_CHECKING:
    from .grade_options import GradeOptions


class DryRunCost(msgspec.Struct):
    """The estimated cost of the first asks in USD: the prompt, the replies at most, their sum, and
    the sum with each question's SYSTEM served from the provider's prompt cache after its first ask
    (None without a cached-input price)."""

    prompt: float
    completion_max: float
    total_max: float
    with_provider_cache_max: float | None = None


def estimate_cost(asks: JudgeAsks) -> DryRunCost | None:
    """What one judge's first asks would cost at its price (`asks.judge.price`); zero for a judge
    that bills nothing (builtin, replay), None without a price."""
    from ..review.costs import TokenCounts, cost_usd, rounded_usd

    price = asks.judge.price
    if asks.judge.deterministic:
        return DryRunCost(0.0, 0.0, 0.0, None)
    if price is None:
        return None
    prompt = cost_usd(TokenCounts(prompt=asks.prompt_tokens), price)
    completion = cost_usd(TokenCounts(completion=asks.completion_tokens_max), price)
    cached = None
    if price.cached_input is not None:
        counts = TokenCounts(prompt=asks.prompt_tokens, cached_prompt=asks.repeated_prompt_tokens)
        cached = rounded_usd(cost_usd(counts, price) + completion)
    return DryRunCost(rounded_usd(prompt), rounded_usd(completion), rounded_usd(prompt + completion), cached)


def total_cost(costs: list[DryRunCost | None]) -> DryRunCost | None:
    """The judges' costs added up; None when one is unknown. The provider-cache figure is added up
    where a judge has none (no cached price) from its plain figure."""
    from ..review.costs import rounded_usd

    if any(cost is None for cost in costs):
        return None
    known = [cost for cost in costs if cost is not None]
    cached = [c.with_provider_cache_max for c in known]
    return DryRunCost(
        rounded_usd(sum(c.prompt for c in known)),
        rounded_usd(sum(c.completion_max for c in known)),
        rounded_usd(sum(c.total_max for c in known)),
        None
        if all(c is None for c in cached)
        else rounded_usd(sum(c.total_max if w is None else w for c, w in zip(known, cached, strict=True))),
    )


def report(options: GradeOptions, estimate: Estimate, bad_lines: int) -> int:
    """Print the dry run (text, or JSON with `--json`); exit 1 when some answer lines were bad, as
    grading would."""
    costs = [estimate_cost(asks) for asks in estimate.judges]
    cost = total_cost(costs)
    if options.json:
        judges = []
        for asks, one in zip(estimate.judges, costs, strict=True):
            judges.append(
                {
                    **msgspec.to_builtins(asks),
                    "judge": asks.judge.describe(),
                    "price": msgspec.to_builtins(asks.judge.price),
                    "cost_usd": msgspec.to_builtins(one),
                }
            )
        document = {
            "dry_run": {
                "answers": estimate.answers,
                "skipped": estimate.skipped,
                "oversized": estimate.oversized,
                "t1_passes": estimate.t1_passes,
                "t1_audits": estimate.t1_audits,
                "match_decided": estimate.match_decided,
                **{field: estimate.total(field) for field in _SUMMED},
                "bad_lines": bad_lines,
                "token_estimate": TOKEN_ESTIMATE,
                "cost_usd": msgspec.to_builtins(cost),
                "judges": judges,
            }
        }
        sys.stdout.buffer.write(json_for_terminal(msgspec.json.encode(document)) + b"\n")
    else:
        print(_text(options, estimate, costs, cost, bad_lines))
    return 1 if bad_lines else 0


#: The counts of every judge's asks the dry run also gives added up.
_SUMMED = (
    "cache_hits",
    "judge_calls",
    "prompt_chars",
    "prompt_tokens",
    "repeated_prompt_tokens",
    "completion_tokens_max",
)


def _text(
    options: GradeOptions,
    estimate: Estimate,
    costs: list[DryRunCost | None],
    cost: DryRunCost | None,
    bad_lines: int,
) -> str:
    e = estimate
    lines = [
        "dry run: no judge built or contacted, nothing written",
        f"answers: {e.answers:,}"
        + (f" ({e.skipped:,} already done, skipped by --resume)" if e.skipped else "")
        + (f"; {bad_lines:,} bad answer line(s)" if bad_lines else ""),
        f"oversized (not sent, adjudicate): {e.oversized:,}",
        f"T1 passes: {e.t1_passes:,}"
        + (f" ({e.t1_audits:,} of them also asked of the judge, --t1-audit)" if e.t1_audits else ""),
        *([f"decided by match checks: {e.match_decided:,}"] if e.match_decided else []),
    ]
    for asks, one in zip(e.judges, costs, strict=True):
        lines.extend(_judge_lines(options, asks, one))
    if len(e.judges) > 1:
        lines.append(
            f"panel: {e.total('judge_calls'):,} first ask(s) in all, about {e.total('prompt_tokens'):,} "
            f"prompt tokens; " + _cost_line(cost)
        )
    return "\n".join(lines)


def _judge_lines(options: GradeOptions, asks: JudgeAsks, cost: DryRunCost | None) -> list[str]:
    from ..review.costs import format_usd

    no_cache = options.grading.cache is None  # --no-cache
    cache = (
        f"  {asks.cache_hits:,} first ask(s) answered by the reply cache"
        if asks.cache_read
        else "  reply cache not read ("
        + ("--no-cache" if no_cache else "nothing cached for this judge or no cache file yet")
        + ")"
    )
    lines = [
        f"judge: {shown(asks.judge.describe())}",
        cache,
        f"  judge calls still needed: {asks.judge_calls:,} first ask(s) over {asks.questions:,} question(s) "
        "(a format re-ask or stern retry adds a call where a reply asks for it)",
        f"  prompt to send: {asks.prompt_chars:,} characters, about {asks.prompt_tokens:,} tokens "
        f"({TOKEN_ESTIMATE}); replies at most {asks.completion_tokens_max:,} tokens "
        f"({asks.max_tokens:,} max_tokens a call)",
    ]
    if asks.judge.deterministic:
        lines.append("  estimated cost: $0.00 (this judge runs locally and bills nothing)")
    elif cost is None or asks.judge.price is None:
        lines.append("  estimated cost: no price known (give --price or the manifest's judge: {price: ...})")
    else:
        lines.append(f"  {_cost_line(cost)} at {asks.judge.price.describe()}")
        if cost.with_provider_cache_max is not None:
            lines.append(
                f"  with the provider's prompt cache serving each question's SYSTEM after its first "
                f"ask: at most {format_usd(cost.with_provider_cache_max)}"
            )
    return lines


def _cost_line(cost: DryRunCost | None) -> str:
    from ..review.costs import format_usd

    if cost is None:
        return "estimated cost: unknown (a judge has no price)"
    return (
        f"estimated cost of the first asks: at most {format_usd(cost.total_max)} (prompt "
        f"{format_usd(cost.prompt)} + replies at most {format_usd(cost.completion_max)})"
    )


def run(options: GradeOptions) -> int:
    """The dry run of a `grade` command line (its options read and checked: `grade_options`)."""
    from ..grading.estimate import estimate_grading
    from ..grading.plan import GradingPlan
    from ..language.battery import load_battery
    from ..language.render import compile_battery
    from .grade_run import say_regraded
    from .reasoning_flags import with_reasoning_flag
    from .slice_flags import stderr_line

    compiled = compile_battery(load_battery(options.battery, allow_dirs=list(options.allow_dirs)))
    compiled = with_reasoning_flag(compiled, options.reasoning_tags)
    plan = GradingPlan(compiled, options.out, options.plan, keep_index=False)  # a dry run writes nothing
    say_regraded(plan)
    if plan.chosen.filters:  # a --system no answer is from is an error, as in the grading itself
        plan.selected(
            list(options.answers), system_from=options.system_from, question_from=options.question_from
        )
    grading = options.grading
    judges = planned_judges(compiled, grading)
    reader = plan.reader(
        list(options.answers),
        on_problem=lambda p: stderr_line(p.render()),
        on_warning=lambda p: stderr_line(f"tabench: warning: {p.render()}"),
        system_from=options.system_from,
        question_from=options.question_from,
    )
    estimate = estimate_grading(
        compiled,
        plan.answers(reader),
        judges,
        cache=grading.cache,
        max_answer_bytes=grading.max_answer_bytes,
        repeat=grading.repeat,
        t1_audit=grading.t1_audit,
    )
    estimate.skipped = plan.skipped  # the done pairs the plan took out are answers of the slice too
    estimate.answers += plan.skipped
    return report(options, estimate, reader.problems)


def planned_judges(compiled: CompiledBattery, options: GradingOptions) -> list[JudgeIdentity]:
    """The judges the grading would ask, named as `session.open_judge` builds them (one, or each
    judge of a panel from `--judge` given more than once or the manifest's `judge.panel`), each with
    the price it would record (`factory.judge_price`)."""
    import os

    from ..core.nodes import JudgeDefaults
    from ..grading.judges.factory import judge_price
    from ..grading.judges.identity import judge_identity

    manifest = compiled.judge

    def identity(name: str | None, model: str | None, defaults: JudgeDefaults) -> JudgeIdentity:
        found = judge_identity(
            name,
            model=model,
            manifest_judge=defaults,
            settings=compiled.settings,
            env=os.environ,
            request=options.request,
            decoding=options.decoding,
        )
        price = judge_price(name, model, options.price, defaults)
        return msgspec.structs.replace(found, info=msgspec.structs.replace(found.info, price=price))

    return [identity(*member) for member in chosen_judges(options, manifest)]
