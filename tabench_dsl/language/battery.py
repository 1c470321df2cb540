"""A battery folder -> a validated `Battery`: the manifest, its scorer, its policy and rubric files.

`read_battery` makes one pass over everything and collects every problem it can find (lint shows
them all); `load_battery` raises them together as `SpecErrors`, sorted by path, line and column.
Manifest problems point at their line in `battery.yaml` (the YAML node API keeps positions);
question problems at their line in the rubric file.

A battery reads only its own folder: every file its manifest names (a policy, a rubric pattern's
matches, a scorer folder) must resolve, symlinks followed, inside the battery folder or a folder
the user allows on the command line (`allow_dirs`, `--allow-dir`), never one the manifest allows
itself; a shipped scorer named by version is read from the package. A file outside is an error at
the manifest line that named it, and nothing of it is read. `files` does the reading.
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, cast

import msgspec
import yaml

from ..core.errors import SpecError, SpecErrors, UsageError
from ..core.nodes import Battery, JudgeDefaults, Pos, Question, Rule, Scorer
from ..core.price import PRICE_EXAMPLE, PRICE_KEYS, missing_price_keys, price_value_problem
from ..core.resources import specs_dir
from .files import Refused, is_inside, read_spec_text, real_path
from .judge_reasoning import check_reasoning, thinking_problems
from .parse import RawQuestion, parse_policy, parse_rubric
from .reasoning_tags import check_reasoning_tags
from .rubric import build_questions
from .scorer import read_settings
from .yaml_io import reader_error, yaml_error, yaml_problem

#: The keys a manifest may have, in the order hints list them.
MANIFEST_KEYS: tuple[str, ...] = ("name", "scorer", "policies", "rubrics", "t1", "judge", "reasoning_tags")
#: The keys of the manifest's `judge:` mapping.
JUDGE_KEYS: tuple[str, ...] = (
    "model",
    "temperature",
    "max_tokens",
    "backend",
    "price",
    "panel",
    "rule",
    "prompt_cache",
    "reasoning",
)
#: The keys of one judge of the manifest's `judge: {panel: [...]}`.
PANEL_JUDGE_KEYS: tuple[str, ...] = ("backend", "model", "temperature", "max_tokens", "price")
#: The rules a judge panel may use (`grading.panel`).
PANEL_RULES: tuple[str, ...] = ("majority", "unanimous")
#: The manifest keys without a default.
REQUIRED_KEYS: tuple[str, ...] = ("name", "scorer", "rubrics")
#: A battery name.
BATTERY_NAME = re.compile(r"[a-z0-9][a-z0-9._-]*\Z")
#: The name of a battery's manifest file.
MANIFEST = "battery.yaml"

_TAG = "tag:yaml.org,2002:"


class Loaded(msgspec.Struct):
    """What one pass over a battery found: the battery (None when there were errors), the rules and
    questions that could be read, whether T1 is on for the battery, and every problem; also the
    scorer and the manifest's `judge:` when they could be read, with where each judge key's value
    was written (`judge_pos`, for lint)."""

    battery: Battery | None
    rules: tuple[Rule, ...]
    questions: tuple[Question, ...]
    t1: bool
    errors: list[SpecError]
    scorer: Scorer | None = None
    judge: JudgeDefaults | None = None
    judge_pos: dict[str, Pos] = msgspec.field(default_factory=dict)


def load_battery(path: str | Path, *, allow_dirs: Iterable[str | Path] = ()) -> Battery:
    """Load and validate the battery at `path` (its folder or its battery.yaml).

    `allow_dirs` are folders outside the battery that its manifest may name files in (the user's
    `--allow-dir`). Raises `SpecErrors` with every problem found, sorted by path, line and column,
    and `UsageError` when there is no battery at `path` or an allowed folder is not a folder.
    """
    loaded = read_battery(path, allow_dirs=allow_dirs)
    if loaded.errors or loaded.battery is None:
        raise SpecErrors(loaded.errors)
    return loaded.battery


def read_battery(path: str | Path, *, allow_dirs: Iterable[str | Path] = ()) -> Loaded:
    """Read the battery at `path`, collecting every problem instead of stopping at the first.

    `allow_dirs` as for `load_battery`."""
    manifest = manifest_path(path)
    base = manifest.parent
    roots = _Roots.of(base, allow_dirs)
    if not is_inside(manifest, roots.paths):
        raise UsageError(f"{manifest} is a link to a file {roots.outside}")
    errors: list[SpecError] = []
    values = _read_manifest(manifest, errors)
    scorer = _load_scorer(values["scorer"], base, roots, errors) if "scorer" in values else None

    rules: list[Rule] = []
    for entry in values.get("policies", []):
        file = base / entry.text
        text = _read_named(file, entry, entry.text, "policy file", roots, errors)
        try:
            rules.extend(parse_policy(text, file).rules if text is not None else ())
        except SpecError as exc:
            errors.append(exc)
    _check_rule_ids(rules, errors)

    raw: list[RawQuestion] = []
    for file, pattern in _rubric_files(values.get("rubrics", []), base, roots, errors):
        text = _read_named(base / file, pattern, file, "rubric file", None, errors)  # matches are inside
        try:
            raw.extend(parse_rubric(text, base / file).questions if text is not None else ())
        except SpecError as exc:
            errors.append(exc)
    questions = build_questions(raw, errors, scorer.settings.facets if scorer is not None else None)

    errors.sort(key=lambda e: (e.path, e.line, e.col))
    t1 = values["t1"].value if "t1" in values else True
    judge = values["judge"].value if "judge" in values else None
    battery = None
    if not errors and scorer is not None:
        battery = Battery(
            name=values["name"].value,
            manifest=str(manifest),
            scorer=scorer,
            policies=tuple(rules),
            questions=tuple(questions),
            t1=t1,
            judge=judge or JudgeDefaults(),
        )
        if "reasoning_tags" in values:
            battery = msgspec.structs.replace(battery, reasoning_tags=values["reasoning_tags"].value)
    judge_pos = values["judge"].parts if "judge" in values else {}
    return Loaded(battery, tuple(rules), tuple(questions), t1, errors, scorer, judge, judge_pos)


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
    """A manifest value and where it was written; for a mapping, where each key's value was."""

    value: object
    text: str
    pos: Pos
    parts: dict[str, Pos] = msgspec.field(default_factory=dict)


