"""A battery folder -> a validated `Battery`: the manifest, its scorer, its policy and rubric files.

`read_battery` makes one pass over everything and collects every problem it can find (lint shows
them all); `load_battery` raises them together as `SpecErrors`, sorted by path, line and column.
Manifest problems point at their line in `battery.yaml` (the YAML node API keeps positions);
question problems at their line in the rubric file.
"""

from __future__ import annotations

import glob
import re
from pathlib import Path

import msgspec
import yaml

from ..core.errors import SpecError, SpecErrors, UsageError
from ..core.nodes import Battery, JudgeDefaults, Pos, Question, Rule, Scorer
from ..core.resources import specs_dir
from .parse import parse_policy, parse_rubric
from .rubric import build_questions
from .scorer import read_settings
from .yaml_io import yaml_error

#: The keys a manifest may have, in the order hints list them.
MANIFEST_KEYS: tuple[str, ...] = ("name", "scorer", "policies", "rubrics", "t1", "judge")
#: The keys of the manifest's `judge:` mapping.
JUDGE_KEYS: tuple[str, ...] = ("model", "temperature", "max_tokens", "backend")
#: The manifest keys without a default.
REQUIRED_KEYS: tuple[str, ...] = ("name", "scorer", "rubrics")
#: A battery name.
BATTERY_NAME = re.compile(r"[a-z0-9][a-z0-9._-]*\Z")
#: The name of a battery's manifest file.
MANIFEST = "battery.yaml"

_TAG = "tag:yaml.org,2002:"


class Loaded(msgspec.Struct):
    """What one pass over a battery found: the battery (None when there were errors), the rules and
    questions that could be read, whether T1 is on for the battery, and every problem."""

    battery: Battery | None
    rules: tuple[Rule, ...]
    questions: tuple[Question, ...]
    t1: bool
    errors: list[SpecError]


def load_battery(path: str | Path) -> Battery:
    """Load and validate the battery at `path` (its folder or its battery.yaml).

    Raises `SpecErrors` with every problem found, sorted by path, line and column, and
    `UsageError` when there is no battery at `path`.
    """
    loaded = read_battery(path)
    if loaded.errors or loaded.battery is None:
        raise SpecErrors(loaded.errors)
    return loaded.battery


def read_battery(path: str | Path) -> Loaded:
    """Read the battery at `path`, collecting every problem instead of stopping at the first."""
    manifest = manifest_path(path)
    base = manifest.parent
    errors: list[SpecError] = []
    values = _read_manifest(manifest, errors)
    scorer = _load_scorer(values["scorer"], base, errors) if "scorer" in values else None

    rules: list[Rule] = []
    for entry in values.get("policies", []):
        text = _read_text(base / entry.text, entry, "policy file", errors)
        try:
            rules.extend(parse_policy(text, base / entry.text).rules if text is not None else ())
        except SpecError as exc:
            errors.append(exc)
    _check_rule_ids(rules, errors)

    raw = []
    for file in _rubric_files(values.get("rubrics", []), base, errors):
        text = _read_text(file, None, "rubric file", errors)
        try:
            raw.extend(parse_rubric(text, file).questions if text is not None else ())
        except SpecError as exc:
            errors.append(exc)
    questions = build_questions(raw, errors, scorer.settings.facets if scorer is not None else None)

    errors.sort(key=lambda e: (e.path, e.line, e.col))
    t1 = values["t1"].value if "t1" in values else True
    battery = None
    if not errors and scorer is not None:
        battery = Battery(
            name=values["name"].value,
            manifest=str(manifest),
            scorer=scorer,
            policies=tuple(rules),
            questions=tuple(questions),
            t1=t1,
            judge=values["judge"].value if "judge" in values else JudgeDefaults(),
        )
    return Loaded(battery, tuple(rules), tuple(questions), t1, errors)


def manifest_path(path: str | Path) -> Path:
    """The battery.yaml of `path` (a battery folder or the manifest itself); UsageError if none."""
    path = Path(path)
    if path.is_dir():
        path = path / MANIFEST
        if not path.is_file():
            raise UsageError(f"no {MANIFEST} in {path.parent}")
    elif not path.is_file():
        raise UsageError(f"no such battery: {path}")
    return path


def shipped_scorers() -> list[str]:
    """The names of the scorers shipped in the project's specs folder."""
    root = specs_dir()
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / "scorer.yaml").is_file())


class _Value(msgspec.Struct):
    """A manifest value and where it was written."""

    value: object
    text: str
    pos: Pos


