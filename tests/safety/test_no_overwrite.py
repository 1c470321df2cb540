"""No command writes over data: every file a command writes or appends to is checked first
(tabench_dsl/outputs.py), and a path that is an input, a folder, a device or a file of another kind
is a usage error naming it (exit 2) with the file left byte for byte as it was."""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path

import pytest
from support.helpers_grading import write_battery
from support.make_results import small_results, write_results

from tabench_dsl.cli import main
from tabench_dsl.store.decisions import decisions_path

NOTES = b"my notes, not written by tabench\nlast line without a line break"


@pytest.fixture
def results(tmp_path: Path) -> Path:
    return write_results(tmp_path / "run.jsonl", small_results())


def refused(argv: list[str], capsys, *kept: Path) -> str:
    """Run `argv`, expect exit 2 with a one-line message and every `kept` file unchanged."""
    before = {path: path.read_bytes() for path in kept}
    status = main(argv)
    err = capsys.readouterr().err
    assert status == 2, err
    assert err.startswith("tabench: error: ") and err.count("\n") == 1 and "Traceback" not in err
    for path, data in before.items():
        assert path.read_bytes() == data, f"{path} was changed"
    return err


# -- report --html -------------------------------------------------------------------------------------
def test_report_refuses_to_write_over_its_results(results: Path, capsys) -> None:
    err = refused(["report", str(results), "--html", str(results)], capsys, results)
    assert f"--html {results}: that is the results file it reads" in err


def test_report_refuses_the_decisions_file_and_links_to_inputs(results: Path, tmp_path: Path, capsys) -> None:
    decisions = decisions_path(results)
    decisions.write_text("", encoding="utf-8")
    err = refused(["report", str(results), "--html", str(decisions)], capsys, decisions)
    assert "that is the decisions file of those results" in err
    link = tmp_path / "report.html"
    link.symlink_to(results)
    err = refused(["report", str(results), "--html", str(link)], capsys, results)
    assert "that is the results file it reads" in err
    hard = tmp_path / "hard.html"
    os.link(results, hard)
    refused(["report", str(results), "--html", str(hard)], capsys, results)


def test_report_refuses_a_file_it_did_not_write(results: Path, tmp_path: Path, capsys) -> None:
    notes = tmp_path / "notes.html"
    notes.write_bytes(b"<!doctype html><p>someone's own page</p>")
    err = refused(["report", str(results), "--html", str(notes)], capsys, notes)
    assert f"--html {notes} exists and is not an HTML report written by tabench; refusing to overwrite" in err
    other = tmp_path / "other.jsonl"
    other.write_bytes(NOTES)
    refused(["report", str(results), "--html", str(other)], capsys, other)
    err = refused(["report", str(results), "--html", "/dev/null"], capsys)
    assert "/dev/null is not a regular file" in err
    folder = tmp_path / "page.html"
    folder.mkdir()
    assert "is a folder" in refused(["report", str(results), "--html", str(folder)], capsys)