#: The hint of a file outside the folders a battery may read.
HINT_OUTSIDE = (
    "a battery reads only the files in its own folder; to let it read another folder, "
    "pass --allow-dir DIR on the command line"
)


class _Roots(msgspec.Struct, frozen=True):
    """The folders a battery may read (real paths): its own first, then those the user allows."""

    paths: tuple[Path, ...]

    @classmethod
    def of(cls, base: Path, allow_dirs: Iterable[str | Path]) -> _Roots:
        allowed = []
        for folder in allow_dirs:
            if not Path(folder).is_dir():
                raise UsageError(f"--allow-dir {folder}: no such folder")
            allowed.append(real_path(folder))
        return cls((real_path(base), *allowed))

    @property
    def outside(self) -> str:
        """How a path outside every root is described."""
        return "outside the battery folder" + (" and the allowed folders" if len(self.paths) > 1 else "")


def _read_manifest(manifest: Path, errors: list[SpecError]) -> dict[str, Any]:
    # Key -> its checked value: a `_Value` for `name`, `scorer`, `t1` and `judge`, a list of
    # `_Value`s for `policies` and `rubrics` (what `_MANIFEST_CHECKS` gives each key).
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
        errors.append(_error("empty manifest", Pos(path, 1, 1), hint=_keys_hint()))
        return {}
    if not isinstance(root, yaml.MappingNode):
        errors.append(_error("a manifest is a mapping of keys", _pos(root, path), hint=_keys_hint()))
        return {}
    values: dict[str, Any] = {}
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
        errors.append(
            _error(
                f"bad battery name '{text}'",
                _pos(node, path),
                hint="a name is lowercase letters, digits, '.', '_' and '-', starting with a letter or digit",
            )
        )
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
        errors.append(
            _error(
                "judge must be a mapping",
                _pos(node, path),
                hint="judge: {model: NAME, temperature: 0, max_tokens: 300, backend: NAME, "
                "prompt_cache: true}",
            )
        )
        return None
    fields: dict[str, object] = {}
    parts: dict[str, Pos] = {}
    ok = _judge_fields(node, path, errors, JUDGE_KEYS, "judge", fields, parts)
    thinking = thinking_problems(fields, parts) if ok else []
    errors.extend(thinking)
    ok = ok and not thinking
    return _Value(msgspec.convert(fields, JudgeDefaults), "", _pos(node, path), parts) if ok else None


