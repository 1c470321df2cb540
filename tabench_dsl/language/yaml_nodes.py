"""The manifest's YAML nodes, as the language layer checks them: a value with the place it was
written, its text for messages, and the positioned error about it."""

from __future__ import annotations

import msgspec
import yaml

from ..core.errors import SpecError
from ..core.nodes import Pos

#: The prefix of YAML's own tags (`tag:yaml.org,2002:null` and the like).
YAML_TAG = "tag:yaml.org,2002:"


class Value(msgspec.Struct):
    """A manifest value and where it was written; for a mapping, where each key's value was."""

    value: object
    text: str
    pos: Pos
    parts: dict[str, Pos] = msgspec.field(default_factory=dict)


def scalar_text(
    node: yaml.Node, key: str, path: str, errors: list[SpecError], what: str = "a single value"
) -> str | None:
    if isinstance(node, yaml.ScalarNode) and node.tag != YAML_TAG + "null" and node.value != "":
        return str(node.value)
    errors.append(spec_error(f"{key} must be {what}, not {node_text(node)}", position(node, path)))
    return None


def node_text(node: yaml.Node) -> str:
    if isinstance(node, yaml.MappingNode):
        return "a mapping"
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    if node.tag == YAML_TAG + "null" or node.value == "":
        return "empty"
    return f"'{node.value}'"


def construct(node: yaml.ScalarNode) -> object:
    return yaml.SafeLoader("").construct_object(node)


def position(node: yaml.Node, path: str) -> Pos:
    return Pos(path, node.start_mark.line + 1, node.start_mark.column + 1)


def spec_error(message: str, at: Pos, *, hint: str | None = None) -> SpecError:
    return SpecError(message, path=at.path, line=at.line, col=at.col, hint=hint)
