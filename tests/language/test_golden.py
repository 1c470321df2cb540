"""Golden prompts: each `tests/golden/<case>/` holds a battery and, in `expected/`, the exact prompts.

The expected files were written by hand from the prompt contract (docs/language.md section 7:
the seed's fixed text around hand-made holes), never produced by the renderer.
`expected/questions.txt` lists the battery's questions in order; `expected/<qid>.<part>.txt` is
that question's prompt (`system`, `user`, `stern`), with no
final line break; `answer.txt` is the answer the user and stern prompts carry.

One parametrized test compares the library's output byte for byte, another the `tabench compile`
output. A few tests at the end drive the renderer with hand-built nodes and scorer templates.
"""

from __future__ import annotations

import hashlib
import json
from functools import cache
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from tabench_dsl.cli import main
from tabench_dsl.core.nodes import Battery, Exemplar, Pos, Question, Rule, Scorer
from tabench_dsl.core.scorer import ScorerSettings
from tabench_dsl.language.battery import load_battery
from tabench_dsl.language.render import (
    TemplateError,
    answer_frame,
    compile_battery,
    exemplars_json,
    facet_guide,
    question_json,
    question_object,
    render_stern,
    render_system,
    render_user,
    scorer_template,
)

GOLDEN = Path(__file__).parents[1] / "golden"
CASES = sorted(
    p.name for p in GOLDEN.iterdir() if (p / "battery.yaml").is_file() and p.name != "seed-identity"
)


def _read(path: Path) -> str:
    return path.read_bytes().decode("utf-8")


def _expected(case: str) -> dict[tuple[str, str], str]:
    out = {}
    for path in sorted((GOLDEN / case / "expected").glob("*.txt")):
        if path.name == "questions.txt":
            continue
        qid, part = path.name[: -len(".txt")].rsplit(".", 1)
        out[(qid, part)] = _read(path)
    return out


def _order(case: str) -> list[str]:
    return _read(GOLDEN / case / "expected" / "questions.txt").split()


def _answer(case: str) -> str:
    path = GOLDEN / case / "answer.txt"
    return _read(path) if path.exists() else ""


def test_there_are_enough_cases() -> None:
    assert len(CASES) >= 6
    for case in CASES:
        assert any(part == "system" for _, part in _expected(case)), case


@pytest.mark.parametrize("case", CASES)
def test_library_output_matches_golden(case: str) -> None:
    battery = load_battery(GOLDEN / case)
    compiled = compile_battery(battery)
    assert list(compiled.questions) == _order(case)
    answer = _answer(case)
    for (qid, part), expected in _expected(case).items():
        question = battery.question(qid)
        assert question is not None, qid
        if part == "system":
            assert compiled.questions[qid].system == expected, qid
            assert render_system(battery, question) == expected, qid
            assert compiled.questions[qid].sha256 == hashlib.sha256(expected.encode("utf-8")).hexdigest()
        elif part == "user":
            assert compiled.user.fill(answer) == expected
            assert render_user(battery.scorer, answer) == expected
        else:
            assert compiled.stern.fill(answer) == expected
            assert render_stern(battery.scorer, answer) == expected


