"""YAML as the language layer reads it (the manifest and `scorer.yaml`): a check before anything is
built (`yaml_problem`), a fast load, the position of a node for an error, and YAML syntax errors in
tabench's shape. The one YAML position lookup.

PyYAML builds nodes and values by recursion, so a document nested a few hundred levels deep ends
in a RecursionError; and its double-quoted escapes make lone surrogates (`"\\ud800"`), text that
cannot be printed or encoded. `yaml_problem` finds either (and an alias inside the collection it
names, a cycle) from the parser's events, which come without recursion, before anything is built,
and counts the values the document holds with every alias expanded (`MAX_YAML_VALUES`), so that
aliases of aliases cannot multiply a small file into a billion values for whatever walks it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from ..core.errors import SpecError
from ..core.nodes import Pos
from .files import SURROGATE

#: The deepest nesting of mappings and lists a manifest or a scorer's settings may have.
MAX_YAML_DEPTH = 64
#: The most values a document may hold once every alias is expanded (an alias of a list of
#: aliases of lists ... is a billion values in a few hundred bytes).
MAX_YAML_VALUES = 100_000

_OPENS = (yaml.MappingStartEvent, yaml.SequenceStartEvent)
_CLOSES = (yaml.MappingEndEvent, yaml.SequenceEndEvent)


def yaml_problem(text: str, path: str) -> SpecError | None:
    """The first reason not to build the YAML of `text`: nesting deeper than `MAX_YAML_DEPTH`, a
    lone surrogate escape in a value or a key, an alias inside the collection it names. None when
    there is none or when the text is not YAML at all (the loader reports that in its own words).

    libyaml's events come in a third of a millisecond for a scorer's settings; libyaml itself
    refuses surrogate escapes and nesting past 1000, and the pure-Python parser (an explicit state
    stack, no recursion) then looks again to say which.
    """
    loader = getattr(yaml, "CSafeLoader", None)
    if loader is not None:
        try:
            return _scan(text, path, loader)
        except yaml.YAMLError:
            pass
    try:
        return _scan(text, path, yaml.SafeLoader)
    except yaml.YAMLError:
        return None


def _scan(text: str, path: str, loader: type) -> SpecError | None:
    anchors: list[str | None] = []  # the anchor of each open collection, outermost first
    counts = [0]  # the values of each open collection, aliases expanded (the document's first)
    sizes: dict[str, int] = {}  # each anchor's values, expanded
    for event in yaml.parse(text, Loader=loader):
        added = _expanded(event, counts, sizes, anchors)
        if added and sum(counts) > MAX_YAML_VALUES:
            return _at(
                event.start_mark,
                path,
                f"YAML holds more than {MAX_YAML_VALUES:,} values once its aliases are expanded",
                hint="an alias repeats what its anchor names; a manifest or a scorer's settings needs few",
            )
        if isinstance(event, _OPENS):
            anchors.append(event.anchor)
            if len(anchors) > MAX_YAML_DEPTH:
                return _at(
                    event.start_mark,
                    path,
                    f"YAML nested deeper than {MAX_YAML_DEPTH} levels",
                    hint="a manifest or a scorer's settings needs a few levels only",
                )
        elif isinstance(event, _CLOSES):
            anchors.pop()
        elif isinstance(event, yaml.ScalarEvent):
            if SURROGATE.search(event.value):
                return _at(
                    event.start_mark,
                    path,
                    "lone surrogate escape in YAML text",
                    hint="a \\uD800-\\uDFFF escape is half of a character; write the character itself",
                )
        elif isinstance(event, yaml.AliasEvent) and event.anchor in anchors:
            return _at(
                event.start_mark,
                path,
                f"alias '*{event.anchor}' inside the collection it names",
                hint="a value cannot contain itself",
            )
    return None


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


def reader_error(exc: yaml.YAMLError, text: str, path: str) -> SpecError:
    """A YAML error without a mark (the reader's refusal of a character such as NUL or ESC) at the
    character's line and column when the error says where, else at 1:1."""
    index = getattr(exc, "position", None)
    if isinstance(index, int) and 0 <= index <= len(text):
        before = text[:index]
        line, col = before.count("\n") + 1, index - (before.rfind("\n") + 1) + 1
    else:
        line, col = 1, 1
    character = getattr(exc, "character", None)
    what = f"character U+{character:04X}" if isinstance(character, int) else "a character"
    return SpecError(
        f"invalid YAML: {what} is not allowed in YAML text",
        path=path,
        line=line,
        col=col,
        hint='write control characters escaped inside double quotes, e.g. "\\x1b"',
    )


def _expanded(event: Any, counts: list[int], sizes: dict[str, int], anchors: list[str | None]) -> bool:
    """Count `event` into `counts` (a stack of open collections' values, aliases expanded; called
    before `anchors`, the open collections' anchors, takes the event in). True when it added values."""
    if isinstance(event, _OPENS):
        counts.append(1)
        return True
    if isinstance(event, _CLOSES):
        done = counts.pop()
        counts[-1] += done
        if anchors and anchors[-1] is not None:
            sizes[anchors[-1]] = done
        return False
    if isinstance(event, yaml.ScalarEvent):
        counts[-1] += 1
        if event.anchor is not None:
            sizes[event.anchor] = 1
        return True
    if isinstance(event, yaml.AliasEvent):
        counts[-1] += sizes.get(event.anchor or "", 1)
        return True
    return False


def _at(mark: Any, path: str, message: str, *, hint: str) -> SpecError:
    # `mark` is a yaml Mark of the C or the Python parser (both have line and column).
    return SpecError(message, path=path, line=mark.line + 1, col=mark.column + 1, hint=hint)
