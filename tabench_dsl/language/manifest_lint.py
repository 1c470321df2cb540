"""The manifest's `lint:` key: warning codes a battery turns off, or down to a count.

    lint:
      ignore: [W102]        # never reported: not in text, JSON, SARIF nor the editor
      count: [W103, W104]   # text output gives one line with their number; JSON and SARIF keep each

A battery brought in from another format (thousands of questions, none with exemplars) warns the
same way on every question; `ignore` says once, for the whole battery, what the comment
`# tabench: ignore[CODE]` says for one line. `count` keeps the warnings measured without listing
them. Each value is one code or a list of codes; only warning codes may be named (an error cannot
be turned off). Every problem is reported at the line and column of the value that has it.
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec
import yaml

from ..core.errors import SpecError, UsageError
from .codes import CODES
from .yaml_nodes import node_text, position, spec_error

#: The keys of `lint:`.
LINT_KEYS: tuple[str, ...] = ("ignore", "count")

#: The warning codes `lint:` (and `tabench lint --ignore`) may name.
WARNING_CODES: tuple[str, ...] = tuple(row.code for row in CODES if row.severity == "warning")

#: The hint of every `lint:` problem.
LINT_HINT = "lint: {ignore: [W102], count: [W104]} names warning codes: " + ", ".join(WARNING_CODES)


class LintSettings(msgspec.Struct, frozen=True):
    """The warning codes a battery turns off (`ignore`) and shows only as a count (`count`)."""

    ignore: frozenset[str] = frozenset()
    count: frozenset[str] = frozenset()


def user_codes(codes: Iterable[str]) -> frozenset[str]:
    """`codes` as given on a command line or to the library; raises `UsageError` naming the first
    that is not a warning code."""
    for code in codes:
        if code not in WARNING_CODES:
            raise UsageError(f"{code!r} is not a warning code: lint may leave out {', '.join(WARNING_CODES)}")
    return frozenset(codes)


def check_lint(node: yaml.Node, path: str, errors: list[SpecError]) -> LintSettings | None:
    """The settings `node` gives, or None (and each problem in `errors`) when it is not a mapping
    of `ignore` and `count` to warning codes."""
    if not isinstance(node, yaml.MappingNode):
        errors.append(
            _error(f"lint must be a mapping of ignore and count, not {node_text(node)}", node, path)
        )
        return None
    codes: dict[str, frozenset[str]] = {}
    ok = True
    for key_node, value in node.value:
        key = str(key_node.value)
        if key not in LINT_KEYS:
            errors.append(_error(f"unknown lint key '{key}'", key_node, path))
            ok = False
        elif key in codes:
            errors.append(_error(f"duplicate lint key '{key}'", key_node, path))
            ok = False
        else:
            found = _codes(key, value, path, errors)
            ok = ok and found is not None
            codes[key] = found or frozenset()
    return LintSettings(**codes) if ok else None


def _codes(key: str, node: yaml.Node, path: str, errors: list[SpecError]) -> frozenset[str] | None:
    items = node.value if isinstance(node, yaml.SequenceNode) else [node]
    found: set[str] = set()
    ok = True
    for item in items:
        if not isinstance(item, yaml.ScalarNode) or item.value == "":
            errors.append(
                _error(
                    f"lint.{key} must be a warning code or a list of them, not {node_text(item)}", item, path
                )
            )
            ok = False
        elif item.value not in WARNING_CODES:
            errors.append(_error(f"lint.{key} must be warning codes: {item.value!r} is not one", item, path))
            ok = False
        else:
            found.add(item.value)
    return frozenset(found) if ok else None


def _error(message: str, node: yaml.Node, path: str) -> SpecError:
    return spec_error(message, position(node, path), hint=LINT_HINT)