def _read_manifest(manifest: Path, errors: list[SpecError]) -> dict[str, _Value]:
    path = str(manifest)
    text = _read_text(manifest, None, "manifest", errors)
    if text is None:
        return {}
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        errors.append(yaml_error(exc, path))
        return {}
    if root is None:
        errors.append(_error("empty manifest", Pos(path, 1, 1), hint=_keys_hint()))
        return {}
    if not isinstance(root, yaml.MappingNode):
        errors.append(_error("a manifest is a mapping of keys", _pos(root, path), hint=_keys_hint()))
        return {}
    values: dict[str, _Value] = {}
    seen: dict[str, Pos] = {}
    for key_node, node in root.value:
        key = str(key_node.value)
        at = _pos(key_node, path)
        if key not in MANIFEST_KEYS:
            errors.append(_error(f"unknown key '{key}'", at, hint=_keys_hint()))
            continue
        if key in seen:
            errors.append(_error(f"duplicate key '{key}'", at, hint=f"first given at line {seen[key].line}"))
            continue
        seen[key] = at
        value = _MANIFEST_CHECKS[key](node, path, errors)
        if value is not None:
            values[key] = value
    for key in REQUIRED_KEYS:
        if key not in seen:
            errors.append(_error(f"missing key '{key}'", _pos(root, path), hint=_REQUIRED_HINTS[key]))
    return values


def _check_name(node: yaml.Node, path: str, errors: list[SpecError]) -> _Value | None:
    text = _scalar_text(node, "name", path, errors)
    if text is None:
        return None
    if not BATTERY_NAME.match(text):
        errors.append(_error(
            f"bad battery name '{text}'", _pos(node, path),
            hint="a name is lowercase letters, digits, '.', '_' and '-', starting with a letter or digit",
        ))
        return None
    return _Value(text, text, _pos(node, path))


def _check_scorer(node: yaml.Node, path: str, errors: list[SpecError]) -> _Value | None:
    text = _scalar_text(node, "scorer", path, errors)
    return None if text is None else _Value(text, text, _pos(node, path))


def _check_files(key: str):
    def check(node: yaml.Node, path: str, errors: list[SpecError]) -> list[_Value]:
        items = node.value if isinstance(node, yaml.SequenceNode) else [node]
        values = []
        for item in items:
            text = _scalar_text(item, key, path, errors, what="a file name or a list of them")
            if text is not None:
                values.append(_Value(text, text, _pos(item, path)))
        return values

    return check


def _check_t1(node: yaml.Node, path: str, errors: list[SpecError]) -> _Value | None:
    if isinstance(node, yaml.ScalarNode) and node.tag == _TAG + "bool":
        return _Value(_construct(node), node.value, _pos(node, path))
    errors.append(_error(f"t1 must be true or false, not {_shown(node)}", _pos(node, path)))
    return None


def _check_judge(node: yaml.Node, path: str, errors: list[SpecError]) -> _Value | None:
    if not isinstance(node, yaml.MappingNode):
        errors.append(_error(
            "judge must be a mapping", _pos(node, path),
            hint="judge: {model: NAME, temperature: 0, max_tokens: 300, backend: NAME}",
        ))
        return None
    fields: dict[str, object] = {}
    seen: dict[str, Pos] = {}
    ok = True
    for key_node, value in node.value:
        key = str(key_node.value)
        at = _pos(value, path)
        if key in seen:
            hint = f"first given at line {seen[key].line}"
            errors.append(_error(f"duplicate judge key '{key}'", _pos(key_node, path), hint=hint))
            ok = False
            continue
        seen[key] = _pos(key_node, path)
        if key not in JUDGE_KEYS:
            hint = "judge keys are " + ", ".join(JUDGE_KEYS)
            errors.append(_error(f"unknown judge key '{key}'", _pos(key_node, path), hint=hint))
            ok = False
        elif key in ("model", "backend"):
            text = _scalar_text(value, f"judge {key}", path, errors)
            ok = ok and text is not None
            fields[key] = text
        elif key == "temperature" and value.tag in (_TAG + "int", _TAG + "float"):
            fields[key] = float(_construct(value))
        elif key == "max_tokens" and value.tag == _TAG + "int" and _construct(value) > 0:
            fields[key] = _construct(value)
        else:
            kind = "a number" if key == "temperature" else "a positive whole number"
            errors.append(_error(f"judge {key} must be {kind}, not {_shown(value)}", at))
            ok = False
    return _Value(JudgeDefaults(**fields), "", _pos(node, path)) if ok else None


