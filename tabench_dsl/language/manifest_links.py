"""The files a battery.yaml entry names, for the language server's go to definition: a policy
file, the rubric files a pattern matches, a scorer's `scorer.yaml`.

A manifest is someone else's file: only files inside the battery's folder (links followed) are
named, and a shipped scorer's own `scorer.yaml`; `../../.ssh/id_rsa` or a link out is never opened
in the editor on the manifest's word."""

from __future__ import annotations

from pathlib import Path

import yaml

from ..core.resources import specs_dir
from .files import is_inside, real_path

#: The manifest keys whose values name files.
LINKED_KEYS = ("policies", "rubrics", "scorer")

#: The most files one pattern's definition lists.
MAX_TARGETS = 200


def _entry_at(text: str, line: int, column: int) -> tuple[str, str] | None:
    """The (key, value) of the manifest entry written at 1-based `line` and `column`, for the keys
    that name files; None elsewhere or when the text is not YAML."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except (yaml.YAMLError, RecursionError):
        return None
    if not isinstance(root, yaml.MappingNode):
        return None
    for key_node, value in root.value:
        if str(key_node.value) not in LINKED_KEYS:
            continue
        items = value.value if isinstance(value, yaml.SequenceNode) else [value]
        for item in items:
            if not isinstance(item, yaml.ScalarNode):
                continue
            start, end = item.start_mark, item.end_mark
            if start.line + 1 == line and start.column + 1 <= column <= end.column + 1:
                return str(key_node.value), str(item.value)
    return None


def linked_files(manifest: Path, text: str, line: int, column: int) -> list[Path]:
    """The files the entry at `line`, `column` of the manifest `text` (at `manifest`) names."""
    entry = _entry_at(text, line, column)
    if entry is None:
        return []
    key, value = entry
    base = manifest.parent
    battery = [real_path(base)]

    def kept(paths: list[Path]) -> list[Path]:
        try:
            return [p for p in paths if p.is_file() and is_inside(p, battery)]
        except (ValueError, OSError):  # a NUL in the name, a name too long
            return []

    if key == "policies":
        return kept([base / value])
    if key == "rubrics":
        try:
            return kept(sorted(base.glob(value)))[:MAX_TARGETS]
        except (ValueError, OSError, NotImplementedError):  # an absolute or malformed pattern
            return []
    # A name without `/` that a shipped scorer has means the shipped one (as the loader reads it).
    if "/" not in value:
        shipped = specs_dir() / value / "scorer.yaml"
        try:
            if shipped.is_file() and is_inside(shipped, [real_path(specs_dir())]):
                return [shipped]
        except (ValueError, OSError):
            return []
    return kept([base / value / "scorer.yaml"])[:1]