def _judge_fields(
    node: yaml.MappingNode,
    path: str,
    errors: list[SpecError],
    keys: tuple[str, ...],
    where: str,
    fields: dict[str, object],
    parts: dict[str, Pos],
) -> bool:
    """Check the keys of a `judge:` mapping (or of one judge of its `panel:`, whose `keys` are
    `PANEL_JUDGE_KEYS`) into `fields`; False when any problem was found (each is in `errors`)."""
    seen: dict[str, Pos] = {}
    ok = True
    for key_node, value in node.value:
        key = str(key_node.value)
        at = _pos(value, path)
        parts.setdefault(key, at)
        if key in seen:
            hint = f"first given at line {seen[key].line}"
            errors.append(_error(f"duplicate {where} key '{key}'", _pos(key_node, path), hint=hint))
            ok = False
            continue
        seen[key] = _pos(key_node, path)
        if key not in keys:
            hint = f"{where} keys are " + ", ".join(keys)
            errors.append(_error(f"unknown {where} key '{key}'", _pos(key_node, path), hint=hint))
            ok = False
        elif key in ("model", "backend"):
            text = _scalar_text(value, f"{where} {key}", path, errors)
            ok = ok and text is not None
            fields[key] = text
        elif key == "price":
            price = _check_price(value, path, errors)
            ok = ok and price is not None
            fields[key] = price
        elif key == "temperature" and value.tag in (_TAG + "int", _TAG + "float"):
            fields[key] = float(cast(float, _construct(value)))
        elif key == "rule":
            text = _scalar_text(value, "judge rule", path, errors)
            if text is not None and text not in PANEL_RULES:
                hint = "a panel's rule is " + " or ".join(PANEL_RULES)
                errors.append(_error(f"unknown judge rule '{text}'", at, hint=hint))
                text = None
            ok = ok and text is not None
            fields[key] = text
        elif key == "reasoning":
            reasoning = check_reasoning(value, path, errors)
            ok = ok and reasoning is not None
            fields[key] = reasoning
        elif key == "panel":
            panel = _check_panel(value, path, errors)
            ok = ok and panel is not None
            fields[key] = panel
        elif _judge_value_fits(key, value):
            fields[key] = _construct(cast(yaml.ScalarNode, value))
        else:
            kind = _JUDGE_VALUE_KINDS.get(key, "a positive whole number")
            errors.append(_error(f"{where} {key} must be {kind}, not {_shown(value)}", at))
            ok = False
    if where != "judge" and ok and "backend" not in fields:
        errors.append(
            _error(
                "a panel judge needs a backend",
                _pos(node, path),
                hint="panel: [{backend: openai, model: NAME}, {backend: anthropic, model: NAME}]",
            )
        )
        ok = False
    return ok


def _check_panel(node: yaml.Node, path: str, errors: list[SpecError]) -> list[dict[str, object]] | None:
    """The judges of `judge: {panel: [...]}`: a list of at least two mappings, each with a backend."""
    hint = "panel: [{backend: openai, model: NAME}, {backend: anthropic, model: NAME}]"
    if not isinstance(node, yaml.SequenceNode):
        errors.append(
            _error(f"judge panel must be a list of judges, not {_shown(node)}", _pos(node, path), hint=hint)
        )
        return None
    members: list[dict[str, object]] = []
    ok = True
    for item in node.value:
        if not isinstance(item, yaml.MappingNode):
            errors.append(
                _error(f"a panel judge must be a mapping, not {_shown(item)}", _pos(item, path), hint=hint)
            )
            ok = False
            continue
        fields: dict[str, object] = {}
        if _judge_fields(item, path, errors, PANEL_JUDGE_KEYS, "panel judge", fields, {}):
            members.append(fields)
        else:
            ok = False
    if ok and len(members) < 2:
        errors.append(_error("a judge panel needs at least two judges", _pos(node, path), hint=hint))
        ok = False
    return members if ok else None


#: The hint of a bad `judge: {price: ...}`.
_PRICE_HINT = "price: {" + PRICE_EXAMPLE.replace("=", ": ").replace(",", ", ") + "} in USD per million tokens"