@pytest.mark.parametrize("case", CASES)
def test_cli_output_matches_golden(case: str, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    expected = _expected(case)
    order = _order(case)

    # The whole battery: every SYSTEM prompt, with `## <question> system` headers when several.
    assert main(["compile", str(GOLDEN / case)]) == 0
    if len(order) == 1:
        whole = expected[(order[0], "system")] + "\n"
    else:
        whole = "".join(f"## {qid} system\n{expected[(qid, 'system')]}\n" for qid in order)
    assert capsysbinary.readouterr().out == whole.encode("utf-8")

    # Each expected part alone: its exact text and one line break, no header.
    for (qid, part), text in expected.items():
        argv = ["compile", str(GOLDEN / case / "battery.yaml"), "--question", qid, "--part", part]
        if part != "system":
            argv += ["--answer", _answer(case)]
        assert main(argv) == 0
        assert capsysbinary.readouterr().out == (text + "\n").encode("utf-8"), (qid, part)


# --- the renderer on hand-built nodes --------------------------------------------------------------

_POS = Pos("hand.rubric", 1, 1)


def _scorer(tmp_path: Path, **templates: str) -> Scorer:
    settings = {"name": "hand-0", "templates": {k: f"{k}.j2" for k in ("system", "user", "stern")}}
    base = {
        "system": "{{ policies }}|{{ question_json }}|{{ facet_guide }}|{{ exemplars_json }}\n",
        "user": "U:{{ answer }}\n",
        "stern": "S:{{ answer }}:S\n",
    }
    base.update(templates)
    for name, text in base.items():
        (tmp_path / f"{name}.j2").write_text(text, encoding="utf-8")
    (tmp_path / "scorer.yaml").write_text(yaml.safe_dump(settings), encoding="utf-8")
    return Scorer(name="hand-0", path=str(tmp_path), settings=ScorerSettings(name="hand-0"))


def _battery(scorer: Scorer, *questions: Question, rules: tuple[Rule, ...] = ()) -> Battery:
    return Battery(
        name="hand", manifest="hand/battery.yaml", scorer=scorer, policies=rules, questions=questions
    )


def test_hand_built_holes(tmp_path: Path) -> None:
    q = Question(
        id="q",
        prompt="p{{ x }}",
        gold="g",
        pos=_POS,
        accept=("a", "b"),
        facets=(),
        exemplars=(Exemplar(kind="partial", answer="x", why="y", pos=_POS, expect="pass"),),
    )
    rules = (Rule(text="S1: one", id="S1", pos=_POS), Rule(text="two", id=None, pos=_POS))
    battery = _battery(_scorer(tmp_path), q, rules=rules)
    assert render_system(battery, q) == (
        'S1: one\ntwo|{\n "accepted_variants": [\n  "a",\n  "b"\n ],\n "answer_gold": "g",\n'
        ' "question": "p{{ x }}"\n}||[\n {\n  "kind": "partial",\n  "answer": "x",\n  "why": "y"\n }\n]'
    )


def test_template_trailing_line_break_is_dropped_but_answer_breaks_kept(tmp_path: Path) -> None:
    scorer = _scorer(tmp_path)
    assert render_user(scorer, "a\n") == "U:a\n"
    assert render_stern(scorer, "\n") == "S:\n:S"
    frame = answer_frame(scorer, "stern")
    assert (frame.prefix, frame.suffix) == ("S:", ":S")


def test_template_using_an_unknown_value_is_an_error(tmp_path: Path) -> None:
    scorer = _scorer(tmp_path, system="{{ policies }} {{ nonsense }}")
    q = Question(id="q", prompt="p", gold="g", pos=_POS)
    with pytest.raises(TemplateError, match="'nonsense' is undefined"):
        render_system(_battery(scorer, q), q)


def test_answer_hole_must_appear_once(tmp_path: Path) -> None:
    scorer = _scorer(tmp_path, user="{{ answer }} and again {{ answer }}")
    with pytest.raises(TemplateError, match="exactly once"):
        answer_frame(scorer, "user")


def test_frame_fill_equals_render_for_awkward_answers(tmp_path: Path) -> None:
    scorer = _scorer(tmp_path, stern="pre {{ answer }} post\n")
    frame = answer_frame(scorer, "stern")
    for answer in ["", "{{ answer }}", "{% raw %}", "\x00", "é\r\n", "S:{{"]:
        assert frame.fill(answer) == render_stern(scorer, answer)


def test_system_template_with_logic_is_rendered_not_joined(tmp_path: Path) -> None:
    system = (
        "{{ question.id }}:{% if facet_guide %}guide={{ facet_guide }}{% else %}no guide{% endif %}"
        "|{{ policies | length }}|{{ exemplars_json }}\n"
    )
    scorer = _scorer(tmp_path, system=system)
    plain = Question(id="q1", prompt="p", gold="g", pos=_POS)
    guided = Question(id="q2", prompt="p", gold="g", pos=_POS, guide="{{ look }}")
    battery = _battery(scorer, plain, guided, rules=(Rule(text="S1: abc", id="S1", pos=_POS),))
    compiled = compile_battery(battery)
    assert compiled.questions["q1"].system == "q1:no guide|7|[]"
    assert compiled.questions["q2"].system == "q2:guide={{ look }}|7|[]"


def test_plain_system_template_may_repeat_and_omit_holes(tmp_path: Path) -> None:
    scorer = _scorer(tmp_path, system="[{{ facet_guide }}]\r\n{{facet_guide}} {{ policies }}\n\n")
    q = Question(id="q", prompt="p", gold="g", pos=_POS, guide="G{{ policies }}")
    battery = _battery(scorer, q, rules=(Rule(text="S1: r", id="S1", pos=_POS),))
    assert render_system(battery, q) == "[G{{ policies }}]\nG{{ policies }} S1: r\n"


_text = st.text(st.characters(codec="utf-8"), max_size=30)
_optional = st.one_of(st.none(), _text.filter(bool))


@settings(derandomize=True, max_examples=300, deadline=None)
@given(
    prompt=_text.filter(bool),
    gold=_text.filter(bool),
    accept=st.lists(_text.filter(bool), max_size=3),
    trap=_optional,
    structure=_optional,
    scoring=_optional,
    exemplars=st.lists(
        st.tuples(st.sampled_from(["correct", "incorrect", "partial"]), _text, _text), max_size=3
    ),
)
def test_hole_json_equals_json_dumps(prompt, gold, accept, trap, structure, scoring, exemplars) -> None:
    # The holes are written without json's slow indenting encoder; they must equal json.dumps exactly.
    q = Question(
        id="q",
        prompt=prompt,
        gold=gold,
        pos=_POS,
        accept=tuple(accept),
        trap=trap,
        structure=structure,
        scoring=scoring,
        exemplars=tuple(Exemplar(kind=k, answer=a, why=w, pos=_POS) for k, a, w in exemplars),
    )
    assert question_json(q) == json.dumps(question_object(q), indent=1, ensure_ascii=False, sort_keys=True)
    items = [{"kind": k, "answer": a, "why": w} for k, a, w in exemplars]
    assert exemplars_json(q) == json.dumps(items, indent=1, ensure_ascii=False)


@cache
def _shipped() -> Battery:
    return load_battery(GOLDEN / "exemplars-facets")


@settings(derandomize=True, max_examples=200, deadline=None)
@given(policies=_text, prompt=_text.filter(bool), guide=_optional)
def test_shipped_system_template_joins_equal_jinja_render(policies, prompt, guide) -> None:
    battery = _shipped()
    q = Question(id="q", prompt=prompt, gold="g", pos=_POS, guide=guide)
    rules = (Rule(text=policies, id=None, pos=_POS),)
    joined = render_system(_battery(battery.scorer, q, rules=rules), q)
    rendered = scorer_template(battery.scorer, "system").render(
        policies=policies,
        question_json=question_json(q),
        facet_guide=facet_guide(q),
        exemplars_json=exemplars_json(q),
    )
    assert joined == rendered
