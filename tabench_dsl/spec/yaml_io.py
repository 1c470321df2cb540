"""YAML as the spec layer reads it (the manifest and `scorer.yaml`): a fast load, the position of a
node for an error, and YAML syntax errors in tabench's shape. The one YAML position lookup."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import yaml

from ..core.errors import SpecError
from ..core.nodes import Pos


def safe_load(text: str) -> object:
    """`yaml.safe_load(text)`, read by libyaml when PyYAML has it (the scorer's settings in 2 ms,
    not 17). Text libyaml refuses is read again by `yaml.safe_load`, so an error is reported with
    the pure-Python parser's words and position."""
    loader = getattr(yaml, "CSafeLoader", None)
    if loader is not None:
        try:
            return yaml.load(text, Loader=loader)
        except yaml.YAMLError:
            pass
    return yaml.safe_load(text)


def yaml_position(text: str, where: Sequence[str | int], *, at_key: bool = False) -> tuple[int, int]:
    """Line and column (1-based) of the node at `where` (mapping keys and list indexes) in the YAML
    `text`, or of the deepest part of it that exists; `at_key` places a mapping entry at its key
    instead of its value. The one YAML position lookup of tabench: manifest, scorer and lint use it."""
    try:
        node = yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError:
        return 1, 1
    if node is None:
        return 1, 1
    mark = node.start_mark
    for depth, step in enumerate(where):
        child = None
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if str(key.value) == str(step):
                    last = depth == len(where) - 1
                    child, mark = value, (key.start_mark if at_key and last else value.start_mark)
                    break
        elif isinstance(node, yaml.SequenceNode) and isinstance(step, int) and step < len(node.value):
            child = node.value[step]
            mark = child.start_mark
        if child is None:
            break
        node = child
    return mark.line + 1, mark.column + 1


def yaml_error(exc: yaml.MarkedYAMLError, path: str) -> SpecError:
    """A YAML syntax error at its mark, in tabench's error shape (where a file ends inside an
    unclosed construct, at the construct's start)."""
    mark, hint = exc.problem_mark, None
    if exc.context and exc.context_mark:
        at = exc.context_mark
        hint = f"{exc.context} at line {at.line + 1}, column {at.column + 1}"
        if mark is None or mark.index >= len(mark.buffer or "") - 1:
            # The file ended inside something: point at where that something starts.
            mark, hint = at, f"{exc.context} that starts here; the file ends before it is closed"
    elif exc.context:
        hint = exc.context
    mark = mark or exc.context_mark
    line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
    return SpecError(f"invalid YAML: {exc.problem}", path=path, line=line, col=col, hint=hint)


def position(file: Path, where: Sequence[str | int], *, at_key: bool = False) -> Pos:
    """`yaml_position` in a file, as a `Pos` (1:1 when the file cannot be read)."""
    try:
        text = file.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError):
        return Pos(str(file), 1, 1)
    line, col = yaml_position(text, where, at_key=at_key)
    return Pos(str(file), line, col)