def _check_price(node: yaml.Node, path: str, errors: list[SpecError]) -> dict[str, float] | None:
    """The judge's `price:` mapping (USD per million tokens): each problem at its own line and column,
    a missing required key at the mapping."""
    if not isinstance(node, yaml.MappingNode):
        errors.append(
            _error(f"judge price must be a mapping, not {_shown(node)}", _pos(node, path), hint=_PRICE_HINT)
        )
        return None
    values: dict[str, float] = {}
    seen: dict[str, Pos] = {}
    ok = True
    for key_node, value in node.value:
        key = str(key_node.value)
        if key in seen:
            hint = f"first given at line {seen[key].line}"
            errors.append(_error(f"duplicate price key '{key}'", _pos(key_node, path), hint=hint))
            ok = False
            continue
        seen[key] = _pos(key_node, path)
        if key not in PRICE_KEYS:
            hint = "price keys are " + ", ".join(PRICE_KEYS)
            errors.append(_error(f"unknown price key '{key}'", _pos(key_node, path), hint=hint))
            ok = False
            continue
        number = (
            _construct(value)
            if isinstance(value, yaml.ScalarNode) and value.tag in (_TAG + "int", _TAG + "float")
            else None
        )
        problem = price_value_problem(number)
        if problem is not None:
            errors.append(_error(f"price {key} {problem}, not {_shown(value)}", _pos(value, path)))
            ok = False
            continue
        values[key] = float(cast(float, number))
    missing = missing_price_keys(seen)
    if missing:
        need = " and ".join(f"'{key}'" for key in missing)
        errors.append(_error(f"judge price needs {need}", _pos(node, path), hint=_PRICE_HINT))
        ok = False
    return values if ok else None


def _check_reasoning_tags(node: yaml.Node, path: str, errors: list[SpecError]) -> _Value | None:
    tags = check_reasoning_tags(node, path, errors)
    return None if tags is None else _Value(tags, "", _pos(node, path))


#: What a judge key other than `model` and `backend` takes, as its error says it.
_JUDGE_VALUE_KINDS = {"temperature": "a number", "prompt_cache": "true or false"}


def _judge_value_fits(key: str, value: yaml.Node) -> bool:
    """Whether `value` is what `max_tokens` (a whole number above 0) or `prompt_cache` (true or
    false) takes."""
    if not isinstance(value, yaml.ScalarNode):
        return False
    if key == "max_tokens":
        return value.tag == _TAG + "int" and cast(int, _construct(value)) > 0
    return key == "prompt_cache" and value.tag == _TAG + "bool"


_MANIFEST_CHECKS = {
    "name": _check_name,
    "scorer": _check_scorer,
    "policies": _check_files("policies"),
    "rubrics": _check_files("rubrics"),
    "t1": _check_t1,
    "judge": _check_judge,
    "reasoning_tags": _check_reasoning_tags,
}

_REQUIRED_HINTS = {
    "name": "add a line: name: my-battery",
    "scorer": "add a line: scorer: tabench-1.1",
    "rubrics": "add a line: rubrics: [questions/*.rubric]",
}


def _load_scorer(value: _Value, base: Path, roots: _Roots, errors: list[SpecError]) -> Scorer | None:
    """The scorer the manifest names: a shipped version by name, else a folder inside the battery
    (or an allowed folder). A scorer reads only its own folder (`render` holds its templates to it)."""
    name = value.text
    folder = None
    if "/" not in name and "\\" not in name and name not in (".", "..") and name in shipped_scorers():
        folder = specs_dir() / name
    elif (base / name).is_dir() and not is_inside(base / name, roots.paths):
        errors.append(_error(f"scorer folder '{name}' is {roots.outside}", value.pos, hint=HINT_OUTSIDE))
        return None
    elif (base / name / "scorer.yaml").exists():
        folder = base / name
    if folder is None:
        shipped = ", ".join(shipped_scorers()) or "none"
        errors.append(
            _error(
                f"unknown scorer '{name}'",
                value.pos,
                hint=f"shipped scorers are {shipped}; "
                "or give the path of a scorer folder (one with scorer.yaml)",
            )
        )
        return None
    settings_file = folder / "scorer.yaml"
    text = _read_named(
        settings_file,
        value,
        "scorer.yaml",
        "scorer settings",
        _Roots((real_path(folder),)),
        errors,
        outside="outside the scorer folder",
    )
    if text is None:
        return None
    settings = read_settings(text, settings_file, errors)
    if settings is None:
        return None
    return Scorer(name=settings.name or folder.name, path=str(real_path(folder)), settings=settings)


#: A character that makes a path piece a glob pattern.
_GLOB_MAGIC = re.compile(r"[*?[]")


