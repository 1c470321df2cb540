"""Lint a battery: every error `load_battery` would raise and every warning, in one run.

Lint also compiles the scorer's templates and renders each once in the sandbox (with the first
question), so a template compiling would refuse (a syntax error, an attribute the sandbox refuses,
a file outside the scorer's folder) is an error here too.

Warnings (severity "warning") are things that load but are probably not what the author meant:
a rule without an id, a question without exemplars, an accepted variant equal to the gold answer,
an exemplar expected to fail that T1 would pass before the judge ever saw it, a section marker
of the scorer's `builtin:` settings that its templates do not contain (the builtin judge would
fail every answer), a judge backend that is a URL (a server only the battery names gets no
API key unless the user names it with `--judge`), and a trap that reads as the false claim itself
rather than the truth that exposes it (`trap_words.states_truth`).

An accepted variant that differs from the gold only in case is no warning: every grader compares
without case, so it is redundant but harmless, and imported data sets carry many.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from urllib.parse import urlsplit

import msgspec

from ..core.closed_match import read_answer
from ..core.errors import SpecError, TabenchError
from ..core.nodes import Pos, Question, Scorer
from ..core.tiers import DEFAULT_T1_RULE, rule_passes
from ..core.trap_words import carried_trap_words, states_truth, trap_words
from .battery import Loaded, read_battery
from .codes import code_of
from .manifest_lint import user_codes
from .yaml_io import position

#: The hint for an exemplar expected to fail that T1 would pass.
HINT_T1_PASSES = (
    "T1 would pass such answers without the judge; write `t1 off` in the question to send them to the judge"
)


#: The hint for a judge backend that is a URL.
HINT_URL_JUDGE = (
    "a battery cannot send your API key to a server it names; to trust this one, name it yourself: "
    "--judge URL"
)


class LintRun(msgspec.Struct):
    """What one lint found: its problems, and the warning codes to show only as a count (the
    manifest's `lint: count` and the user's)."""

    problems: list[SpecError]
    counted: frozenset[str] = frozenset()


def lint_battery(
    path: str | Path, *, allow_dirs: Iterable[str | Path] = (), ignore: Iterable[str] = ()
) -> list[SpecError]:
    """Every problem of the battery at `path`, errors and warnings, sorted by path, line and column;
    warnings of a code the manifest's `lint: ignore` or `ignore` names are left out.

    `allow_dirs` as for `battery.load_battery`. Raises `UsageError` only when there is no battery
    at `path` (or an allowed folder is not a folder).
    """
    return lint_run(path, allow_dirs=allow_dirs, ignore=ignore).problems


def lint_run(
    path: str | Path,
    *,
    allow_dirs: Iterable[str | Path] = (),
    ignore: Iterable[str] = (),
    count: Iterable[str] = (),
) -> LintRun:
    """`lint_battery`'s problems, with the codes to count (the manifest's `lint: count` and `count`).
    Raises `UsageError` when `ignore` or `count` names what is not a warning code."""
    ignore, count = user_codes(ignore), user_codes(count)
    loaded = read_battery(path, allow_dirs=allow_dirs)
    problems = _problems(loaded)
    off = loaded.lint.ignore | ignore
    kept = [p for p in problems if p.severity == "error" or code_of(p) not in off]
    return LintRun(kept, (loaded.lint.count | count) - off)


def _problems(loaded: Loaded) -> list[SpecError]:
    """Every error and warning of `loaded`, sorted by path, line and column."""
    problems = list(loaded.errors)
    if loaded.scorer is not None:
        problems.extend(_template_errors(loaded))
        problems.extend(_url_warnings(loaded))
    for rule in loaded.rules:
        if rule.id is None:
            problems.append(
                _warning(
                    "rule has no id",
                    rule.pos,
                    hint="write it as `S<n>: text` so reviews and results can name it",
                )
            )
    for question in loaded.questions:
        problems.extend(
            _question_warnings(question, t1=loaded.t1, t1_trap=loaded.t1_trap, t1_rule=loaded.t1_rule)
        )
    if loaded.battery is not None and not any(p.severity == "error" for p in problems):
        problems.extend(_marker_warnings(loaded.battery.scorer))
    problems.sort(key=lambda p: (p.path, p.line, p.col))
    return problems


def _question_warnings(
    question: Question, *, t1: bool, t1_trap: bool = True, t1_rule: str = DEFAULT_T1_RULE
) -> list[SpecError]:
    warnings = []
    if not question.exemplars:
        warnings.append(
            _warning(
                f"question '{question.id}' has no exemplars",
                question.pos,
                hint="graded examples (exemplar correct|partial|incorrect) show the judge where the line is",
            )
        )
    if question.trap is not None and not states_truth(question.trap):
        warnings.append(
            _warning(
                "the trap reads as the false claim itself, not the truth that exposes it",
                question.field_pos.get("trap", question.pos),
                hint='a trap states what is true, as a person would check an answer: "There is no '
                'Summarize stage.", not "The pipeline has a Summarize stage."',
            )
        )
    gold = question.gold.strip()
    for i, variant in enumerate(question.accept):
        if variant.strip() == gold:
            at = question.field_pos.get(f"accept.{i}", question.pos)
            warnings.append(
                _warning(
                    "accepted variant equals the gold answer",
                    at,
                    hint="remove it: the gold answer is always accepted",
                )
            )
    for exemplar in question.exemplars:
        if exemplar.expected == "fail" and t1_would_pass(
            question, exemplar.answer, t1=t1, t1_trap=t1_trap, t1_rule=t1_rule
        ):
            warnings.append(
                _warning(
                    f"T1 would pass this {exemplar.kind} exemplar, which expects fail",
                    exemplar.pos,
                    hint=HINT_T1_PASSES,
                )
            )
    warnings.extend(_match_warnings(question))
    return warnings


def t1_would_pass(
    question: Question, answer: str, *, t1: bool, t1_trap: bool = True, t1_rule: str = DEFAULT_T1_RULE
) -> bool:
    """True when T1 passes `answer` to `question` before the judge sees it (the battery's `t1` and
    the question's on, a key's tokens within the answer's, no trap word carried: such an answer goes
    to the judge). An exemplar expected to fail with such an answer is warning W104."""
    if not (t1 and question.t1):
        return False
    if not rule_passes(t1_rule, answer, gold=question.gold, accept=question.accept, prompt=question.prompt):
        return False
    if not t1_trap:
        return True
    trap = trap_words(question.trap, gold=question.gold, accept=question.accept, prompt=question.prompt)
    return not carried_trap_words(answer, frozenset(trap))


def _match_warnings(question: Question) -> list[SpecError]:
    """An exemplar the question's `match` check would decide against its expected verdict: the
    judge never sees such answers, so the exemplar shows it nothing true."""
    if question.match is None:
        return []
    found = []
    for exemplar in question.exemplars:
        verdict = read_answer(question.match, exemplar.answer).verdict
        if verdict is not None and verdict != exemplar.expected:
            found.append(
                _warning(
                    f"the match check would {verdict} this {exemplar.kind} exemplar, which expects "
                    f"{exemplar.expected}",
                    exemplar.pos,
                    hint="fix the check (its value, `within`, `decides`) or the exemplar's `expect`",
                )
            )
    return found


#: The templates each builtin-judge marker must appear in.
_MARKER_TEMPLATES = (
    ("question_start", "system"),
    ("question_end", "system"),
    ("answer_start", "user"),
    ("answer_start", "stern"),
)


def _template_errors(loaded: Loaded) -> list[SpecError]:
    """The problems compiling would meet in the scorer's templates (render.template_problems); one
    that has no line of its own (a missing template, one outside the scorer's folder) is reported
    at the scorer.yaml line that names the template, else at its first line."""
    from .render import policies_text, template_problems

    scorer = loaded.scorer
    assert scorer is not None
    question = (
        loaded.questions[0]
        if loaded.questions
        else Question(
            id="q", prompt="prompt", gold="gold", pos=Pos(str(Path(scorer.path) / "scorer.yaml"), 1, 1)
        )
    )
    errors = []
    for part, problem in template_problems(scorer, policies_text(loaded.rules), question):
        if isinstance(problem, SpecError):
            errors.append(problem)
        else:
            at = _settings_pos(scorer, "templates", part)
            errors.append(SpecError(str(problem), path=at.path, line=at.line, col=at.col))
    return errors


def _url_warnings(loaded: Loaded) -> list[SpecError]:
    """A warning for a judge backend (the manifest's, else the scorer's) that is an http(s) URL."""
    scorer = loaded.scorer
    assert scorer is not None
    backend, at = None, None
    if loaded.judge is not None and loaded.judge.backend is not None:
        backend, at = loaded.judge.backend, loaded.judge_pos.get("backend")
    else:
        value = scorer.settings.judge.backend
        if value is not None:
            backend, at = value, _settings_pos(scorer, "judge", "backend")
    found = []
    if backend is not None and at is not None and urlsplit(backend).scheme.lower() in ("http", "https"):
        found.append(
            _warning(
                f"judge backend '{backend}' is a URL: it gets no API key unless you pass it with --judge",
                at,
                hint=HINT_URL_JUDGE,
            )
        )
    panel_at = loaded.judge_pos.get("panel")
    members = loaded.judge.panel if loaded.judge is not None else ()
    for member in members:
        if panel_at is not None and urlsplit(member.backend).scheme.lower() in ("http", "https"):
            found.append(
                _warning(
                    f"judge panel backend '{member.backend}' is a URL: grade refuses it unless you pass it "
                    "with --judge",
                    panel_at,
                    hint=HINT_URL_JUDGE,
                )
            )
    return found


def _settings_pos(scorer: Scorer, *keys: str) -> Pos:
    """Where the value of `keys` (a path of mapping keys) is written in the scorer's settings file;
    the deepest key found when the path stops early."""
    return position(Path(scorer.path) / "scorer.yaml", keys)


def _marker_warnings(scorer: Scorer) -> list[SpecError]:
    """A warning for each builtin-judge marker (the scorer's `builtin:` section, else tabench-1.1's)
    missing from the template it is looked for in; at its key in scorer.yaml."""
    from .render import template_source

    folder = Path(scorer.path)
    settings = scorer.settings
    warnings = []
    for key, part in _MARKER_TEMPLATES:
        name = getattr(settings.templates, part)
        try:
            text = template_source(scorer, part)
        except (OSError, TabenchError):
            continue  # compiling reports a missing or unreadable template
        marker = getattr(settings.builtin, key)
        if marker in text:
            continue
        warnings.append(
            _warning(
                f"builtin {key} marker {marker!r} is not in {name}",
                position(folder / "scorer.yaml", ("builtin", key), at_key=True),
                hint="the builtin judge finds the question and the answer by these lines; "
                "set them in scorer.yaml's builtin: section",
            )
        )
    return warnings


def _warning(message: str, at: Pos, *, hint: str | None = None) -> SpecError:
    return SpecError(message, path=at.path, line=at.line, col=at.col, hint=hint, severity="warning")
