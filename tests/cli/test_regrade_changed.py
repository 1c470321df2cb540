"""`grade --resume --regrade-changed`: exactly the records graded under a prompt the battery no
longer has are graded again (with the builtin judge, in process), and the command says how many."""

from __future__ import annotations

import json
from pathlib import Path

from support.helpers_grading import RUBRIC, write_battery

from tabench_dsl.cli import main
from tabench_dsl.store.results import iter_records


def _answers(folder: Path) -> Path:
    path = folder / "answers.jsonl"
    rows = [
        ("a", "h01", "Ingest, Index, Recall, Compact"),
        ("a", "h02", "7311"),
        ("b", "h02", "7311"),
        ("a", "h03", "blue"),
    ]
    path.write_text("".join(json.dumps({"system": s, "question": q, "answer": t}) + "\n" for s, q, t in rows))
    return path


def test_regrades_exactly_the_changed(work: Path, capsys) -> None:
    battery = write_battery(work)
    answers = _answers(work)
    argv = ["grade", str(battery), "--answers", str(answers), "--out", "r.jsonl"]
    assert main(argv) == 0
    first = list(iter_records(work / "r.jsonl"))
    assert len(first) == 4
    capsys.readouterr()

    # h02's gold changes: its SYSTEM prompt does; h01 and h03 stay as they were.
    write_battery(work, rubric=RUBRIC.replace('gold "7311"', 'gold "port 7311"'))
    assert main([*argv, "--resume", "--regrade-changed"]) == 0
    err = capsys.readouterr().err
    assert "--regrade-changed: 2 answer(s) of 1 question(s) graded again" in err
    records = list(iter_records(work / "r.jsonl"))
    again = records[4:]
    assert sorted((r.system, r.question) for r in again) == [("a", "h02"), ("b", "h02")]
    assert {r.prompt_sha256 for r in again} != {r.prompt_sha256 for r in first if r.question == "h02"}

    # Once graded under the new prompt, nothing is left to grade again.
    assert main([*argv, "--resume", "--regrade-changed"]) == 0
    assert "--regrade-changed: 0 answer(s) of 0 question(s) graded again" in capsys.readouterr().err
    assert len(list(iter_records(work / "r.jsonl"))) == 6


def test_resume_alone_keeps_the_old_verdicts(work: Path, capsys) -> None:
    battery = write_battery(work)
    argv = ["grade", str(battery), "--answers", str(_answers(work)), "--out", "r.jsonl"]
    assert main(argv) == 0
    write_battery(work, rubric=RUBRIC.replace('gold "7311"', 'gold "port 7311"'))
    assert main([*argv, "--resume"]) == 0
    assert len(list(iter_records(work / "r.jsonl"))) == 4


def test_regrade_changed_needs_resume(work: Path, capsys) -> None:
    battery = write_battery(work)
    assert main(["grade", str(battery), "--answers", str(_answers(work)), "--regrade-changed"]) == 2
    assert "--regrade-changed goes with --resume" in capsys.readouterr().err
