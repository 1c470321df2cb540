"""Lint a battery: every error `load_battery` would raise and every warning, in one run.

Warnings (severity "warning") are things that load but are probably not what the author meant:
a rule without an id, a question without exemplars, an accepted variant equal to the gold answer,
an exemplar expected to fail that T1 would pass before the judge ever saw it, and a section marker
of the scorer's `builtin:` settings that its templates do not contain (the builtin judge would
fail every answer).
"""

from __future__ import annotations

from pathlib import Path

from ..core.errors import SpecError
from ..core.nodes import Pos, Question, Scorer
from ..core.tiers import t1_passes
from .battery import read_battery
from .yaml_io import position

#: The hint for an exemplar expected to fail that T1 would pass.
HINT_T1_PASSES = (
    "T1 would pass such answers without the judge; write `t1 off` in the question to send them to the judge"
)


def lint_battery(path: str | Path) -> list[SpecError]:
    """Every problem of the battery at `path`, errors and warnings, sorted by path, line and column.

    Raises `UsageError` only when there is no battery at `path`.
    """
    loaded = read_battery(path)
    problems = list(loaded.errors)
    for rule in loaded.rules:
        if rule.id is None:
            problems.append(_warning(
                "rule has no id", rule.pos, hint="write it as `S<n>: text` so reviews and results can name it"
            ))
    for question in loaded.questions:
        problems.extend(_question_warnings(question, t1=loaded.t1))
    if loaded.battery is not None:
        problems.extend(_marker_warnings(loaded.battery.scorer))
    problems.sort(key=lambda p: (p.path, p.line, p.col))
    return problems


def _question_warnings(question: Question, *, t1: bool) -> list[SpecError]:
    warnings = []
    if not question.exemplars:
        warnings.append(_warning(
            f"question '{question.id}' has no exemplars", question.pos,
            hint="graded examples (exemplar correct|partial|incorrect) show the judge where the line is",
        ))
    gold = question.gold.strip().casefold()
    for i, variant in enumerate(question.accept):
        if variant.strip().casefold() == gold:
            at = question.field_pos.get(f"accept.{i}", question.pos)
            warnings.append(_warning(
                "accepted variant equals the gold answer", at,
                hint="remove it: the gold answer is always accepted",
            ))
    if t1 and question.t1:
        keys = [question.gold, *question.accept]
        for exemplar in question.exemplars:
            if exemplar.expected == "fail" and t1_passes(exemplar.answer, keys):
                warnings.append(_warning(
                    f"T1 would pass this {exemplar.kind} exemplar, which expects fail", exemplar.pos,
                    hint=HINT_T1_PASSES,
                ))
    return warnings


#: The templates each builtin-judge marker must appear in.
_MARKER_TEMPLATES = (("question_start", "system"), ("question_end", "system"), ("answer_start", "user"),
                     ("answer_start", "stern"))


def _marker_warnings(scorer: Scorer) -> list[SpecError]:
    """A warning for each builtin-judge marker (the scorer's `builtin:` section, else tabench-1.1's)
    missing from the template it is looked for in; at its key in scorer.yaml."""
    folder = Path(scorer.path)
    settings = scorer.settings
    warnings = []
    for key, part in _MARKER_TEMPLATES:
        name = getattr(settings.templates, part)
        try:
            text = (folder / name).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue  # compiling reports a missing or unreadable template
        marker = getattr(settings.builtin, key)
        if marker in text:
            continue
        warnings.append(_warning(
            f"builtin {key} marker {marker!r} is not in {name}",
            position(folder / "scorer.yaml", ("builtin", key), at_key=True),
            hint="the builtin judge finds the question and the answer by these lines; "
            "set them in scorer.yaml's builtin: section",
        ))
    return warnings


def _warning(message: str, at: Pos, *, hint: str | None = None) -> SpecError:
    return SpecError(message, path=at.path, line=at.line, col=at.col, hint=hint, severity="warning")
