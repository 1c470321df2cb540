"""`scorer.yaml` -> `core.scorer.ScorerSettings`, every problem reported at its own line and column.

Read once, on the compile side: the settings travel in the compiled battery, so a bad regular
expression in `contradiction:` or `injection:` is a `lint` and `compile` error at its entry, not a
failure when grading starts. The YAML is read fast (libyaml when PyYAML has it); its node tree,
which knows positions, is composed only when there is a problem to place (`yaml_io.yaml_position`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml

from ..core.errors import SpecError
from ..core.linear_regex import PatternError, compile_linear
from ..core.scorer import (
    INJECTION_FLAGS,
    SECTION_KEYS,
    SECTIONS,
    ContradictionSettings,
    JudgeSettings,
    Markers,
    ScorerSettings,
    Templates,
    phrase_regex,
)
from .yaml_io import reader_error, safe_load, yaml_error, yaml_position, yaml_problem

#: A facet name in a scorer's `facets:` list.
FACET_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
#: A template file name: a plain name in the scorer's folder.
TEMPLATE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*\Z")

_HINTS = {
    "templates": "templates keys are system, user, stern, each a file name in the scorer folder",
    "judge": "judge keys are temperature (0 to 2), max_tokens (a whole number >= 1), model, backend",
    "builtin": "builtin keys are question_start, question_end, answer_start, each a one-line text",
    "contradiction": "contradiction keys are " + ", ".join(SECTION_KEYS["contradiction"]),
}
_NOT_TEXT_HINT = "quote entries YAML reads as other types: 'no', 'yes', 'false', 'on', 'off', numbers"


def read_settings(
    text: str, file: Path, errors: list[SpecError], *, shipped: bool = False
) -> ScorerSettings | None:
    """The settings in `text` (the contents of `file`); each problem is appended to `errors`
    (None when any was found). `shipped`: a scorer installed with tabench, whose phrase lists run
    on Python's `re` (`ContradictionSettings.trusted`), so they are not checked against `regex`."""
    problem = yaml_problem(text, str(file))  # too deep, a lone surrogate, a cycle: before building
    if problem is not None:
        errors.append(problem)
        return None
    try:
        data = safe_load(text)
    except yaml.MarkedYAMLError as exc:
        errors.append(yaml_error(exc, str(file)))
        return None
    except yaml.YAMLError as exc:  # a character YAML refuses (its reader's error has no mark)
        errors.append(reader_error(exc, text, str(file)))
        return None
    except RecursionError:
        errors.append(SpecError("scorer settings are nested too deeply", path=str(file), line=1, col=1))
        return None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        errors.append(
            SpecError(
                "scorer settings must be a mapping",
                path=str(file),
                line=1,
                col=1,
                hint="sections are " + ", ".join(SECTIONS),
            )
        )
        return None
    check = _Checker(text, file)
    check.shipped = shipped
    values: dict[str, Any] = {}
    for key, value in data.items():
        if key not in SECTIONS:
            check.error(
                f"unknown scorer section '{key}'",
                (key,),
                at_key=True,
                hint="sections are " + ", ".join(SECTIONS),
            )
        elif value is not None:
            values[key] = _SECTION_READERS[key](check, value)
    if check.errors:
        errors.extend(check.errors)
        return None
    return ScorerSettings(**values)


class _Checker:
    """Collects the problems of one settings file, each placed at its node."""

    def __init__(self, text: str, file: Path) -> None:
        self.text, self.file = text, file
        self.errors: list[SpecError] = []
        #: A shipped scorer's file (`read_settings`).
        self.shipped = False

    def error(
        self, message: str, where: Sequence[str | int], *, at_key: bool = False, hint: str | None = None
    ) -> None:
        line, col = yaml_position(self.text, where, at_key=at_key)
        self.errors.append(SpecError(message, path=str(self.file), line=line, col=col, hint=hint))

    def text_list(
        self, value: Any, where: tuple[str, ...], *, rewrite: Callable[[str], str] = str, flags: int = 0
    ) -> tuple[str, ...]:
        """A list of regular expressions, each compiled (after `rewrite`) as it will be used."""
        name = ".".join(where)
        if not isinstance(value, list):
            self.error(f"{name} must be a list of patterns", where)
            return ()
        for index, item in enumerate(value):
            if not isinstance(item, str):
                self.error(f"{name}: entry {item!r} is not a string", (*where, index), hint=_NOT_TEXT_HINT)
        texts = tuple(item for item in value if isinstance(item, str))
        # One compile of the whole list (as grading joins it) is fast; only a list that fails is
        # compiled entry by entry, to name the bad one.
        try:
            re.compile("|".join(f"(?:{rewrite(item)})" for item in texts), flags)
        except re.error:
            for index, item in enumerate(value):
                if isinstance(item, str):
                    try:
                        re.compile(rewrite(item), flags)
                    except re.error as exc:
                        self.error(f"{name}: bad pattern {item!r}: {exc.msg}", (*where, index))
        return texts

    def mapping(self, value: Any, section: str) -> dict[str, Any]:
        """`value` as a mapping of the section's known keys (unknown keys are reported)."""
        if not isinstance(value, dict):
            self.error(f"scorer {section} must be a mapping", (section,), hint=_HINTS[section])
            return {}
        known = SECTION_KEYS[section]
        for key in value:
            if key not in known:
                self.error(
                    f"unknown {section} key '{key}'", (section, key), at_key=True, hint=_HINTS[section]
                )
        return {key: v for key, v in value.items() if key in known and v is not None}