def test_report_replaces_its_own_report_and_an_empty_file(results: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "report.html"
    out.touch()
    for _ in range(2):  # an empty file, then the report written the first time
        assert main(["report", str(results), "--html", str(out)]) == 0
        assert capsys.readouterr().out.startswith(f"wrote {out}: 8 answers")
    assert '<meta name="generator" content="tabench report">' in out.read_text(encoding="utf-8")[:200]


# -- grade --out, calibrate --out ---------------------------------------------------------------------
@pytest.fixture
def grading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """(battery, answers) in the working folder, graded with the builtin judge."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TABENCH_CACHE", raising=False)
    answers = tmp_path / "answers.jsonl"
    line = {"system": "a", "question": "h02", "answer": "7311"}
    answers.write_text(json.dumps(line) + "\n", encoding="utf-8")
    return write_battery(tmp_path), answers


@pytest.mark.parametrize("resume", [False, True])
def test_grade_refuses_to_append_to_its_answers(grading: tuple[Path, Path], capsys, resume: bool) -> None:
    battery, answers = grading
    argv = ["grade", str(battery), "--answers", str(answers), "--out", str(answers)]
    err = refused([*argv, *(["--resume"] if resume else [])], capsys, answers)
    assert f"--out {answers}: that is the answers file" in err


def test_grade_resume_refuses_a_file_that_holds_no_results(grading: tuple[Path, Path], capsys) -> None:
    battery, answers = grading
    notes = battery.parent / "notes.txt"
    notes.write_bytes(NOTES)  # appending would first cut its "torn" last line
    argv = ["grade", str(battery), "--answers", str(answers), "--out", str(notes), "--resume"]
    err = refused(argv, capsys, notes)
    assert f"--out {notes} exists and is not a results file written by tabench; refusing to append" in err
    manifest = battery / "battery.yaml"
    refused(
        ["grade", str(battery), "--answers", str(answers), "--out", str(manifest), "--resume"],
        capsys,
        manifest,
    )


def test_grade_resume_appends_to_its_own_results(grading: tuple[Path, Path], capsys) -> None:
    battery, answers = grading
    out = battery.parent / "r.jsonl"
    out.touch()  # an empty file holds nothing to lose
    assert main(["grade", str(battery), "--answers", str(answers), "--out", str(out)]) == 0
    assert main(["grade", str(battery), "--answers", str(answers), "--out", str(out), "--resume"]) == 0
    assert len(out.read_bytes().splitlines()) == 1


def test_calibrate_refuses_to_append_to_a_battery_file(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    battery = write_battery(tmp_path)
    rubric = battery / "questions.rubric"
    err = refused(["calibrate", str(battery), "--out", str(rubric)], capsys, rubric)
    assert "is not a results file written by tabench" in err


# -- compile --lock ------------------------------------------------------------------------------------
def test_lock_refuses_to_replace_a_file_that_is_not_a_lock(tmp_path: Path, capsys) -> None:
    battery = write_battery(tmp_path)
    lock = battery / "tabench.lock"
    lock.write_bytes(NOTES)
    err = refused(["compile", str(battery), "--lock"], capsys, lock)
    assert f"--lock {lock} exists and is not a prompt lock written by tabench" in err
    lock.unlink()
    assert main(["compile", str(battery), "--lock"]) == 0
    assert main(["compile", str(battery), "--lock"]) == 0  # its own lock is replaced


def test_lock_never_writes_through_a_link_the_battery_holds(tmp_path: Path, capsys) -> None:
    battery = write_battery(tmp_path / "shared")
    precious = tmp_path / "precious.txt"
    precious.write_bytes(NOTES)
    (battery / "tabench.lock.tmp").symlink_to(precious)  # the name the lock used to be written under
    assert main(["compile", str(battery), "--lock"]) == 0
    assert precious.read_bytes() == NOTES
    assert json.loads((battery / "tabench.lock").read_text(encoding="utf-8"))["lock"] == 1
    assert sorted(p.name for p in battery.iterdir() if p.name.startswith(".")) == []  # no temporary left


# -- decisions (view, adjudicate) -----------------------------------------------------------------------
def test_adjudicate_refuses_a_decisions_path_holding_other_data(results: Path, monkeypatch, capsys) -> None:
    decisions = decisions_path(results)
    decisions.write_bytes(b"not a decision, no line break")  # read as a torn line, then cut on append
    monkeypatch.setattr(sys, "stdin", io.StringIO("p\n\n"))
    err = refused(["adjudicate", str(results), "--reviewer", "ana"], capsys, decisions)
    assert f"{decisions} exists and is not a decisions file written by tabench; refusing to append" in err
    assert main(["view", str(results), "--no-browser", "--port", "1"]) == 2
    assert "is not a decisions file" in capsys.readouterr().err
    assert decisions.read_bytes() == b"not a decision, no line break"


def test_adjudicate_appends_to_its_own_decisions(results: Path, monkeypatch, capsys) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("p\n\ns\n"))
    assert main(["adjudicate", str(results), "--reviewer", "ana"]) == 0
    monkeypatch.setattr(sys, "stdin", io.StringIO("f\n\n"))
    assert main(["adjudicate", str(results), "--reviewer", "bo"]) == 0
    assert len(decisions_path(results).read_bytes().splitlines()) == 2


# -- new -----------------------------------------------------------------------------------------------
def test_new_refuses_a_name_taken_by_a_dangling_link(tmp_path: Path, capsys) -> None:
    (tmp_path / "bench").symlink_to(tmp_path / "elsewhere")
    err = refused(["new", "bench", "--dir", str(tmp_path)], capsys)
    assert "bench already exists; tabench new never overwrites" in err
    assert not (tmp_path / "elsewhere").exists()