def _rubric_files(
    patterns: list[_Value], base: Path, roots: _Roots, errors: list[SpecError]
) -> list[tuple[str, _Value]]:
    """The rubric files the patterns match (as written from `base`), each with the pattern that
    named it. Patterns in manifest order, each pattern's files sorted; a file two patterns match is
    read once. A match that resolves outside the roots (a symlink) is an error at the pattern."""
    files: dict[Path, tuple[str, _Value]] = {}
    for pattern in patterns:
        matches = _matches(pattern, base, roots, errors)
        if matches is None:
            continue
        outside = [m for m in matches if not is_inside(base / m, roots.paths)]
        if outside:
            more = f" (and {len(outside) - 1} more)" if len(outside) > 1 else ""
            errors.append(
                _error(
                    f"rubric pattern '{pattern.text}' matches '{outside[0]}'{more}, {roots.outside}",
                    pattern.pos,
                    hint=HINT_OUTSIDE,
                )
            )
        elif not matches:
            errors.append(
                _error(
                    f"rubric pattern '{pattern.text}' matches no file",
                    pattern.pos,
                    hint=f"patterns are relative to the folder of {MANIFEST}",
                )
            )
        for match in matches:
            if match not in outside:
                files.setdefault(base / match, (match, pattern))
    return list(files.values())


def _matches(pattern: _Value, base: Path, roots: _Roots, errors: list[SpecError]) -> list[str] | None:
    """The files `pattern` matches, as paths from `base`, sorted; None (and an error) when its
    fixed folder part lies outside the roots: `/**/*.rubric` is refused before any folder is listed.

    The pattern's wildcards read as `glob.glob` reads them (`*` and `?` within a name, `**` for any
    folders, names starting with '.' only when the pattern's piece does), but its `**` does not
    enter a symlinked folder: two links back to the battery folder would make `glob.glob` list
    paths without end. Folders and dangling links are not matches.
    """
    pieces = pattern.text.split("/")
    fixed = next((i for i, piece in enumerate(pieces) if _GLOB_MAGIC.search(piece)), len(pieces) - 1)
    prefix = "/".join(pieces[:fixed]) or ("/" if pattern.text.startswith("/") else "")
    rest = "/".join(pieces[fixed:])
    folder = base / prefix
    if not is_inside(folder, roots.paths):
        errors.append(
            _error(f"rubric pattern '{pattern.text}' reaches {roots.outside}", pattern.pos, hint=HINT_OUTSIDE)
        )
        return None
    if not rest or not folder.is_dir():
        return []
    if "**" in rest:
        hidden = any(piece.startswith(".") for piece in pieces[fixed:])
        found = [
            str(path.relative_to(folder))
            for path in folder.glob(rest)  # `**` skips symlinked folders
            if hidden or not any(part.startswith(".") for part in path.relative_to(folder).parts)
        ]
    else:  # a fixed depth: glob.glob cannot loop, and lists a folder faster than pathlib
        found = glob.glob(rest, root_dir=folder)
    return sorted(
        os.path.join(prefix, name)
        for name in found
        if os.path.exists(folder / name) and not os.path.isdir(folder / name)
    )


def _check_rule_ids(rules: list[Rule], errors: list[SpecError]) -> None:
    first: dict[str, Rule] = {}
    for rule in rules:
        if rule.id is None:
            continue
        if rule.id in first:
            errors.append(
                _error(
                    f"duplicate rule id '{rule.id}'",
                    rule.pos,
                    hint=f"first defined at {first[rule.id].pos.path}:{first[rule.id].pos.line}",
                )
            )
        else:
            first[rule.id] = rule


def _read_named(
    file: Path,
    where: _Value,
    name: str,
    what: str,
    roots: _Roots | None,
    errors: list[SpecError],
    *,
    outside: str | None = None,
) -> str | None:
    """The text of `file`, which the manifest entry `where` names (`name`, as the entry writes it or
    as its pattern matched it); None, and an error at `where`, when it may not or cannot be read.
    `roots` None: the caller has checked that `file` is inside them. Every refusal is reported at
    the manifest, so nothing of a refused file is ever shown."""
    if roots is not None and not is_inside(file, roots.paths):
        errors.append(_error(f"{what} '{name}' is {outside or roots.outside}", where.pos, hint=HINT_OUTSIDE))
        return None
    try:
        return read_spec_text(file, what)
    except Refused as exc:
        errors.append(_error(f"{what} '{name}' {exc.reason}", where.pos))
    except SpecError as exc:  # not UTF-8: at the file's own line and column
        errors.append(exc)
    except FileNotFoundError:
        errors.append(
            _error(
                f"{what} not found: '{where.text}'",
                where.pos,
                hint=f"paths are relative to the folder of {MANIFEST}",
            )
        )
    except OSError as exc:
        errors.append(_error(f"cannot read {what} {file}: {exc.strerror}", where.pos))
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
