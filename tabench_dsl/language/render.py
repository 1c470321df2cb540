"""Battery -> the exact judge prompts (docs/language.md section 7).

Field text is data: it reaches a template only as the value of a variable, so `{{ x }}` or
`{% if %}` written in a gold answer is printed as written and never evaluated. Templates are data
too (a scorer comes with a battery someone else wrote): `scorer_templates` loads them from the
scorer's own folder and renders them in Jinja2's immutable sandbox, one environment per scorer
folder, compiled templates cached for the process.

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
import re
from collections.abc import Callable, Iterator, Mapping
from functools import cache
from json.encoder import encode_basestring as _json_string  # json.dumps' own, in C
from pathlib import Path
from typing import Any

import jinja2
import jinja2.nodes
import msgspec

from ..core.compiled import CompiledBattery, CompiledQuestion, Frame
from ..core.errors import SpecError
from ..core.nodes import Battery, JudgeDefaults, Question, Rule, Scorer
from ..core.trap_words import trap_words
from .scorer_templates import TemplateError as TemplateError  # raised here too; callers import it here
from .scorer_templates import load_template, render_template, scorer_environment

#: The answer text the seed prompt shows in the USER and STERN holes.
ANSWER_PLACEHOLDER = "{{candidate answer}}"

# Stands in for the answer while a Frame is cut; no real template or answer contains it.
_SENTINEL = "\x00tabench:answer-hole:5f0c2a91\x00"


def _template_name(scorer: Scorer, part: str) -> str:
    return getattr(scorer.settings.templates, part)


def scorer_template(scorer: Scorer, part: str) -> jinja2.Template:
    """The compiled template of `part` ("system", "user" or "stern") of `scorer`."""
    return load_template(str(scorer.path), _template_name(scorer, part))


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
    Held-out exemplars (`Exemplar.holdout`) are left out: the judge is never shown them.
    """
    shown = [ex for ex in question.exemplars if not ex.holdout]
    if not shown:
        return "[]"
    enc = _json_string
    items = [
        f' {{\n  "kind": {enc(ex.kind)},\n  "answer": {enc(ex.answer)},\n  "why": {enc(ex.why)}\n }}'
        for ex in shown
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
    env = scorer_environment(scorer_path)
    template = load_template(scorer_path, name)
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
    text = render_template(template, {**marks, "question": None})
    pattern = re.compile("|".join(map(re.escape, marks.values())))
    if [m.group() for m in pattern.finditer(text)] != [marks[h] for h in holes]:
        return None
    return tuple(pattern.split(text)), tuple(holes)


def _system_filler(scorer: Scorer) -> Callable[[str, Question], str]:
    """A function (policies text, question) -> the exact SYSTEM prompt under `scorer`."""
    name = _template_name(scorer, "system")
    template = load_template(str(scorer.path), name)
    joins = _system_joins(str(scorer.path), name)

    def values(policies: str, question: Question) -> dict[str, Any]:
        return {
            "policies": policies,
            "question_json": question_json(question),
            "facet_guide": facet_guide(question),
            "exemplars_json": exemplars_json(question),
        }

    if joins is None:
        return lambda policies, question: render_template(
            template, {**values(policies, question), "question": without_holdouts(question)}
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


def without_holdouts(question: Question) -> Question:
    """The question as a template sees it: its held-out exemplars removed, so no scorer can render
    the answer key calibration measures the judge on."""
    if not any(ex.holdout for ex in question.exemplars):
        return question
    return msgspec.structs.replace(
        question, exemplars=tuple(ex for ex in question.exemplars if not ex.holdout)
    )


def render_system(battery: Battery, question: Question) -> str:
    """The exact SYSTEM prompt of `question` under the battery's scorer."""
    return _system_filler(battery.scorer)(policies_text(battery.policies), question)


def render_user(scorer: Scorer, answer: str) -> str:
    """The exact USER prompt that carries `answer`."""
    return render_template(scorer_template(scorer, "user"), {"answer": answer})


def render_stern(scorer: Scorer, answer: str) -> str:
    """The exact stern-retry USER prompt that carries `answer`."""
    return render_template(scorer_template(scorer, "stern"), {"answer": answer})


def answer_frame(scorer: Scorer, part: str) -> Frame:
    """The `part` ("user" or "stern") template cut around its answer hole.

    `frame.fill(answer)` equals rendering the template with that answer, for any answer.
    """
    text = render_template(scorer_template(scorer, part), {"answer": _SENTINEL})
    if text.count(_SENTINEL) != 1:
        raise TemplateError(
            f"scorer {scorer.name}: the {part} template must show {{{{ answer }}}} exactly once"
        )
    prefix, suffix = text.split(_SENTINEL)
    return Frame(prefix=prefix, suffix=suffix)


def template_source(scorer: Scorer, part: str) -> str:
    """The text of the `part` template of `scorer`, read as compiling reads it (inside the scorer's
    folder, a regular file of bounded size). Raises `TemplateError` or `SpecError` as compiling does."""
    env = scorer_environment(str(scorer.path))
    assert env.loader is not None
    try:
        return env.loader.get_source(env, _template_name(scorer, part))[0]
    except jinja2.TemplateNotFound as exc:
        raise TemplateError(f"scorer template not found: {Path(scorer.path) / str(exc.name)}") from None


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
    # The manifest's `judge:` wins; the scorer's `judge:` fills what the manifest leaves out.
    judge, scorer = battery.judge, battery.scorer.settings.judge
    return JudgeDefaults(
        model=judge.model if judge.model is not None else scorer.model,
        temperature=judge.temperature if judge.temperature is not None else scorer.temperature,
        max_tokens=judge.max_tokens if judge.max_tokens is not None else scorer.max_tokens,
        backend=judge.backend if judge.backend is not None else scorer.backend,
        price=judge.price,  # a price is the battery user's bill, never a scorer setting
        panel=judge.panel,
        rule=judge.rule,
        prompt_cache=judge.prompt_cache,
    )


def compile_battery(battery: Battery) -> CompiledBattery:
    """Every prompt of `battery`: one exact SYSTEM (and its sha256) per question, USER and STERN frames.

    `settings` are the scorer's checked settings; `judge` is the manifest's `judge:` with the scorer's
    `judge:` values filling the keys the manifest leaves out. A question's `t1` is the effective
    value (the battery's and the question's switch both on).
    """
    return compiled_frame(battery, {q.id: q for q in compiled_questions(battery)})


def compiled_questions(battery: Battery) -> Iterator[CompiledQuestion]:
    """Each question of `battery` compiled, in its order, one at a time (a cache writing them
    need never hold every prompt at once)."""
    system_of = _system_filler(battery.scorer)
    policies = policies_text(battery.policies)
    for q in battery.questions:
        system = system_of(policies, q)
        yield CompiledQuestion(
            id=q.id,
            system=system,
            sha256=sha256_hex(system),
            gold=q.gold,
            accept=tuple(q.accept),
            t1=battery.t1 and q.t1,
            exemplars=tuple(q.exemplars),
            tags=q.tags,
            trap_words=trap_words(q.trap, gold=q.gold, accept=q.accept, prompt=q.prompt)
            if battery.t1_trap
            else (),
            prompt=q.prompt,
            match=q.match,
        )


def compiled_frame(battery: Battery, questions: Mapping[str, CompiledQuestion]) -> CompiledBattery:
    """`battery` compiled around `questions` (`compile_battery`'s, or none)."""
    return CompiledBattery(
        name=battery.name,
        scorer=battery.scorer.name,
        questions=questions,
        user=answer_frame(battery.scorer, "user"),
        stern=answer_frame(battery.scorer, "stern"),
        settings=battery.scorer.settings,
        t1=battery.t1,
        judge=_judge_defaults(battery),
        reasoning_tags=battery.reasoning_tags,
        t1_trap=battery.t1_trap,
        t1_rule=battery.t1_rule,
    )
