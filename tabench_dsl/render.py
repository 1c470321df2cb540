"""Battery -> the exact judge prompts (SPEC section 3).

Each scorer folder gets one Jinja2 environment (`StrictUndefined`, no autoescaping, the template's
own last line break dropped) whose compiled templates are cached for the process. Field text is
data: it reaches a template only as the value of a variable, so `{{ x }}` or `{% if %}` written in a
gold answer is printed as written and never evaluated.

Templates are data too: a scorer comes with a battery someone else wrote. They render in Jinja2's
immutable sandbox, so no template reaches Python internals (`cycler.__init__.__globals__`) or
changes a value it is given; a template that names such an attribute is refused when it is
compiled, a `SpecError` at its line and column, before anything renders; one that reaches it by a
computed name fails in the sandbox, the same error at its line. Templates are read from their
scorer's folder only (symlinks followed must stay inside it), as `spec_files` reads any spec file.

The system template sees five values, the first four of them the holes of the seed prompt:

    policies        the S-rules as written, joined by "\\n" ("" when there are none)
    question_json   the question object, `json.dumps(indent=1, ensure_ascii=False, sort_keys=True)`
    facet_guide     the `guide` text, else `name: text` per facet line joined by "\\n", else ""
    exemplars_json  `json.dumps(indent=1, ensure_ascii=False)` of {"kind", "answer", "why"} objects
    question        the `nodes.Question` itself, for scorer versions that want more than the holes

A system template that is only text around bare `{{ hole }}`s (the shipped ones are) is rendered
once with markers and cut into pieces; each question's prompt is then those pieces joined around
its hole values: exactly what rendering gives, about ten times cheaper. A template with any
logic is rendered per question.

The user and stern templates see `answer`. `compile_battery` renders them once around a sentinel
and keeps the text on either side as a `compiled.Frame`, so the runtime fills in an answer with
two string joins and never imports Jinja2.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Iterator
from functools import cache
from json.encoder import encode_basestring as _json_string  # json.dumps' own, in C
from pathlib import Path
from typing import Any

import jinja2
import jinja2.nodes
from jinja2.exceptions import SecurityError
from jinja2.loaders import split_template_path
from jinja2.sandbox import (
    UNSAFE_ASYNC_GENERATOR_ATTRIBUTES,
    UNSAFE_COROUTINE_ATTRIBUTES,
    UNSAFE_GENERATOR_ATTRIBUTES,
    ImmutableSandboxedEnvironment,
)

from .compiled import CompiledBattery, CompiledQuestion, Frame
from .errors import SpecError, UsageError
from .nodes import Battery, JudgeDefaults, Pos, Question, Rule, Scorer
from .spec_files import Refused, is_inside, read_spec_text

#: Template file names used when a scorer's YAML has no `templates:` mapping.
DEFAULT_TEMPLATES: dict[str, str] = {"system": "system.j2", "user": "user.j2", "stern": "stern.j2"}

#: The answer text the seed prompt shows in the USER and STERN holes.
ANSWER_PLACEHOLDER = "{{candidate answer}}"

# Stands in for the answer while a Frame is cut; no real template or answer contains it.
_SENTINEL = "\x00tabench:answer-hole:5f0c2a91\x00"


class TemplateError(UsageError):
    """A scorer template is missing or uses a value it is not given (exit status 2, like a bad spec).

    A template that does not compile is a `SpecError` at its file and line.
    """


#: Attributes the sandbox refuses on the objects that have them, beside every name starting with "_".
INTERNAL_ATTRIBUTES: frozenset[str] = frozenset({
    "mro", *UNSAFE_GENERATOR_ATTRIBUTES, *UNSAFE_COROUTINE_ATTRIBUTES, *UNSAFE_ASYNC_GENERATOR_ATTRIBUTES,
})

#: The hint of an unsafe template.
HINT_UNSAFE = (
    "scorer templates render in a sandbox: they use the values they are given, never an attribute "
    "that starts with '_' or reaches Python's internals"
)


class _ScorerLoader(jinja2.BaseLoader):
    """A scorer's templates, read from its own folder only: a name with `..` is not found, a
    template whose real path (symlinks followed) leaves the folder is refused, and the file is
    read as `spec_files` reads every spec file (regular, bounded, UTF-8, byte order mark dropped)."""

    def __init__(self, folder: str) -> None:
        self.folder = os.path.realpath(folder)

    def get_source(
        self, environment: jinja2.Environment, template: str
    ) -> tuple[str, str, Callable[[], bool]]:
        path = os.path.join(self.folder, *split_template_path(template))
        if not os.path.lexists(path):
            raise jinja2.TemplateNotFound(template)
        if not is_inside(path, (Path(self.folder),)):
            raise TemplateError(f"scorer template {path} is outside the scorer folder")
        try:
            source = read_spec_text(path, "scorer template")
        except Refused as exc:
            raise TemplateError(f"scorer template {path} {exc.reason}") from None
        except FileNotFoundError:
            raise jinja2.TemplateNotFound(template) from None
        return source, path, lambda: True  # auto_reload is off: never asked


class _ScorerEnvironment(ImmutableSandboxedEnvironment):
    """Jinja2's immutable sandbox that also refuses, as it compiles a template, any attribute the
    sandbox would refuse when rendering it: the error comes before anything renders, at its line."""

    def compile(self, source, name=None, filename=None, raw=False, defer_init=False):  # type: ignore[override]
        if isinstance(source, str):
            tree = self.parse(source, name, filename)
            _refuse_unsafe(tree, source, filename or name or "<template>")
            source = tree
        return super().compile(source, name, filename, raw, defer_init)


def _unsafe_attributes(tree: jinja2.nodes.Template) -> Iterator[tuple[str, int]]:
    """(attribute, line) of every attribute the template names that the sandbox would refuse:
    `x.attr`, `x["attr"]` and `x|attr("attr")` with a written name."""
    for node in tree.find_all((jinja2.nodes.Getattr, jinja2.nodes.Getitem, jinja2.nodes.Filter)):
        if isinstance(node, jinja2.nodes.Getattr):
            name = node.attr
        elif isinstance(node, jinja2.nodes.Getitem):
            name = node.arg.value if isinstance(node.arg, jinja2.nodes.Const) else None
        else:
            name = node.args[0].value if node.name == "attr" and node.args and isinstance(
                node.args[0], jinja2.nodes.Const) else None
        if isinstance(name, str) and (name.startswith("_") or name in INTERNAL_ATTRIBUTES):
            yield name, node.lineno


def _refuse_unsafe(tree: jinja2.nodes.Template, source: str, path: str) -> None:
    """Raise a SpecError at the first attribute (by line and column) the sandbox would refuse."""
    lines = source.split("\n")
    found = []
    for name, line in _unsafe_attributes(tree):
        text = lines[line - 1] if 0 < line <= len(lines) else ""
        found.append((line, _column(text, name), name, text))
    if not found:
        return
    line, col, name, text = min(found)
    raise SpecError(
        f"unsafe template: attribute '{name}' is not available to templates",
        path=path, line=line, col=col, source_line=text, hint=HINT_UNSAFE,
    )


def _column(text: str, name: str) -> int:
    """The column of attribute `name` in the line `text`: after its dot, inside its quotes, else 1."""
    for needle in (f".{name}", f"'{name}'", f'"{name}"'):
        at = text.find(needle)
        if at >= 0:
            return at + 2
    at = text.find(name)
    return at + 1 if at >= 0 else 1


@cache
def _environment(scorer_path: str) -> jinja2.Environment:
    # auto_reload=False: a template is compiled once per process and never stat()ed again.
    return _ScorerEnvironment(
        loader=_ScorerLoader(scorer_path),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=False,
        auto_reload=False,
    )


@cache
def _template(scorer_path: str, name: str) -> jinja2.Template:
    try:
        return _environment(scorer_path).get_template(name)
    except jinja2.TemplateNotFound as exc:
        raise TemplateError(f"scorer template not found: {Path(scorer_path) / name}") from exc
    except jinja2.TemplateSyntaxError as exc:
        raise SpecError(
            f"scorer template: {exc.message}", path=exc.filename or Path(scorer_path) / name,
            line=exc.lineno, col=1,
        ) from None


def _template_name(scorer: Scorer, part: str) -> str:
    names = scorer.settings.get("templates") if isinstance(scorer.settings, dict) else None
    return (names if isinstance(names, dict) else {}).get(part) or DEFAULT_TEMPLATES[part]


def scorer_template(scorer: Scorer, part: str) -> jinja2.Template:
    """The compiled template of `part` ("system", "user" or "stern") of `scorer`."""
    return _template(str(scorer.path), _template_name(scorer, part))


def _render(template: jinja2.Template, values: dict[str, Any]) -> str:
    try:
        return template.render(values)
    except SecurityError as exc:
        raise _failure(template, exc, "unsafe template: " + str(exc).rstrip("."), hint=HINT_UNSAFE) from None
    except jinja2.UndefinedError as exc:
        raise TemplateError(f"{template.filename}: {exc.message}") from exc
    except (SpecError, TemplateError):
        raise
    except Exception as exc:  # whatever a template written by someone else can raise: never a traceback
        raise _failure(template, exc, f"template failed: {type(exc).__name__}: {exc}") from None


def _failure(
    template: jinja2.Template, exc: Exception, message: str, *, hint: str | None = None
) -> SpecError:
    """`message` as a SpecError at the template line that raised `exc` (Jinja2 rewrites a rendering
    traceback so its frames name the template files and lines)."""
    at = Pos(str(template.filename), 1, 1)
    loader = template.environment.loader
    folder = (loader.folder if isinstance(loader, _ScorerLoader) else os.path.dirname(at.path)) + os.sep
    tb = exc.__traceback__
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if filename.startswith(folder):
            at = Pos(filename, tb.tb_lineno, 1)
        tb = tb.tb_next
    error = SpecError(message, path=at.path, line=at.line, col=1, hint=hint)
    attribute = re.search(r"attribute '([^']*)'", str(exc)) if isinstance(exc, SecurityError) else None
    if attribute is not None:
        error.col = _column(error.source_line or "", attribute.group(1))
    return error


def policies_text(rules: tuple[Rule, ...] | list[Rule]) -> str:
    """The policies hole: every S-rule as written, in order, one per line."""
    return "\n".join(rule.text for rule in rules)


def question_object(question: Question) -> dict[str, Any]:
    """The question object of the prompt: prompt and gold, and the optional fields that are given."""
    obj: dict[str, Any] = {"question": question.prompt, "answer_gold": question.gold}
    if question.accept:
        obj["accepted_variants"] = list(question.accept)
    if question.trap:
        obj["honesty_trap"] = question.trap
    if question.structure:
        obj["output_structure"] = question.structure
    if question.scoring:
        obj["scoring"] = question.scoring
    return obj


def question_json(question: Question) -> str:
    """The question hole: the question object as indented JSON with sorted keys.

    Equal to `json.dumps(question_object(q), indent=1, ensure_ascii=False, sort_keys=True)`, written
    out with the string encoder json.dumps itself uses: json's indenting encoder is pure Python and
    was the larger part of compiling a battery.
    """
    enc = _json_string
    parts = []
    if question.accept:
        parts.append(' "accepted_variants": [\n  ' + ",\n  ".join(map(enc, question.accept)) + "\n ]")
    parts.append(' "answer_gold": ' + enc(question.gold))
    if question.trap:
        parts.append(' "honesty_trap": ' + enc(question.trap))
    if question.structure:
        parts.append(' "output_structure": ' + enc(question.structure))
    parts.append(' "question": ' + enc(question.prompt))
    if question.scoring:
        parts.append(' "scoring": ' + enc(question.scoring))
    return "{\n" + ",\n".join(parts) + "\n}"


def facet_guide(question: Question) -> str:
    """The facet guide hole: the `guide` text, else `name: text` per facet line, else ""."""
    if question.guide:
        return question.guide
    return "\n".join(f"{facet.name}: {facet.text}" for facet in question.facets)


def exemplars_json(question: Question) -> str:
    """The exemplars hole: {"kind", "answer", "why"} objects in written order, as indented JSON.

    Equal to `json.dumps([...], indent=1, ensure_ascii=False)` of those objects ("[]" when none).
    """
    if not question.exemplars:
        return "[]"
    enc = _json_string
    items = [
        f' {{\n  "kind": {enc(ex.kind)},\n  "answer": {enc(ex.answer)},\n  "why": {enc(ex.why)}\n }}'
        for ex in question.exemplars
    ]
    return "[\n" + ",\n".join(items) + "\n]"


#: The string holes a system template is given, in the seed's order.
SYSTEM_HOLES: tuple[str, ...] = ("policies", "question_json", "facet_guide", "exemplars_json")

# A system template cut into its text pieces and the names of the holes between them.
_Joins = tuple[tuple[str, ...], tuple[str, ...]]


@cache
def _system_joins(scorer_path: str, name: str) -> _Joins | None:
    """For a template that is only text and bare `{{ hole }}`s: its text pieces and hole names.

    Such a template renders to its pieces joined around `str(value)` of each hole, so filling it
    by string joins is exactly rendering it, at a fraction of the cost. Any other construct (a
    filter, an `if`, a loop, `question.id`, an include) returns None: the template is rendered.
    """
    env = _environment(scorer_path)
    template = _template(scorer_path, name)
    assert env.loader is not None
    source = env.loader.get_source(env, name)[0]
    holes: list[str] = []
    for node in env.parse(source).body:
        if not isinstance(node, jinja2.nodes.Output):
            return None
        for child in node.nodes:
            if isinstance(child, jinja2.nodes.TemplateData):
                continue
            if isinstance(child, jinja2.nodes.Name) and child.ctx == "load" and child.name in SYSTEM_HOLES:
                holes.append(child.name)
                continue
            return None
    # Cut the real rendering (not the source) so the pieces are whatever Jinja itself outputs.
    marks = {hole: f"\x00tabench:{hole}:5f0c2a91\x00" for hole in SYSTEM_HOLES}
    text = _render(template, {**marks, "question": None})
    pattern = re.compile("|".join(map(re.escape, marks.values())))
    if [m.group() for m in pattern.finditer(text)] != [marks[h] for h in holes]:
        return None
    return tuple(pattern.split(text)), tuple(holes)


def _system_filler(scorer: Scorer) -> Callable[[str, Question], str]:
    """A function (policies text, question) -> the exact SYSTEM prompt under `scorer`."""
    name = _template_name(scorer, "system")
    template = _template(str(scorer.path), name)
    joins = _system_joins(str(scorer.path), name)

    def values(policies: str, question: Question) -> dict[str, Any]:
        return {
            "policies": policies,
            "question_json": question_json(question),
            "facet_guide": facet_guide(question),
            "exemplars_json": exemplars_json(question),
        }

    if joins is None:
        return lambda policies, question: _render(
            template, {**values(policies, question), "question": question}
        )
    pieces, holes = joins

    def fill(policies: str, question: Question) -> str:
        filled = values(policies, question)
        out = [pieces[0]]
        for hole, piece in zip(holes, pieces[1:], strict=True):
            out.append(filled[hole])
            out.append(piece)
        return "".join(out)

    return fill


def render_system(battery: Battery, question: Question) -> str:
    """The exact SYSTEM prompt of `question` under the battery's scorer."""
    return _system_filler(battery.scorer)(policies_text(battery.policies), question)


