"""Battery -> the exact judge prompts (SPEC section 3).

Each scorer folder gets one Jinja2 environment (`StrictUndefined`, no autoescaping, the template's
own last line break dropped) whose compiled templates are cached for the process. Field text is
data: it reaches a template only as the value of a variable, so `{{ x }}` or `{% if %}` written in a
gold answer is printed as written and never evaluated.

The system template sees five values, the first four of them the holes of the seed prompt:

    policies        the S-rules as written, joined by "\\n" ("" when there are none)
    question_json   the question object, `json.dumps(indent=1, ensure_ascii=False, sort_keys=True)`
    facet_guide     the `guide` text, else `name: text` per facet line joined by "\\n", else ""
    exemplars_json  `json.dumps(indent=1, ensure_ascii=False)` of {"kind", "answer", "why"} objects
    question        the `nodes.Question` itself, for scorer versions that want more than the holes

The user and stern templates see `answer`. `compile_battery` renders them once around a sentinel
and keeps the text on either side as a `compiled.Frame`, so the runtime fills in an answer with
two string joins and never imports Jinja2.
"""

from __future__ import annotations

import hashlib
import json
from functools import cache
from pathlib import Path
from typing import Any

import jinja2

from .compiled import CompiledBattery, CompiledQuestion, Frame
from .errors import TabenchError
from .nodes import Battery, JudgeDefaults, Question, Rule, Scorer

#: Template file names used when a scorer's YAML has no `templates:` mapping.
DEFAULT_TEMPLATES: dict[str, str] = {"system": "system.j2", "user": "user.j2", "stern": "stern.j2"}

#: The answer text the seed prompt shows in the USER and STERN holes.
ANSWER_PLACEHOLDER = "{{candidate answer}}"

# Stands in for the answer while a Frame is cut; no real template or answer contains it.
_SENTINEL = "\x00tabench:answer-hole:5f0c2a91\x00"


class TemplateError(TabenchError):
    """A scorer template is missing, does not compile, or uses a value it is not given."""


@cache
def _environment(scorer_path: str) -> jinja2.Environment:
    # auto_reload=False: a template is compiled once per process and never stat()ed again.
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(scorer_path, encoding="utf-8"),
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
        raise TemplateError(f"{Path(scorer_path) / name}:{exc.lineno}: {exc.message}") from exc


def scorer_template(scorer: Scorer, part: str) -> jinja2.Template:
    """The compiled template of `part` ("system", "user" or "stern") of `scorer`."""
    names = scorer.settings.get("templates") if isinstance(scorer.settings, dict) else None
    name = (names or {}).get(part) or DEFAULT_TEMPLATES[part]
    return _template(str(scorer.path), name)


def _render(template: jinja2.Template, values: dict[str, Any]) -> str:
    try:
        return template.render(values)
    except jinja2.UndefinedError as exc:
        raise TemplateError(f"{template.filename}: {exc.message}") from exc


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
    """The question hole: the question object as indented JSON with sorted keys."""
    return json.dumps(question_object(question), indent=1, ensure_ascii=False, sort_keys=True)


def facet_guide(question: Question) -> str:
    """The facet guide hole: the `guide` text, else `name: text` per facet line, else ""."""
    if question.guide:
        return question.guide
    return "\n".join(f"{facet.name}: {facet.text}" for facet in question.facets)


def exemplars_json(question: Question) -> str:
    """The exemplars hole: {"kind", "answer", "why"} objects in written order, as indented JSON."""
    items = [{"kind": ex.kind, "answer": ex.answer, "why": ex.why} for ex in question.exemplars]
    return json.dumps(items, indent=1, ensure_ascii=False)


def _system(template: jinja2.Template, policies: str, question: Question) -> str:
    return _render(
        template,
        {
            "policies": policies,
            "question_json": question_json(question),
            "facet_guide": facet_guide(question),
            "exemplars_json": exemplars_json(question),
            "question": question,
        },
    )


def render_system(battery: Battery, question: Question) -> str:
    """The exact SYSTEM prompt of `question` under the battery's scorer."""
    return _system(scorer_template(battery.scorer, "system"), policies_text(battery.policies), question)


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
    template = scorer_template(battery.scorer, "system")
    policies = policies_text(battery.policies)
    questions: dict[str, CompiledQuestion] = {}
    for q in battery.questions:
        system = _system(template, policies, q)
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
