"""The example batteries: each lints with no error or warning, compiles, has answers from at least
three systems for its questions, and the builtin judge agrees with >= 90% of its exemplars."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tabench_dsl.cli import main
from tabench_dsl.language.battery import load_battery
from tabench_dsl.language.lint import lint_battery
from tabench_dsl.language.render import compile_battery

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
BATTERIES = sorted(p.parent for p in EXAMPLES.glob("*/battery.yaml"))


def test_there_are_at_least_two_example_batteries() -> None:
    assert len(BATTERIES) >= 2


@pytest.mark.parametrize("folder", BATTERIES, ids=lambda p: p.name)
def test_lints_clean_and_compiles(folder: Path) -> None:
    assert [p.render() for p in lint_battery(folder)] == []
    battery = load_battery(folder)
    compiled = compile_battery(battery)
    assert len(compiled.questions) >= 12
    kinds = {e.kind for q in battery.questions for e in q.exemplars}
    assert kinds == {"correct", "partial", "incorrect"}
    # The showcase uses every field of the language.
    used = {field for q in battery.questions for field in q.field_pos}
    fields = {"prompt", "gold", "accept", "trap", "structure", "scoring", "guide", "facet", "exemplar", "t1"}
    assert used >= fields
    assert any("\n" in (q.scoring or "") for q in battery.questions)  # a triple-quoted scoring
    assert any(e.expect is not None for q in battery.questions for e in q.exemplars)
    assert any(not q.t1 for q in battery.questions)
    assert all(rule.id for rule in battery.policies)


@pytest.mark.parametrize("folder", BATTERIES, ids=lambda p: p.name)
def test_answers_cover_every_question_from_three_systems(folder: Path) -> None:
    questions = {q.id for q in load_battery(folder).questions}
    lines = [json.loads(line) for line in (folder / "answers.jsonl").read_text(encoding="utf-8").splitlines()]
    systems = {line["system"] for line in lines}
    assert len(systems) >= 3
    assert {(s, q) for s in systems for q in questions} == {(x["system"], x["question"]) for x in lines}


@pytest.mark.parametrize("folder", BATTERIES, ids=lambda p: p.name)
def test_builtin_judge_agrees_with_the_exemplars(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["calibrate", str(folder), "--judge", "builtin", "--json", "--min-agreement", "0.9"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["agreement"] >= 0.9 and result["n"] >= 36


@pytest.mark.parametrize("folder", BATTERIES, ids=lambda p: p.name)
def test_answers_grade_with_the_builtin_judge(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    argv = ["grade", str(folder), "--answers", str(folder / "answers.jsonl"), "--out", "r.jsonl", "--json"]
    assert main(argv) == 0
    totals = json.loads(capsys.readouterr().out)
    scores = {s["system"]: s["score"] for s in totals["systems"]}
    # agent-a answers correctly throughout; agent-c mostly wrong or declines.
    assert scores["agent-a"] == 1.0 and scores["agent-c"] < 0.5