def render_user(scorer: Scorer, answer: str) -> str:
    """The exact USER prompt that carries `answer`."""
    return _render(scorer_template(scorer, "user"), {"answer": answer})


def render_stern(scorer: Scorer, answer: str) -> str:
    """The exact stern-retry USER prompt that carries `answer`."""
    return _render(scorer_template(scorer, "stern"), {"answer": answer})


def answer_frame(scorer: Scorer, part: str) -> Frame:
    """The `part` ("user" or "stern") template cut around its answer hole.

    `frame.fill(answer)` equals rendering the template with that answer, for any answer.
    """
    text = _render(scorer_template(scorer, part), {"answer": _SENTINEL})
    if text.count(_SENTINEL) != 1:
        raise TemplateError(
            f"scorer {scorer.name}: the {part} template must show {{{{ answer }}}} exactly once"
        )
    prefix, suffix = text.split(_SENTINEL)
    return Frame(prefix=prefix, suffix=suffix)


def template_source(scorer: Scorer, part: str) -> str:
    """The text of the `part` template of `scorer`, read as compiling reads it (inside the scorer's
    folder, a regular file of bounded size). Raises `TemplateError` or `SpecError` as compiling does."""
    env = _environment(str(scorer.path))
    assert env.loader is not None
    try:
        return env.loader.get_source(env, _template_name(scorer, part))[0]
    except jinja2.TemplateNotFound as exc:
        raise TemplateError(f"scorer template not found: {Path(scorer.path) / exc.name}") from None