def _name(check: _Checker, value: Any) -> str | None:
    if not isinstance(value, str) or not value.strip():
        check.error("scorer name must be a text", ("name",))
        return None
    return value


def _templates(check: _Checker, value: Any) -> Templates:
    values = check.mapping(value, "templates")
    for key, name in values.items():
        if not isinstance(name, str) or not TEMPLATE_NAME.match(name):
            check.error(
                f"templates.{key} must be a file name in the scorer folder",
                ("templates", key),
                hint=_HINTS["templates"],
            )
    return Templates(**{k: v for k, v in values.items() if isinstance(v, str)})


def _judge(check: _Checker, value: Any) -> JudgeSettings:
    values = check.mapping(value, "judge")
    temperature = values.get("temperature")
    number = isinstance(temperature, int | float) and not isinstance(temperature, bool)
    if temperature is not None and (not number or not 0 <= temperature <= 2):
        check.error("judge.temperature must be a number from 0 to 2", ("judge", "temperature"))
        temperature = None
    max_tokens = values.get("max_tokens")
    whole = isinstance(max_tokens, int) and not isinstance(max_tokens, bool)
    if max_tokens is not None and (not whole or max_tokens < 1):
        check.error("judge.max_tokens must be a whole number >= 1", ("judge", "max_tokens"))
        max_tokens = None
    texts = {}
    for key in ("model", "backend"):
        text = values.get(key)
        if text is not None and (not isinstance(text, str) or not text.strip()):
            check.error(f"judge.{key} must be a text", ("judge", key), hint=_HINTS["judge"])
        elif text is not None:
            texts[key] = text
    return JudgeSettings(
        temperature=None if temperature is None else float(temperature), max_tokens=max_tokens, **texts
    )


def _facets(check: _Checker, value: Any) -> tuple[str, ...]:
    if (
        isinstance(value, list)
        and value
        and len(set(map(str, value))) == len(value)
        and all(isinstance(n, str) and FACET_NAME.match(n) for n in value)
    ):
        return tuple(value)
    check.error(
        "scorer facets must be a list of names",
        ("facets",),
        hint="facets: [extra_correct_info, missing_minor, erroneous_assertion]",
    )
    return ()


def _builtin(check: _Checker, value: Any) -> Markers:
    values = check.mapping(value, "builtin")
    for key, marker in values.items():
        if not isinstance(marker, str) or not marker.strip() or "\n" in marker:
            check.error(f"builtin {key} must be a one-line text", ("builtin", key), hint=_HINTS["builtin"])
    return Markers(**{k: v for k, v in values.items() if isinstance(v, str)})


def _contradiction(check: _Checker, value: Any) -> ContradictionSettings:
    values = check.mapping(value, "contradiction")
    lists: dict[str, Any] = {}
    for key, item in values.items():
        if key == "window":
            if isinstance(item, bool) or not isinstance(item, int) or item < 0:
                check.error("contradiction.window must be a whole number >= 0", ("contradiction", "window"))
            else:
                lists[key] = item
        else:
            lists[key] = check.text_list(item, ("contradiction", key), rewrite=phrase_regex)
            if not check.shipped:  # a shipped scorer's lists run on `re`, never on `regex`
                _check_timed(check, item, key)
    return ContradictionSettings(**lists)


def _check_timed(check: _Checker, value: Any, key: str) -> None:
    """A battery's phrases run on the `regex` module (`grading.timed_regex`): a phrase Python's `re`
    reads but `regex` does not is an error at its own entry too."""
    import regex

    for position, item in enumerate(value if isinstance(value, list) else ()):
        if not isinstance(item, str):
            continue
        try:
            re.compile(phrase_regex(item))
        except re.error:
            continue  # reported by `text_list`
        try:
            regex.compile(phrase_regex(item), regex.VERSION0)
        except regex.error as exc:
            check.error(
                f"contradiction.{key}: pattern {item!r} cannot be used: {exc}",
                ("contradiction", key, position),
            )


def _injection(check: _Checker, value: Any) -> tuple[str, ...]:
    texts = check.text_list(value, ("injection",), flags=INJECTION_FLAGS)
    # Grading runs them on RE2 (linear time): one it cannot run is an error at its own entry (one
    # Python cannot compile either was reported above).
    for position, item in enumerate(value if isinstance(value, list) else ()):
        if not isinstance(item, str) or not _compiles(item):
            continue
        try:
            compile_linear(item)
        except PatternError as exc:
            check.error(f"injection: pattern {item!r} cannot be used: {exc}", ("injection", position))
    return texts


def _compiles(pattern: str) -> bool:
    try:
        re.compile(pattern, INJECTION_FLAGS)
    except re.error:
        return False
    return True


_SECTION_READERS: dict[str, Callable[[_Checker, Any], Any]] = {
    "name": _name,
    "templates": _templates,
    "judge": _judge,
    "facets": _facets,
    "builtin": _builtin,
    "contradiction": _contradiction,
    "injection": _injection,
}
