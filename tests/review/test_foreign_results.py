"""A file given where a results file belongs that is not one (an answers file by mistake, or any
other file) is said in one line with what to do, exit 2, and nothing is written: never a warning per
line and empty tables (`store/foreign_results.py`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.make_results import make_record, write_results

from tabench_dsl.cli import main


def answers_file(folder: Path, lines: int = 31) -> Path:
    path = folder / "answers.jsonl"
    rows = [{"system": f"sys-{i % 3}", "question": f"h{i:02}", "answer": "an answer"} for i in range(lines)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def commands(bad: Path, good: Path, out: Path) -> dict[str, list[str]]:
    return {
        "totals": ["totals", str(bad)],
        "totals --json": ["totals", str(bad), "--json"],
        "report": ["report", str(bad), "--html", str(out / "report.html")],
        "view": ["view", str(bad), "--no-browser"],
        "diff": ["diff", str(good), str(bad)],
        "export": ["export", str(bad), "--format", "csv", "--out", str(out / "out.csv")],
    }


@pytest.mark.parametrize("command", ["totals", "totals --json", "report", "view", "diff", "export"])
def test_an_answers_file_is_said_to_be_one_in_one_line(work: Path, capsys, command: str) -> None:
    answers = answers_file(work)
    good = write_results(work / "good.jsonl", [make_record("a", "h01", "pass")])
    out = work / "out"
    out.mkdir()
    before = sorted(p.name for p in work.rglob("*"))
    assert main(commands(answers, good, out)[command]) == 2
    captured = capsys.readouterr()
    assert captured.err == (
        f"tabench: error: {answers}: this looks like an answers file, not a results file; grade it first: "
        f"tabench grade BATTERY --answers {answers}\n"
    )
    assert captured.out == ""
    assert sorted(p.name for p in work.rglob("*")) == before  # no output, no index


def test_an_answers_csv_and_another_file(work: Path, capsys) -> None:
    csv = work / "answers.csv"
    csv.write_text("system,question,answer\na,h01,x\n", encoding="utf-8")
    assert main(["totals", str(csv)]) == 2
    assert "answers.csv: this looks like an answers file, not a results file; grade it first" in (
        capsys.readouterr().err
    )
    notes = work / "notes.txt"
    notes.write_text("my notes\nmore notes\n", encoding="utf-8")
    assert main(["totals", str(notes)]) == 2
    assert capsys.readouterr().err == (
        f"tabench: error: {notes}: not a results file: none of its first lines is a record `tabench grade` "
        "writes\n"
    )


def test_a_results_file_with_a_bad_first_line_is_still_one(work: Path, capsys) -> None:
    # A damaged line (here the first) in a file of records is reported as ever, and the rest counted.
    results = write_results(
        work / "run.jsonl", [make_record("a", "h01", "pass"), make_record("a", "h02", "fail")]
    )
    results.write_bytes(b'{"system": "a", "question": "h00", "answer": "x"}\n' + results.read_bytes())
    assert main(["totals", str(results), "--json"]) == 1
    captured = capsys.readouterr()
    assert f"{results}:1: not a result record" in captured.err
    assert json.loads(captured.out)["records"] == 2
