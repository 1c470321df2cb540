"""A battery folder -> a validated `Battery`: the manifest, its scorer, its policy and rubric files.

`read_battery` makes one pass over everything and collects every problem it can find (lint shows
them all); `load_battery` raises them together as `SpecErrors`, sorted by path, line and column.
Manifest problems point at their line in `battery.yaml` (`manifest` checks its keys, the YAML node
API keeping positions); question problems at their line in the rubric file.

A battery reads only its own folder: every file its manifest names (a policy, a rubric pattern's
matches, a scorer folder) must resolve, symlinks followed, inside the battery folder or a folder
the user allows on the command line (`allow_dirs`, `--allow-dir`), never one the manifest allows
itself; a shipped scorer named by version is read from the package. A file outside is an error at
the manifest line that named it, and nothing of it is read. `files` does the reading.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import msgspec

from ..core.errors import SpecError, SpecErrors, UsageError
from ..core.nodes import Battery, JudgeDefaults, Pos, Question, Rule, Scorer
from ..core.resources import specs_dir
from ..core.tiers import DEFAULT_T1_RULE
from .files import MANIFEST, Refused, is_inside, manifest_path, pattern_matches, read_spec_text, real_path
from .manifest import read_manifest
from .manifest_lint import LintSettings
from .parse import RawQuestion, parse_policy, parse_rubric
from .rubric import build_questions
from .scorer import read_settings
from .yaml_nodes import Value, spec_error


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
    #: The manifest's `t1_trap` (T1 defers to the judge on the trap's words).
    t1_trap: bool = True
    #: The manifest's T1 rule (`tiers.T1_RULES`).
    t1_rule: str = DEFAULT_T1_RULE
    #: The manifest's `lint:` (warning codes turned off or shown as a count).
    lint: LintSettings = LintSettings()


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
    values = read_manifest(manifest, errors)
    scorer = _load_scorer(values["scorer"], base, roots, errors) if "scorer" in values else None

    rules = _read_policies(values, base, roots, errors)
    questions = _read_questions(values, base, roots, errors, scorer)

    errors.sort(key=lambda e: (e.path, e.line, e.col))
    t1, t1_rule = values["t1"].value if "t1" in values else (True, DEFAULT_T1_RULE)
    t1_trap = values["t1_trap"].value if "t1_trap" in values else True
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
            t1_trap=t1_trap,
            t1_rule=t1_rule,
        )
        if "reasoning_tags" in values:
            battery = msgspec.structs.replace(battery, reasoning_tags=values["reasoning_tags"].value)
    judge_pos = values["judge"].parts if "judge" in values else {}
    loaded = Loaded(
        battery,
        tuple(rules),
        tuple(questions),
        t1,
        errors,
        scorer,
        judge,
        judge_pos,
        t1_trap=t1_trap,
        t1_rule=t1_rule,
    )
    return _with_lint(loaded, values)


def _read_policies(values: dict, base: Path, roots: _Roots, errors: list[SpecError]) -> list[Rule]:
    """The S-rules of the policy files the manifest names, in order, their ids checked."""
    rules: list[Rule] = []
    for entry in values.get("policies", []):
        file = base / entry.text
        text = _read_named(file, entry, entry.text, "policy file", roots, errors)
        try:
            rules.extend(parse_policy(text, file).rules if text is not None else ())
        except SpecError as exc:
            errors.append(exc)
    _check_rule_ids(rules, errors)
    return rules


def _read_questions(
    values: dict, base: Path, roots: _Roots, errors: list[SpecError], scorer: Scorer | None
) -> list[Question]:
    """The questions of the rubric files the manifest's patterns match, in sorted file order."""
    raw: list[RawQuestion] = []
    for file, pattern in _rubric_files(values.get("rubrics", []), base, roots, errors):
        text = _read_named(base / file, pattern, file, "rubric file", None, errors)  # matches are inside
        try:
            raw.extend(parse_rubric(text, base / file).questions if text is not None else ())
        except SpecError as exc:
            errors.append(exc)
    return build_questions(raw, errors, scorer.settings.facets if scorer is not None else None)


def _with_lint(loaded: Loaded, values: dict) -> Loaded:
    """`loaded` with the manifest's `lint:` settings, when it has them."""
    return msgspec.structs.replace(loaded, lint=values["lint"].value) if "lint" in values else loaded


def shipped_scorers() -> list[str]:
    """The names of the scorers shipped in the project's specs folder."""
    root = specs_dir()
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / "scorer.yaml").is_file())


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


