"""The manifest's `reasoning_tags:` key: the open/close pairs of the reasoning blocks cut from an
answer before it is graded (`core.reasoning`).

A list of pairs, each a list of two tags: `reasoning_tags: [["<think>", "</think>"]]` (the
default), `[]` to cut nothing. Every problem is reported at the line and column of the value
that has it, and all of them are reported, not the first only.
"""

from __future__ import annotations

import yaml

from ..core.errors import SpecError
from ..core.reasoning import reasoning_tag_problem

#: The hint of every `reasoning_tags:` problem.
REASONING_TAGS_HINT = (
    'reasoning_tags: [["<think>", "</think>"]] (a list of [open, close] pairs); [] cuts nothing'
)

_STR = "tag:yaml.org,2002:str"


def check_reasoning_tags(
    node: yaml.Node, path: str, errors: list[SpecError]
) -> tuple[tuple[str, str], ...] | None:
    """The pairs `node` lists, or None (and each problem in `errors`) when it is not a list of
    [open, close] pairs of tags that `core.reasoning` can cut."""
    if not isinstance(node, yaml.SequenceNode):
        errors.append(
            _error(f"reasoning_tags must be a list of [open, close] pairs, not {_shown(node)}", node, path)
        )
        return None
    if node.value and all(isinstance(item, yaml.ScalarNode) for item in node.value):
        # `["<think>", "</think>"]`: one pair written without the list around it, said once.
        errors.append(
            _error("reasoning_tags must be a list of [open, close] pairs, not a list of tags", node, path)
        )
        return None
    pairs: list[tuple[str, str]] = []
    ok = True
    for item in node.value:
        pair = _pair(item, path, errors)
        ok = ok and pair is not None
        if pair is not None:
            pairs.append(pair)
    return tuple(pairs) if ok else None


def _pair(node: yaml.Node, path: str, errors: list[SpecError]) -> tuple[str, str] | None:
    """One [open, close] pair, or None (and its problems in `errors`)."""
    if not isinstance(node, yaml.SequenceNode) or len(node.value) != 2:
        errors.append(_error(f"a reasoning tag pair is a list of two tags, not {_shown(node)}", node, path))
        return None
    tags = [_tag(tag, path, errors) for tag in node.value]
    opener, closer = tags
    if opener is None or closer is None:
        return None
    return opener, closer


def _tag(node: yaml.Node, path: str, errors: list[SpecError]) -> str | None:
    if not isinstance(node, yaml.ScalarNode) or node.tag != _STR:
        errors.append(_error(f"a reasoning tag is text, not {_shown(node)}", node, path))
        return None
    problem = reasoning_tag_problem(node.value)
    if problem is not None:
        errors.append(_error(f"{problem}, not {_shown(node)}", node, path))
        return None
    return str(node.value)


def _shown(node: yaml.Node) -> str:
    if isinstance(node, yaml.MappingNode):
        return "a mapping"
    if isinstance(node, yaml.SequenceNode):
        return f"a list of {len(node.value)}"
    if node.tag == "tag:yaml.org,2002:null":
        return "empty"
    return repr(str(node.value))


def _error(message: str, node: yaml.Node, path: str) -> SpecError:
    mark = node.start_mark
    return SpecError(message, path=path, line=mark.line + 1, col=mark.column + 1, hint=REASONING_TAGS_HINT)
