"""`tabench new`: the template battery compiles, lints with no warning and calibrates at 100%."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tabench_dsl.cli import main
from tabench_dsl.language.battery import load_battery
from tabench_dsl.language.lint import lint_battery
from tabench_dsl.language.render import compile_battery


def test_new_battery_compiles_lints_clean_and_calibrates_at_100(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["new", "my-bench", "--dir", str(tmp_path)]) == 0
    folder = tmp_path / "my-bench"
    assert sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()) == [
        "battery.schema.json",
        "battery.yaml",
        "my-bench.policy",
        "questions/my-bench.rubric",
    ]
    assert f"created {folder}/" in capsys.readouterr().out

    battery = load_battery(folder)
    assert battery.name == "my-bench"
    [question] = battery.questions
    # The one question uses every field of the language.
    assert question.accept and question.trap and question.structure and question.scoring
    assert "\n" in question.scoring  # a triple-quoted string
    assert {f.name for f in question.facets} == {"missing_minor", "erroneous_assertion"}
    assert {e.kind for e in question.exemplars} == {"correct", "partial", "incorrect"}
    assert any(e.expect is not None for e in question.exemplars)
    assert question.t1 is False
    assert [rule.id for rule in battery.policies] == ["S1", "S2", "S3"]
    # S2 is written over two lines: the continuation is joined with one space.
    assert battery.policies[1].text == (
        "S2: A premise rejection that names the actual mechanism is judged on substance; "
        'a bare "cannot determine" fails.'
    )

    # A new battery starts on the neutral scorer: its prompt carries no other project's history.
    assert battery.scorer.name == "tabench-neutral-1.1"
    assert "\nscorer: tabench-neutral-1.1 " in (folder / "battery.yaml").read_text(encoding="utf-8")
    compiled = compile_battery(battery)
    assert "dataclass-dict" in compiled.questions
    system = compiled.questions["dataclass-dict"].system
    assert "memos-agent" not in system and "archaeology" not in system
    assert lint_battery(folder) == []

    assert main(["calibrate", str(folder), "--json", "--min-agreement", "1.0"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["n"], result["agreement"], result["misses"]) == (4, 1.0, [])


def test_new_refuses_an_existing_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "keep.txt").write_text("mine", encoding="utf-8")
    assert main(["new", "taken", "--dir", str(tmp_path)]) == 2
    assert "already exists" in capsys.readouterr().err
    assert [p.name for p in (tmp_path / "taken").iterdir()] == ["keep.txt"]


@pytest.mark.parametrize("name", ["My-Bench", "_x", ".hidden", "a/b", "sp ace", "x!", ""])
def test_new_rejects_a_bad_name(tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["new", name, "--dir", str(tmp_path)]) == 2
    assert "is not a battery name" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_new_needs_an_existing_parent(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["new", "x", "--dir", str(tmp_path / "missing")]) == 2
    assert "no such folder" in capsys.readouterr().err


def test_new_with_the_codebase_scorer_names_it_and_calibrates_at_100(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["new", "rivers", "--dir", str(tmp_path), "--scorer", "tabench-1.1"]) == 0
    folder = tmp_path / "rivers"
    manifest = (folder / "battery.yaml").read_text(encoding="utf-8")
    assert "\nscorer: tabench-1.1 " in manifest
    battery = load_battery(folder)
    assert battery.scorer.name == "tabench-1.1"
    system = compile_battery(battery).questions["dataclass-dict"].system
    assert "codebase" in system
    assert lint_battery(folder) == []
    capsys.readouterr()
    # The builtin judge finds the question and the answer through the codebase scorer's markers too.
    assert main(["calibrate", str(folder), "--json", "--min-agreement", "1.0"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["n"], result["agreement"], result["misses"]) == (4, 1.0, [])


def test_new_refuses_a_scorer_that_is_not_shipped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["new", "x", "--dir", str(tmp_path), "--scorer", "tabench-9"]) == 2
    err = capsys.readouterr().err
    assert "--scorer tabench-9: not a shipped scorer; shipped scorers are" in err
    assert "tabench-1.1, tabench-neutral-1.1" in err
    assert list(tmp_path.iterdir()) == []
