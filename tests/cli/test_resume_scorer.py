"""`grade --resume` into a results file graded under another scorer refuses (exit 2) and changes
nothing (`store/resume_checks.py`); records name their scorer (`Record.scorer`), and a file whose
records name none (written before they did) is resumed as before, its totals unchanged."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from support.helpers_grading import write_battery

from tabench_dsl.cli import main
from tabench_dsl.store.resume_checks import recorded_gradings

ANSWERS = [
    {"system": "a", "question": "h01", "answer": "Ingest, Index, Recall and Compact"},
    {"system": "a", "question": "h02", "answer": "7311"},
    {"system": "b", "question": "h02", "answer": "It listens on 8080."},
]
#: One answer more, for a resume to grade.
MORE = {"system": "b", "question": "h01", "answer": "Ingest and Compact"}


@pytest.fixture
def work(work: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("COLUMNS", "120")
    return work


def write_answers(work: Path, answers: list[dict]) -> Path:
    path = work / "answers.jsonl"
    path.write_text("".join(json.dumps(a) + "\n" for a in answers), encoding="utf-8")
    return path


def rescore(battery: Path, scorer: str) -> None:
    manifest = battery / "battery.yaml"
    text = manifest.read_text(encoding="utf-8")
    manifest.write_text(re.sub(r"(?m)^scorer: .*$", f"scorer: {scorer}", text), encoding="utf-8")


def grade(battery: Path, answers: Path, *extra: str) -> int:
    return main(["grade", str(battery), "--answers", str(answers), "--out", "results.jsonl", *extra])


def test_records_name_the_scorer_that_graded_them(work: Path, capsys) -> None:
    assert grade(write_battery(work), write_answers(work, ANSWERS)) == 0
    lines = (work / "results.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["scorer"] for line in lines] == ["tabench-1.1"] * len(ANSWERS)


def test_resume_under_another_scorer_refuses_and_changes_nothing(work: Path, capsys) -> None:
    battery = write_battery(work)
    assert grade(battery, write_answers(work, ANSWERS)) == 0
    capsys.readouterr()
    rescore(battery, "tabench-neutral-1.1")
    answers = write_answers(work, [*ANSWERS, MORE])
    before = {p.name: p.read_bytes() for p in work.iterdir() if p.is_file() and p != answers}
    assert grade(battery, answers, "--resume") == 2
    assert capsys.readouterr().err == (
        "tabench: error: results.jsonl holds results graded under scorer tabench-1.1, and the battery's "
        "scorer is tabench-neutral-1.1: --resume would mix the two in one file; give this grading "
        "another --out, or name the old scorer in the manifest to go on with this file\n"
    )
    assert {p.name: p.read_bytes() for p in work.iterdir() if p.is_file() and p != answers} == before
    # The hint works: under the old scorer again, the resume grades the one new answer.
    rescore(battery, "tabench-1.1")
    assert grade(battery, answers, "--resume", "--json") == 0
    assert json.loads(capsys.readouterr().out)["run"]["graded"] == 1


def test_records_naming_no_scorer_are_resumed_and_total_as_before(work: Path, capsys) -> None:
    battery = write_battery(work)
    assert grade(battery, write_answers(work, ANSWERS)) == 0
    capsys.readouterr()
    results = work / "results.jsonl"
    named = results.read_bytes()
    assert main(["totals", str(results)]) == 0
    totals_named = capsys.readouterr().out
    # The same records as a grading before records named their scorer wrote them.
    old = [json.loads(line) for line in named.decode().splitlines()]
    for record in old:
        del record["scorer"]
    results.write_text("".join(json.dumps(r) + "\n" for r in old), encoding="utf-8")
    assert main(["totals", str(results)]) == 0
    assert capsys.readouterr().out == totals_named
    # Nothing names a scorer, so nothing is refused: the resume grades the new answer.
    rescore(battery, "tabench-neutral-1.1")
    assert grade(battery, write_answers(work, [*ANSWERS, MORE]), "--resume", "--json") == 0
    assert json.loads(capsys.readouterr().out)["run"]["graded"] == 1
    last = json.loads(results.read_text(encoding="utf-8").splitlines()[-1])
    assert (last["system"], last["question"], last["scorer"]) == ("b", "h01", "tabench-neutral-1.1")


def test_the_scan_finds_every_scorer_however_the_line_spells_it(tmp_path: Path) -> None:
    # As tabench writes a record, as a hand or another tool spells it (spaces, escapes), and a
    # record whose tags merely hold the word: the fast byte count must not hide the odd ones.
    lines = [
        '{"system":"a","question":"q1","tier":"t2","scorer":"tabench-1.1"}',
        '{"system":"a","question":"q2","tier":"t2","scorer":"tabench-1.1"}',
        '{"system":"b", "question":"q1", "tier":"t2", "scorer" : "mine-2"}',
        '{"system":"c","question":"q1","tier":"t2","tags":["scorer"]}',
        '{"system":"d","question":"q1","tier":"t2","scorer":"we\\"ird\\u00e9"}',
    ]
    path = tmp_path / "results.jsonl"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    assert recorded_gradings(path).scorers == {"tabench-1.1", "mine-2", 'we"irdé'}
    path.write_text(lines[0] + "\n" + lines[3] + "\n", encoding="utf-8")
    assert recorded_gradings(path).scorers == {"tabench-1.1"}
    # The odd lines after megabytes of ordinary ones, where the scan reads them in a later block
    # with tabench-1.1 already known.
    ordinary = (lines[0] + "\n").encode() * 80_000
    path.write_bytes(ordinary + "".join(line + "\n" for line in lines[2:]).encode())
    assert recorded_gradings(path).scorers == {"tabench-1.1", "mine-2", 'we"irdé'}
