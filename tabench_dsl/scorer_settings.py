"""What a scorer's settings (its scorer.yaml) may say, checked at the line that says it.

`battery` reads the file (inside the scorer's folder, through `spec_files`, its YAML checked by
`yaml_text`); this module knows the keys whose shape tabench relies on: the `facets:` list and the
`builtin:` section markers. `settings_pos` finds where a key is written, for any message about it.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from .errors import SpecError
from .nodes import FACET_NAMES, Pos

#: A facet name in a scorer's `facets:` list.
FACET_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
#: The keys of a scorer's `builtin:` section (the builtin judge's section markers).
BUILTIN_KEYS: tuple[str, ...] = ("question_start", "question_end", "answer_start")


def scorer_facets(settings: dict) -> tuple[str, ...] | None:
    """The facet names a scorer defines: its `facets:` list, `FACET_NAMES` when it has none, None
    when the list is malformed (`check_settings` reports that)."""
    value = settings.get("facets")
    if value is None:
        return FACET_NAMES
    if isinstance(value, list) and value and all(isinstance(n, str) and FACET_NAME.match(n) for n in value):
        return tuple(value)
    return None


def check_settings(settings: dict, text: str, file: Path, errors: list[SpecError]) -> None:
    """Report a malformed `facets:` list or `builtin:` section of a scorer's settings at its line."""
    if scorer_facets(settings) is None:
        errors.append(_settings_error(
            "scorer facets must be a list of names", text, file, ("facets",),
            hint="facets: [extra_correct_info, missing_minor, erroneous_assertion]",
        ))
    builtin = settings.get("builtin")
    if builtin is None:
        return
    keys_hint = "builtin keys are " + ", ".join(BUILTIN_KEYS) + ", each a one-line text"
    if not isinstance(builtin, dict):
        errors.append(_settings_error("scorer builtin must be a mapping", text, file, ("builtin",),
                                      hint=keys_hint))
        return
    for key, value in builtin.items():
        if key not in BUILTIN_KEYS:
            errors.append(_settings_error(f"unknown builtin key '{key}'", text, file, ("builtin", key),
                                          hint=keys_hint))
        elif not isinstance(value, str) or not value.strip() or "\n" in value:
            errors.append(_settings_error(f"builtin {key} must be a one-line text", text, file,
                                          ("builtin", key), hint=keys_hint))


def settings_pos(text: str, file: str | Path, keys: tuple[str, ...], *, value: bool = False) -> Pos:
    """Where `keys` (a path of mapping keys) is written in a scorer's settings `text`: the last
    key, or its value with `value`; the deepest key found when the path stops early; else 1:1.
    The text has loaded once already (and passed `yaml_text.yaml_problem`), so it composes."""
    node: yaml.Node | None = yaml.compose(text, Loader=yaml.SafeLoader)
    at = node
    for key in keys:
        found = None
        if isinstance(node, yaml.MappingNode):
            found = next((pair for pair in node.value if str(pair[0].value) == str(key)), None)
        if found is None:
            break
        at, node = found[0], found[1]
    else:
        if value and node is not None:
            at = node
    if at is None:
        return Pos(str(file), 1, 1)
    return Pos(str(file), at.start_mark.line + 1, at.start_mark.column + 1)


def _settings_error(message: str, text: str, file: Path, keys: tuple[str, ...], *, hint: str) -> SpecError:
    """An error at the key `keys` ends with in a scorer's settings text."""
    at = settings_pos(text, file, keys)
    return SpecError(message, path=at.path, line=at.line, col=at.col, hint=hint)
