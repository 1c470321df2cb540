"""A scorer folder decides its facet names and the builtin judge's section markers; no code does.

Each test copies the shipped scorer into the test's folder, changes its settings (and templates),
and loads a battery that names the copy by path.
"""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest

from tabench_dsl.cli import main
from tabench_dsl.core.errors import SpecErrors
from tabench_dsl.language.battery import load_battery
from tabench_dsl.language.render import compile_battery
from tabench_dsl.store.results import iter_records

SHIPPED = Path(__file__).resolve().parents[2] / "specs" / "tabench-1.1"
SHIPPED_FACETS = "facets: [extra_correct_info, missing_minor, erroneous_assertion]"


def copy_scorer(root: Path, *, replace: dict[str, str] | None = None, add: str = "") -> Path:
    """The shipped scorer copied to `root/scorer`: `replace` (old -> new) applied to scorer.yaml and
    every template, `add` appended to scorer.yaml."""
    folder = root / "scorer"
    shutil.copytree(SHIPPED, folder)
    for file in folder.iterdir():
        text = file.read_text(encoding="utf-8")
        for old, new in (replace or {}).items():
            text = text.replace(old, new)
        file.write_text(text + (add if file.name == "scorer.yaml" else ""), encoding="utf-8")
    return folder


def write_battery(root: Path, rubric: str) -> Path:
    """A battery in `root/bat` graded under the scorer copy at `root/bat/scorer`."""
    battery = root / "bat"
    battery.mkdir(parents=True)
    (battery / "battery.yaml").write_text("name: b\nscorer: scorer\nrubrics: [q.rubric]\nt1: false\n")
    (battery / "q.rubric").write_text(textwrap.dedent(rubric), encoding="utf-8")
    return battery


def facet_rubric(name: str) -> str:
    return f"""\
    question q1 {{
      prompt "Which stages make up the pipeline?"
      gold "Ingest, Index, Recall, Compact"
      facet {name} "talks about something else"
    }}
    """


# -- facet names ---------------------------------------------------------------------------------


def test_a_facet_the_scorer_defines_compiles(tmp_path: Path) -> None:
    battery = write_battery(tmp_path, facet_rubric("off_topic"))
    copy_scorer(battery, replace={SHIPPED_FACETS: "facets: [off_topic, extra_correct_info]"})
    compiled = compile_battery(load_battery(battery))
    assert "off_topic: talks about something else" in compiled.questions["q1"].system


