"""The manifest's `judge:` section: its keys, each value checked at its own line and column, a
judge panel and a price; the keys only a command-line flag may set refused, naming the flag."""

from __future__ import annotations

from typing import cast

import msgspec
import yaml

from ..core.errors import SpecError
from ..core.nodes import JudgeDefaults, Pos
from ..core.price import PRICE_EXAMPLE, PRICE_KEYS, missing_price_keys, price_value_problem
from .judge_reasoning import check_reasoning, thinking_problems
from .yaml_nodes import YAML_TAG, Value, construct, node_text, position, scalar_text, spec_error

JUDGE_KEYS: tuple[str, ...] = (
    "model",
    "temperature",
    "max_tokens",
    "backend",
    "price",
    "panel",
    "rule",
    "prompt_cache",
    "structured",
    "reasoning",
)
#: Judge keys a manifest may not have, with the flag that sets them: a battery is someone else's
#: data, and a request field or header spends the user's money or carries their secrets.
FLAG_ONLY_JUDGE_KEYS: dict[str, str] = {
    "headers": "--judge-header NAME=VALUE",
    "extra_headers": "--judge-header NAME=VALUE",
    "header": "--judge-header NAME=VALUE",
    "extra_body": "--judge-param KEY=JSON",
    "params": "--judge-param KEY=JSON",
    "body": "--judge-param KEY=JSON",
}
#: The values of `judge: {structured: ...}` (YAML reads a bare on/off as true/false: both accepted).
STRUCTURED_VALUES: tuple[str, ...] = ("off", "auto", "on")
#: The keys of one judge of the manifest's `judge: {panel: [...]}`.
PANEL_JUDGE_KEYS: tuple[str, ...] = ("backend", "model", "temperature", "max_tokens", "price")
#: The rules a judge panel may use (`grading.panel`).
PANEL_RULES: tuple[str, ...] = ("majority", "unanimous")


def check_judge(node: yaml.Node, path: str, errors: list[SpecError]) -> Value | None:
    if not isinstance(node, yaml.MappingNode):
        errors.append(
            spec_error(
                "judge must be a mapping",
                position(node, path),
                hint="judge: {model: NAME, temperature: 0, max_tokens: 300, backend: NAME, "
                "prompt_cache: true}",
            )
        )
        return None
    fields: dict[str, object] = {}
    parts: dict[str, Pos] = {}
    ok = _judge_fields(node, path, errors, JUDGE_KEYS, "judge", fields, parts)
    thinking = thinking_problems(fields, parts) if ok else []
    errors.extend(thinking)
    ok = ok and not thinking
    return Value(msgspec.convert(fields, JudgeDefaults), "", position(node, path), parts) if ok else None


def _judge_fields(
    node: yaml.MappingNode,
    path: str,
    errors: list[SpecError],
    keys: tuple[str, ...],
    where: str,
    fields: dict[str, object],
    parts: dict[str, Pos],
) -> bool:
    """Check the keys of a `judge:` mapping (or of one judge of its `panel:`, whose `keys` are
    `PANEL_JUDGE_KEYS`) into `fields`; False when any problem was found (each is in `errors`)."""
    seen: dict[str, Pos] = {}
    ok = True
    for key_node, value in node.value:
        key = str(key_node.value)
        parts.setdefault(key, position(value, path))
        if not _key_allowed(key, position(key_node, path), keys, where, seen, errors):
            ok = False
            continue
        checked, fits = _judge_value(key, value, where, path, errors)
        fields[key] = checked
        ok = ok and fits
    if where != "judge" and ok and "backend" not in fields:
        errors.append(
            spec_error(
                "a panel judge needs a backend",
                position(node, path),
                hint="panel: [{backend: openai, model: NAME}, {backend: anthropic, model: NAME}]",
            )
        )
        ok = False
    return ok


def _key_allowed(
    key: str, at: Pos, keys: tuple[str, ...], where: str, seen: dict[str, Pos], errors: list[SpecError]
) -> bool:
    """Whether the judge key `key`, written at `at`, may be read: not given twice (`seen` holds
    those given so far), not one only a flag sets, one of `keys`. Each refusal goes to `errors`."""
    if key in seen:
        hint = f"first given at line {seen[key].line}"
        errors.append(spec_error(f"duplicate {where} key '{key}'", at, hint=hint))
        return False
    seen[key] = at
    if key in FLAG_ONLY_JUDGE_KEYS:
        flag = FLAG_ONLY_JUDGE_KEYS[key]
        message = f"a battery may not set judge request {key}: the user sets them with {flag}"
        errors.append(spec_error(message, at, hint=f"pass {flag} to grade instead"))
        return False
    if key not in keys:
        hint = f"{where} keys are " + ", ".join(keys)
        errors.append(spec_error(f"unknown {where} key '{key}'", at, hint=hint))
        return False
    return True