_MANIFEST_CHECKS = {
    "name": _check_name,
    "scorer": _check_scorer,
    "policies": _check_files("policies"),
    "rubrics": _check_files("rubrics"),
    "t1": _check_t1,
    "judge": _check_judge,
}

_REQUIRED_HINTS = {
    "name": "add a line: name: my-battery",
    "scorer": "add a line: scorer: tabench-1.1",
    "rubrics": "add a line: rubrics: [questions/*.rubric]",
}


def _load_scorer(value: _Value, base: Path, errors: list[SpecError]) -> Scorer | None:
    name = value.text
    folder = None
    if "/" not in name and "\\" not in name and name not in (".", "..") and name in shipped_scorers():
        folder = specs_dir() / name
    elif (base / name / "scorer.yaml").is_file():
        folder = base / name
    if folder is None:
        shipped = ", ".join(shipped_scorers()) or "none"
        errors.append(_error(
            f"unknown scorer '{name}'", value.pos,
            hint=f"shipped scorers are {shipped}; or give the path of a scorer folder (one with scorer.yaml)",
        ))
        return None
    settings_file = folder / "scorer.yaml"
    text = _read_text(settings_file, value, "scorer settings", errors)
    if text is None:
        return None
    settings = read_settings(text, settings_file, errors)
    if settings is None:
        return None
    return Scorer(name=settings.name or folder.name, path=str(folder.resolve()), settings=settings)


def _rubric_files(patterns: list[_Value], base: Path, errors: list[SpecError]) -> list[Path]:
    # Patterns in manifest order, each pattern's files sorted; a file two patterns match is read once.
    files: list[Path] = []
    for pattern in patterns:
        matches = sorted(
            m for m in glob.glob(pattern.text, root_dir=base, recursive=True) if (base / m).is_file()
        )
        if not matches:
            errors.append(_error(
                f"rubric pattern '{pattern.text}' matches no file", pattern.pos,
                hint=f"patterns are relative to the folder of {MANIFEST}",
            ))
        for match in matches:
            if base / match not in files:
                files.append(base / match)
    return files


def _check_rule_ids(rules: list[Rule], errors: list[SpecError]) -> None:
    first: dict[str, Rule] = {}
    for rule in rules:
        if rule.id is None:
            continue
        if rule.id in first:
            errors.append(_error(
                f"duplicate rule id '{rule.id}'", rule.pos,
                hint=f"first defined at {first[rule.id].pos.path}:{first[rule.id].pos.line}",
            ))
        else:
            first[rule.id] = rule


def _read_text(file: Path, where: _Value | None, what: str, errors: list[SpecError]) -> str | None:
    try:
        return file.read_text(encoding="utf-8")
    except FileNotFoundError:
        if where is None:
            raise UsageError(f"no such {what}: {file}") from None
        errors.append(_error(
            f"{what} not found: '{where.text}'", where.pos,
            hint=f"paths are relative to the folder of {MANIFEST}",
        ))
    except UnicodeDecodeError as exc:
        errors.append(SpecError(f"{what} is not UTF-8 text ({exc.reason})", path=file, line=1, col=1))
    except OSError as exc:
        at = where.pos if where is not None else Pos(str(file), 1, 1)
        errors.append(_error(f"cannot read {what} {file}: {exc.strerror}", at))
    return None


def _scalar_text(
    node: yaml.Node, key: str, path: str, errors: list[SpecError], what: str = "a single value"
) -> str | None:
    if isinstance(node, yaml.ScalarNode) and node.tag != _TAG + "null" and node.value != "":
        return str(node.value)
    errors.append(_error(f"{key} must be {what}, not {_shown(node)}", _pos(node, path)))
    return None


def _shown(node: yaml.Node) -> str:
    if isinstance(node, yaml.MappingNode):
        return "a mapping"
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    if node.tag == _TAG + "null" or node.value == "":
        return "empty"
    return f"'{node.value}'"


def _construct(node: yaml.ScalarNode) -> object:
    return yaml.SafeLoader("").construct_object(node)


def _pos(node: yaml.Node, path: str) -> Pos:
    return Pos(path, node.start_mark.line + 1, node.start_mark.column + 1)


def _error(message: str, at: Pos, *, hint: str | None = None) -> SpecError:
    return SpecError(message, path=at.path, line=at.line, col=at.col, hint=hint)


def _keys_hint() -> str:
    return "keys are " + ", ".join(MANIFEST_KEYS)