def test_a_facet_the_scorer_does_not_define_is_an_error_naming_its_list(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    monkeypatch.chdir(tmp_path)
    battery = write_battery(tmp_path, facet_rubric("missing_minor"))
    copy_scorer(battery, replace={SHIPPED_FACETS: "facets: [off_topic, extra_correct_info]"})
    with pytest.raises(SpecErrors) as raised:
        load_battery("bat")
    assert raised.value.render() == textwrap.dedent("""\
        bat/q.rubric:4:9: unknown facet 'missing_minor'
              facet missing_minor "talks about something else"
                    ^
        hint: facets are off_topic, extra_correct_info""")
    assert main(["lint", "bat"]) == 2
    assert "hint: facets are off_topic, extra_correct_info" in capsys.readouterr().out


def test_without_a_facet_list_the_default_names_apply(tmp_path: Path) -> None:
    battery = write_battery(tmp_path, facet_rubric("missing_minor"))
    copy_scorer(battery, replace={SHIPPED_FACETS: ""})
    compiled = compile_battery(load_battery(battery))
    assert "missing_minor: talks about something else" in compiled.questions["q1"].system
    other = write_battery(tmp_path / "other", facet_rubric("off_topic"))
    copy_scorer(other, replace={SHIPPED_FACETS: ""})
    with pytest.raises(SpecErrors, match="unknown facet 'off_topic'"):
        load_battery(other)


@pytest.mark.parametrize(
    ("facets", "message"),
    [
        ("facets: off_topic", "scorer facets must be a list of names"),
        ("facets: [off_topic, 'two words']", "scorer facets must be a list of names"),
        ("facets: []", "scorer facets must be a list of names"),
    ],
)
def test_a_malformed_facet_list_is_an_error_at_its_line(tmp_path: Path, facets: str, message: str) -> None:
    battery = write_battery(tmp_path, facet_rubric("off_topic"))
    scorer = copy_scorer(battery, replace={SHIPPED_FACETS: facets})
    line = scorer.joinpath("scorer.yaml").read_text().splitlines().index(facets) + 1
    with pytest.raises(SpecErrors) as raised:
        load_battery(battery)
    (error,) = raised.value.errors
    assert (error.message, error.path, error.line) == (message, str(scorer / "scorer.yaml"), line)


# -- the builtin judge's markers -----------------------------------------------------------------

MARKERS = {
    "-- QUESTION + GOLD --": "== ITEM AND KEY ==",
    "-- FACET GUIDE (this question) --": "== NOTES ==",
    "-- CANDIDATE ANSWER --": "== RESPONSE ==",
}


def grade(battery: Path, root: Path, answers: list[tuple[str, str]]) -> dict:
    """`tabench grade` with the default (builtin) judge: {system: record}."""
    file = root / "answers.jsonl"
    file.write_text(
        "".join(json.dumps({"system": s, "question": "q1", "answer": a}) + "\n" for s, a in answers)
    )
    out = root / "r.jsonl"
    assert main(["grade", str(battery), "--answers", str(file), "--out", str(out), "--json"]) == 0
    return {r.system: r for r in iter_records(root / "r.jsonl")}


def test_builtin_judge_reads_the_scorers_markers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    battery = write_battery(tmp_path, facet_rubric("missing_minor"))
    scorer = copy_scorer(battery, replace=MARKERS)  # the templates and the builtin: section alike
    assert '  question_start: "== ITEM AND KEY =="' in scorer.joinpath("scorer.yaml").read_text()
    compiled = compile_battery(load_battery(battery))
    assert "== ITEM AND KEY ==" in compiled.questions["q1"].system
    assert "-- QUESTION + GOLD --" not in compiled.questions["q1"].system
    records = grade(battery, tmp_path, [("a", "Ingest, Index, Recall, Compact"), ("b", "Ingest only")])
    assert {s: (r.tier, r.verdict) for s, r in records.items()} == {"a": ("t2", "pass"), "b": ("t2", "fail")}
    assert "missing 3 of 4 required" in records["b"].reason
    capsys.readouterr()


def test_builtin_judge_reports_only_the_scorers_facets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    battery = write_battery(tmp_path, facet_rubric("off_topic"))
    copy_scorer(battery, replace={SHIPPED_FACETS: "facets: [off_topic, extra_correct_info]"})
    records = grade(battery, tmp_path, [("a", "Ingest, Index, Recall, Compact")])
    (attempt,) = records["a"].attempts
    assert json.loads(attempt.raw)["facets"] == {"off_topic": False, "extra_correct_info": False}
    capsys.readouterr()


def test_a_malformed_builtin_section_is_an_error_at_its_line(tmp_path: Path) -> None:
    battery = write_battery(tmp_path, facet_rubric("missing_minor"))
    scorer = copy_scorer(
        battery,
        replace={
            '  question_start: "-- QUESTION + GOLD --"': "  question_start: [a]",
            '  answer_start: "-- CANDIDATE ANSWER --"': "  answer_begin: x",
        },
    )
    with pytest.raises(SpecErrors) as raised:
        load_battery(battery)
    lines = scorer.joinpath("scorer.yaml").read_text().splitlines()
    assert [(e.message, e.line) for e in raised.value.errors] == [
        ("builtin question_start must be a one-line text", lines.index("  question_start: [a]") + 1),
        ("unknown builtin key 'answer_begin'", lines.index("  answer_begin: x") + 1),
    ]


def test_lint_warns_of_a_marker_the_templates_lack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    monkeypatch.chdir(tmp_path)
    battery = write_battery(tmp_path, facet_rubric("missing_minor"))
    scorer = copy_scorer(battery)
    user = scorer / "user.j2"
    user.write_text(user.read_text().replace("-- CANDIDATE ANSWER --", "== RESPONSE =="))
    assert main(["lint", "bat"]) == 0
    out = capsys.readouterr().out
    line = (
        scorer.joinpath("scorer.yaml")
        .read_text()
        .splitlines()
        .index('  answer_start: "-- CANDIDATE ANSWER --"')
        + 1
    )
    assert out.startswith(
        f"{(scorer / 'scorer.yaml').resolve()}:{line}:3: warning: "
        "builtin answer_start marker '-- CANDIDATE ANSWER --' is not in user.j2 [W105]\n"
    )
    assert out.endswith("0 errors, 2 warnings\n")  # the question has no exemplars, too