def _load_scorer(value: Value, base: Path, roots: _Roots, errors: list[SpecError]) -> Scorer | None:
    """The scorer the manifest names: a shipped version by name, else a folder inside the battery
    (or an allowed folder). A scorer reads only its own folder (`render` holds its templates to it)."""
    name = value.text
    folder = None
    if "/" not in name and "\\" not in name and name not in (".", "..") and name in shipped_scorers():
        folder = specs_dir() / name
    elif (base / name).is_dir() and not is_inside(base / name, roots.paths):
        errors.append(spec_error(f"scorer folder '{name}' is {roots.outside}", value.pos, hint=HINT_OUTSIDE))
        return None
    elif (base / name / "scorer.yaml").exists():
        folder = base / name
    if folder is None:
        shipped = ", ".join(shipped_scorers()) or "none"
        errors.append(
            spec_error(
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
    is_shipped = folder == specs_dir() / name  # a shipped scorer: its phrase patterns are trusted
    settings = read_settings(text, settings_file, errors, shipped=is_shipped)
    if settings is None:
        return None
    if is_shipped:
        settings = msgspec.structs.replace(
            settings, contradiction=msgspec.structs.replace(settings.contradiction, trusted=True)
        )
    return Scorer(name=settings.name or folder.name, path=str(real_path(folder)), settings=settings)


def _rubric_files(
    patterns: list[Value], base: Path, roots: _Roots, errors: list[SpecError]
) -> list[tuple[str, Value]]:
    """The rubric files the patterns match (as written from `base`), each with the pattern that
    named it. Patterns in manifest order, each pattern's files sorted; a file two patterns match is
    read once. A match that resolves outside the roots (a symlink) is an error at the pattern."""
    files: dict[Path, tuple[str, Value]] = {}
    for pattern in patterns:
        matches = _matches(pattern, base, roots, errors)
        if matches is None:
            continue
        outside = [m for m in matches if not is_inside(base / m, roots.paths)]
        if outside:
            more = f" (and {len(outside) - 1} more)" if len(outside) > 1 else ""
            errors.append(
                spec_error(
                    f"rubric pattern '{pattern.text}' matches '{outside[0]}'{more}, {roots.outside}",
                    pattern.pos,
                    hint=HINT_OUTSIDE,
                )
            )
        elif not matches:
            errors.append(
                spec_error(
                    f"rubric pattern '{pattern.text}' matches no file",
                    pattern.pos,
                    hint=f"patterns are relative to the folder of {MANIFEST}",
                )
            )
        for match in matches:
            if match not in outside:
                files.setdefault(base / match, (match, pattern))
    return list(files.values())


def _matches(pattern: Value, base: Path, roots: _Roots, errors: list[SpecError]) -> list[str] | None:
    """The files `pattern` matches (`files.pattern_matches`); None, and an error, when its fixed
    folder part lies outside the roots."""
    matches = pattern_matches(pattern.text, base, roots.paths)
    if matches is None:
        errors.append(
            spec_error(
                f"rubric pattern '{pattern.text}' reaches {roots.outside}", pattern.pos, hint=HINT_OUTSIDE
            )
        )
    return matches


def _check_rule_ids(rules: list[Rule], errors: list[SpecError]) -> None:
    first: dict[str, Rule] = {}
    for rule in rules:
        if rule.id is None:
            continue
        if rule.id in first:
            errors.append(
                spec_error(
                    f"duplicate rule id '{rule.id}'",
                    rule.pos,
                    hint=f"first defined at {first[rule.id].pos.path}:{first[rule.id].pos.line}",
                )
            )
        else:
            first[rule.id] = rule


def _read_named(
    file: Path,
    where: Value,
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
        errors.append(
            spec_error(f"{what} '{name}' is {outside or roots.outside}", where.pos, hint=HINT_OUTSIDE)
        )
        return None
    try:
        return read_spec_text(file, what)
    except Refused as exc:
        errors.append(spec_error(f"{what} '{name}' {exc.reason}", where.pos))
    except SpecError as exc:  # not UTF-8: at the file's own line and column
        errors.append(exc)
    except FileNotFoundError:
        errors.append(
            spec_error(
                f"{what} not found: '{where.text}'",
                where.pos,
                hint=f"paths are relative to the folder of {MANIFEST}",
            )
        )
    except OSError as exc:
        errors.append(spec_error(f"cannot read {what} {file}: {exc.strerror}", where.pos))
    return None
