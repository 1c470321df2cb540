"""The manifest, `battery.yaml`: its keys read, each value checked at its own line and column.

`read_manifest` gives every key it could read its checked value and reports every problem it finds
(an unknown or duplicate key, a missing one, a value of the wrong kind), so lint shows them all.
The `judge:` section is checked by `manifest_judge`, `reasoning_tags:` by `reasoning_tags`, `lint:`
by `manifest_lint`; what the
values name (the scorer, the policy and rubric files) `battery` reads.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from ..core.errors import SpecError, UsageError
from ..core.nodes import Pos
from ..core.tiers import DEFAULT_T1_RULE, T1_RULES
from .files import Refused, read_spec_text
from .manifest_judge import check_judge
from .manifest_lint import check_lint
from .reasoning_tags import check_reasoning_tags
from .yaml_io import reader_error, yaml_error, yaml_problem
from .yaml_nodes import YAML_TAG, Value, construct, node_text, position, scalar_text, spec_error

#: The keys a manifest may have, in the order hints list them.
MANIFEST_KEYS: tuple[str, ...] = (
    "name",
    "scorer",
    "policies",
    "rubrics",
    "t1",
    "t1_trap",
    "judge",
    "reasoning_tags",
    "lint",
)
#: The manifest keys without a default.
REQUIRED_KEYS: tuple[str, ...] = ("name", "scorer", "rubrics")
#: A battery name.
BATTERY_NAME = re.compile(r"[a-z0-9][a-z0-9._-]*\Z")
#: The name of a battery's manifest file.


def read_manifest(manifest: Path, errors: list[SpecError]) -> dict[str, Any]:
    """Each key of the manifest at `manifest` that could be read -> its checked value: a `Value`
    for `name`, `scorer`, `t1`, `t1_trap`, `judge`, `reasoning_tags` and `lint`, a list of `Value`s for
    `policies` and `rubrics` (what `_MANIFEST_CHECKS` gives each key). Every problem goes to
    `errors`; a manifest that may not be read at all (`files.Refused`) is a `UsageError`."""
    path = str(manifest)
    try:
        text = read_spec_text(manifest, "manifest")
    except Refused as exc:
        raise UsageError(f"{manifest} {exc.reason}") from None
    except SpecError as exc:
        errors.append(exc)
        return {}
    problem = yaml_problem(text, path)
    if problem is not None:
        errors.append(problem)
        return {}
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        errors.append(yaml_error(exc, path))
        return {}
    except yaml.YAMLError as exc:  # a character YAML refuses (NUL, ESC): no mark, a position
        errors.append(reader_error(exc, text, path))
        return {}
    if root is None:
        errors.append(spec_error("empty manifest", Pos(path, 1, 1), hint=_keys_hint()))
        return {}
    if not isinstance(root, yaml.MappingNode):
        errors.append(spec_error("a manifest is a mapping of keys", position(root, path), hint=_keys_hint()))
        return {}
    values: dict[str, Any] = {}
    seen: dict[str, Pos] = {}
    for key_node, node in root.value:
        key = str(key_node.value)
        at = position(key_node, path)
        if key not in MANIFEST_KEYS:
            errors.append(spec_error(f"unknown key '{key}'", at, hint=_keys_hint()))
            continue
        if key in seen:
            errors.append(
                spec_error(f"duplicate key '{key}'", at, hint=f"first given at line {seen[key].line}")
            )
            continue
        seen[key] = at
        value = _MANIFEST_CHECKS[key](node, path, errors)
        if value is not None:
            values[key] = value
    for key in REQUIRED_KEYS:
        if key not in seen:
            errors.append(spec_error(f"missing key '{key}'", position(root, path), hint=_REQUIRED_HINTS[key]))
    return values


def _check_name(node: yaml.Node, path: str, errors: list[SpecError]) -> Value | None:
    text = scalar_text(node, "name", path, errors)
    if text is None:
        return None
    if not BATTERY_NAME.match(text):
        errors.append(
            spec_error(
                f"bad battery name '{text}'",
                position(node, path),
                hint="a name is lowercase letters, digits, '.', '_' and '-', starting with a letter or digit",
            )
        )
        return None
    return Value(text, text, position(node, path))


def _check_scorer(node: yaml.Node, path: str, errors: list[SpecError]) -> Value | None:
    text = scalar_text(node, "scorer", path, errors)
    return None if text is None else Value(text, text, position(node, path))


def _check_files(key: str):
    def check(node: yaml.Node, path: str, errors: list[SpecError]) -> list[Value]:
        items = node.value if isinstance(node, yaml.SequenceNode) else [node]
        values = []
        for item in items:
            text = scalar_text(item, key, path, errors, what="a file name or a list of them")
            if text is not None:
                values.append(Value(text, text, position(item, path)))
        return values

    return check


def _check_t1(node: yaml.Node, path: str, errors: list[SpecError]) -> Value | None:
    """`t1: true | false` (the default rule), or `t1: {rule: v1 | v2}` (on, under that rule): the
    value is (on, rule)."""
    if isinstance(node, yaml.ScalarNode) and node.tag == YAML_TAG + "bool":
        return Value((construct(node), DEFAULT_T1_RULE), node.value, position(node, path))
    if not isinstance(node, yaml.MappingNode):
        errors.append(
            spec_error(
                f"t1 must be true, false or {{rule: {' | '.join(T1_RULES)}}}, not {node_text(node)}",
                position(node, path),
            )
        )
        return None
    rule: str | None = None
    parts: dict[str, Pos] = {}
    for key_node, value_node in node.value:
        if not (isinstance(key_node, yaml.ScalarNode) and key_node.value == "rule"):
            errors.append(
                spec_error(f"t1 has one key, rule, not {node_text(key_node)}", position(key_node, path))
            )
            return None
        if (
            isinstance(value_node, yaml.ScalarNode)
            and value_node.tag == YAML_TAG + "str"
            and value_node.value in T1_RULES
        ):
            rule, parts["rule"] = value_node.value, position(value_node, path)
        else:
            errors.append(
                spec_error(
                    f"t1 rule must be one of {', '.join(T1_RULES)}, not {node_text(value_node)}",
                    position(value_node, path),
                )
            )
            return None
    if rule is None:
        errors.append(
            spec_error(f"t1 names no rule: write t1: {{rule: {DEFAULT_T1_RULE}}}", position(node, path))
        )
        return None
    return Value((True, rule), rule, position(node, path), parts)


def _check_t1_trap(node: yaml.Node, path: str, errors: list[SpecError]) -> Value | None:
    if isinstance(node, yaml.ScalarNode) and node.tag == YAML_TAG + "bool":
        return Value(construct(node), node.value, position(node, path))
    errors.append(spec_error(f"t1_trap must be true or false, not {node_text(node)}", position(node, path)))
    return None


def _check_reasoning_tags(node: yaml.Node, path: str, errors: list[SpecError]) -> Value | None:
    tags = check_reasoning_tags(node, path, errors)
    return None if tags is None else Value(tags, "", position(node, path))


def _check_lint(node: yaml.Node, path: str, errors: list[SpecError]) -> Value | None:
    settings = check_lint(node, path, errors)
    return None if settings is None else Value(settings, "", position(node, path))


#: How each manifest key's value is checked.
_MANIFEST_CHECKS = {
    "name": _check_name,
    "scorer": _check_scorer,
    "policies": _check_files("policies"),
    "rubrics": _check_files("rubrics"),
    "t1": _check_t1,
    "t1_trap": _check_t1_trap,
    "judge": check_judge,
    "reasoning_tags": _check_reasoning_tags,
    "lint": _check_lint,
}

#: The hint of each missing required key.
_REQUIRED_HINTS = {
    "name": "add a line: name: my-battery",
    "scorer": "add a line: scorer: tabench-1.1",
    "rubrics": "add a line: rubrics: [questions/*.rubric]",
}


def _keys_hint() -> str:
    return "keys are " + ", ".join(MANIFEST_KEYS)
