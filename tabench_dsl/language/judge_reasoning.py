"""The manifest's `judge: {reasoning: ...}`: its keys checked, and extended thinking's rules.

    judge:
      reasoning: {effort: low}              # OpenAI's reasoning_effort: minimal, low, medium, high
      reasoning: {budget_tokens: 4000}      # Anthropic's extended thinking with that budget

`check_reasoning` reads the mapping (each problem at its own line and column); `thinking_problems`
holds the rest of the `judge:` mapping to extended thinking's rules: no `temperature` beside a
budget (Anthropic refuses one), and a `max_tokens`, when given, above the budget (the budget is
part of it). The grading side applies the same rules to the flags (`grading.judges.decoding`).
"""

from __future__ import annotations

from collections.abc import Mapping

import yaml

from ..core.errors import SpecError
from ..core.nodes import JudgeReasoning, Pos

#: The keys of `judge: {reasoning: ...}`.
REASONING_KEYS: tuple[str, ...] = ("effort", "budget_tokens")
#: What `effort` takes (OpenAI's `reasoning_effort`).
EFFORTS: tuple[str, ...] = ("minimal", "low", "medium", "high")
#: The smallest thinking budget Anthropic takes.
MIN_BUDGET = 1024
_HINT = "reasoning: {effort: low} (OpenAI) or reasoning: {budget_tokens: 4000} (Anthropic)"
_INT = "tag:yaml.org,2002:int"


def _pos(node: yaml.Node, path: str) -> Pos:
    return Pos(path, node.start_mark.line + 1, node.start_mark.column + 1)


def _error(message: str, at: Pos, hint: str | None = None) -> SpecError:
    return SpecError(message, path=at.path, line=at.line, col=at.col, hint=hint)


def check_reasoning(node: yaml.Node, path: str, errors: list[SpecError]) -> JudgeReasoning | None:
    """The `reasoning:` mapping as a `JudgeReasoning`, or None with its problems in `errors`."""
    if not isinstance(node, yaml.MappingNode):
        errors.append(_error("judge reasoning must be a mapping", _pos(node, path), _HINT))
        return None
    effort: str | None = None
    budget: int | None = None
    ok = True
    seen: set[str] = set()
    for key_node, value in node.value:
        key = str(key_node.value)
        if key in seen or key not in REASONING_KEYS:
            what = "duplicate" if key in seen else "unknown"
            hint = "reasoning keys are " + ", ".join(REASONING_KEYS)
            errors.append(_error(f"{what} reasoning key '{key}'", _pos(key_node, path), hint))
            ok = False
            continue
        seen.add(key)
        text = value.value if isinstance(value, yaml.ScalarNode) else None
        if key == "effort":
            if not isinstance(text, str) or text not in EFFORTS:
                errors.append(
                    _error(
                        f"reasoning effort must be one of {', '.join(EFFORTS)}, not {_shown(value)}",
                        _pos(value, path),
                    )
                )
                ok = False
            else:
                effort = text
        elif _whole_number(value) >= MIN_BUDGET:
            budget = _whole_number(value)
        else:
            errors.append(
                _error(
                    f"reasoning budget_tokens must be a whole number >= {MIN_BUDGET}, not {_shown(value)}",
                    _pos(value, path),
                )
            )
            ok = False
    return JudgeReasoning(effort=effort, budget_tokens=budget) if ok else None


def _shown(node: yaml.Node) -> str:
    """A YAML value as an error names it (as the manifest's other errors do)."""
    if isinstance(node, yaml.MappingNode):
        return "a mapping"
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    if node.tag == "tag:yaml.org,2002:null" or node.value == "":
        return "empty"
    return f"'{node.value}'"


def _whole_number(node: yaml.Node) -> int:
    """The whole number a YAML scalar stands for (`4000`, `4_000`, `0x1000`), else -1."""
    if not isinstance(node, yaml.ScalarNode) or node.tag != _INT:
        return -1
    value = yaml.SafeLoader("").construct_object(node)
    return value if isinstance(value, int) else -1


def thinking_problems(fields: Mapping[str, object], parts: Mapping[str, Pos]) -> list[SpecError]:
    """What breaks extended thinking's rules in a checked `judge:` mapping (`fields`, with where each
    key's value stands in `parts`): a temperature beside a budget, a max_tokens not above it."""
    reasoning = fields.get("reasoning")
    budget = reasoning.budget_tokens if isinstance(reasoning, JudgeReasoning) else None
    if budget is None:
        return []
    problems = []
    if fields.get("temperature") is not None:
        problems.append(
            _error(
                "judge temperature cannot go with reasoning budget_tokens: Anthropic's extended "
                "thinking takes no temperature",
                parts["temperature"],
                "drop the temperature (the model then uses its own)",
            )
        )
    max_tokens = fields.get("max_tokens")
    if isinstance(max_tokens, int) and max_tokens <= budget:
        problems.append(
            _error(
                f"judge max_tokens {max_tokens} must be above reasoning budget_tokens {budget} "
                "(the budget is part of it)",
                parts["max_tokens"],
                f"max_tokens: {budget + 300}, or leave it out (then the budget plus the reply length)",
            )
        )
    return problems