def template_problems(
    scorer: Scorer, policies: str, question: Question
) -> list[tuple[str, SpecError | TemplateError]]:
    """What compiling would meet in each template of `scorer`, for lint, as (part, problem): each
    part compiled (syntax, attributes the sandbox refuses) and rendered once in the sandbox, the
    system template with `policies` and `question`. One problem per part at most; a problem two
    parts share (a template both name), once."""
    checks: dict[str, Callable[[], object]] = {
        "system": lambda: _system_filler(scorer)(policies, question),
        "user": lambda: answer_frame(scorer, "user"),
        "stern": lambda: answer_frame(scorer, "stern"),
    }
    problems: dict[str, tuple[str, SpecError | TemplateError]] = {}
    for part, check in checks.items():
        try:
            check()
        except (SpecError, TemplateError) as exc:
            problems.setdefault(str(exc), (part, exc))
    return list(problems.values())


def sha256_hex(text: str) -> str:
    """The hex sha256 of `text` encoded as UTF-8: the prompt hash of records and the lock file."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _judge_defaults(battery: Battery) -> JudgeDefaults:
    # The manifest's `judge:` wins; the scorer's YAML `judge:` fills what the manifest leaves out.
    scorer_judge = battery.scorer.settings.get("judge") if isinstance(battery.scorer.settings, dict) else None
    if not isinstance(scorer_judge, dict):
        return battery.judge
    judge = battery.judge
    temperature = judge.temperature if judge.temperature is not None else scorer_judge.get("temperature")
    max_tokens = judge.max_tokens if judge.max_tokens is not None else scorer_judge.get("max_tokens")
    return JudgeDefaults(
        model=judge.model if judge.model is not None else scorer_judge.get("model"),
        temperature=float(temperature) if temperature is not None else None,
        max_tokens=int(max_tokens) if max_tokens is not None else None,
        backend=judge.backend if judge.backend is not None else scorer_judge.get("backend"),
    )


def compile_battery(battery: Battery) -> CompiledBattery:
    """Every prompt of `battery`: one exact SYSTEM (and its sha256) per question, USER and STERN frames.

    `settings` is the scorer's YAML as parsed; `judge` is the manifest's `judge:` with the scorer's
    `judge:` values filling the keys the manifest leaves out. A question's `t1` is the effective
    value (the battery's and the question's switch both on).
    """
    system_of = _system_filler(battery.scorer)
    policies = policies_text(battery.policies)
    questions: dict[str, CompiledQuestion] = {}
    for q in battery.questions:
        system = system_of(policies, q)
        questions[q.id] = CompiledQuestion(
            id=q.id,
            system=system,
            sha256=sha256_hex(system),
            gold=q.gold,
            accept=tuple(q.accept),
            t1=battery.t1 and q.t1,
            exemplars=tuple(q.exemplars),
        )
    return CompiledBattery(
        name=battery.name,
        scorer=battery.scorer.name,
        questions=questions,
        user=answer_frame(battery.scorer, "user"),
        stern=answer_frame(battery.scorer, "stern"),
        settings=battery.scorer.settings,
        t1=battery.t1,
        judge=_judge_defaults(battery),
    )