def _judge_value(
    key: str, value: yaml.Node, where: str, path: str, errors: list[SpecError]
) -> tuple[object, bool]:
    """The checked value of the judge key `key` and whether it is one (each problem in `errors`)."""
    at = position(value, path)
    if key == "structured":
        text = _structured_value(value)
        if text is None:
            choices = ", ".join(STRUCTURED_VALUES)
            errors.append(
                spec_error(f"judge structured must be one of {choices}, not {node_text(value)}", at)
            )
        return text, text is not None
    if key in ("model", "backend"):
        text = scalar_text(value, f"{where} {key}", path, errors)
        return text, text is not None
    if key == "price":
        price = _check_price(value, path, errors)
        return price, price is not None
    if key == "temperature" and value.tag in (YAML_TAG + "int", YAML_TAG + "float"):
        return float(cast(float, construct(cast(yaml.ScalarNode, value)))), True
    if key == "rule":
        text = scalar_text(value, "judge rule", path, errors)
        if text is not None and text not in PANEL_RULES:
            hint = "a panel's rule is " + " or ".join(PANEL_RULES)
            errors.append(spec_error(f"unknown judge rule '{text}'", at, hint=hint))
            text = None
        return text, text is not None
    if key == "reasoning":
        reasoning = check_reasoning(value, path, errors)
        return reasoning, reasoning is not None
    if key == "panel":
        panel = _check_panel(value, path, errors)
        return panel, panel is not None
    if _judge_value_fits(key, value):
        return construct(cast(yaml.ScalarNode, value)), True
    kind = _JUDGE_VALUE_KINDS.get(key, "a positive whole number")
    errors.append(spec_error(f"{where} {key} must be {kind}, not {node_text(value)}", at))
    return None, False


def _check_panel(node: yaml.Node, path: str, errors: list[SpecError]) -> list[dict[str, object]] | None:
    """The judges of `judge: {panel: [...]}`: a list of at least two mappings, each with a backend."""
    hint = "panel: [{backend: openai, model: NAME}, {backend: anthropic, model: NAME}]"
    if not isinstance(node, yaml.SequenceNode):
        errors.append(
            spec_error(
                f"judge panel must be a list of judges, not {node_text(node)}",
                position(node, path),
                hint=hint,
            )
        )
        return None
    members: list[dict[str, object]] = []
    ok = True
    for item in node.value:
        if not isinstance(item, yaml.MappingNode):
            errors.append(
                spec_error(
                    f"a panel judge must be a mapping, not {node_text(item)}", position(item, path), hint=hint
                )
            )
            ok = False
            continue
        fields: dict[str, object] = {}
        if _judge_fields(item, path, errors, PANEL_JUDGE_KEYS, "panel judge", fields, {}):
            members.append(fields)
        else:
            ok = False
    if ok and len(members) < 2:
        errors.append(spec_error("a judge panel needs at least two judges", position(node, path), hint=hint))
        ok = False
    return members if ok else None


#: The hint of a bad `judge: {price: ...}`.
_PRICE_HINT = "price: {" + PRICE_EXAMPLE.replace("=", ": ").replace(",", ", ") + "} in USD per million tokens"


def _check_price(node: yaml.Node, path: str, errors: list[SpecError]) -> dict[str, float] | None:
    """The judge's `price:` mapping (USD per million tokens): each problem at its own line and column,
    a missing required key at the mapping."""
    if not isinstance(node, yaml.MappingNode):
        errors.append(
            spec_error(
                f"judge price must be a mapping, not {node_text(node)}",
                position(node, path),
                hint=_PRICE_HINT,
            )
        )
        return None
    values: dict[str, float] = {}
    seen: dict[str, Pos] = {}
    ok = True
    for key_node, value in node.value:
        key = str(key_node.value)
        if key in seen:
            hint = f"first given at line {seen[key].line}"
            errors.append(spec_error(f"duplicate price key '{key}'", position(key_node, path), hint=hint))
            ok = False
            continue
        seen[key] = position(key_node, path)
        if key not in PRICE_KEYS:
            hint = "price keys are " + ", ".join(PRICE_KEYS)
            errors.append(spec_error(f"unknown price key '{key}'", position(key_node, path), hint=hint))
            ok = False
            continue
        number = (
            construct(value)
            if isinstance(value, yaml.ScalarNode) and value.tag in (YAML_TAG + "int", YAML_TAG + "float")
            else None
        )
        problem = price_value_problem(number)
        if problem is not None:
            errors.append(spec_error(f"price {key} {problem}, not {node_text(value)}", position(value, path)))
            ok = False
            continue
        values[key] = float(cast(float, number))
    missing = missing_price_keys(seen)
    if missing:
        need = " and ".join(f"'{key}'" for key in missing)
        errors.append(spec_error(f"judge price needs {need}", position(node, path), hint=_PRICE_HINT))
        ok = False
    return values if ok else None


_JUDGE_VALUE_KINDS = {"temperature": "a number", "prompt_cache": "true or false"}


def _judge_value_fits(key: str, value: yaml.Node) -> bool:
    """Whether `value` is what `max_tokens` (a whole number above 0) or `prompt_cache` (true or
    false) takes."""
    if not isinstance(value, yaml.ScalarNode):
        return False
    if key == "max_tokens":
        return value.tag == YAML_TAG + "int" and cast(int, construct(value)) > 0
    return key == "prompt_cache" and value.tag == YAML_TAG + "bool"


def _structured_value(value: yaml.Node) -> str | None:
    """`off`, `auto` or `on` from a `structured:` value (YAML 1.1's true/false for a bare on/off)."""
    if not isinstance(value, yaml.ScalarNode):
        return None
    if value.tag == YAML_TAG + "bool":
        return "on" if construct(value) else "off"
    text = str(value.value).strip().lower()
    return text if value.tag == YAML_TAG + "str" and text in STRUCTURED_VALUES else None
