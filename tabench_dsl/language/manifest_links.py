"""The files a battery.yaml entry names, for the language server's go to definition: a policy
file, the rubric files a pattern matches, a scorer's `scorer.yaml`."""

from __future__ import annotations

from pathlib import Path

import yaml

from ..core.resources import specs_dir

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
    if key == "policies":
        target = base / value
        return [target] if target.is_file() else []
    if key == "rubrics":
        inside = base.resolve()
        try:
            found = sorted(p for p in base.glob(value) if p.is_file() and p.resolve().is_relative_to(inside))
        except (ValueError, OSError, NotImplementedError):  # an absolute or malformed pattern
            return []
        return found[:MAX_TARGETS]
    # A name without `/` that a shipped scorer has means the shipped one (as the loader reads it).
    shipped = specs_dir() / value / "scorer.yaml"
    candidates = [base / value / "scorer.yaml"] if "/" in value else [shipped, base / value / "scorer.yaml"]
    return [c for c in candidates if c.is_file()][:1]
