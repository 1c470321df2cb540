"""Paths that cannot be read or written end in a message naming them, exit 2, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tabench_dsl.cli import main

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "lark-internals"


@pytest.fixture
def answers(tmp_path: Path) -> Path:
    path = tmp_path / "answers.jsonl"
    line = {"system": "a", "question": "default-parser", "answer": "Earley"}
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    return path


def _run(argv: list[str], capsys) -> tuple[int, str]:
    status = main(argv)
    return status, capsys.readouterr().err


def test_cache_path_that_is_a_folder(tmp_path: Path, answers: Path, capsys) -> None:
    folder = tmp_path / "cache-dir"
    folder.mkdir()
    argv = [
        "grade",
        str(EXAMPLE),
        "--answers",
        str(answers),
        "--out",
        str(tmp_path / "r.jsonl"),
        "--judge",
        "http://127.0.0.1:9/v1",
        "--model",
        "m",
        "--cache",
        str(folder),
    ]
    status, err = _run(argv, capsys)
    assert status == 2 and "Traceback" not in err
    assert f"--cache {folder} is a folder" in err  # refused by the one check before any write


def test_results_path_under_a_file(tmp_path: Path, answers: Path, capsys) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    out = blocker / "r.jsonl"
    status, err = _run(["grade", str(EXAMPLE), "--answers", str(answers), "--out", str(out)], capsys)
    assert status == 2 and "Traceback" not in err
    assert err.startswith("tabench: error: ") and str(blocker) in err


def test_lock_file_that_is_a_folder(tmp_path: Path, capsys) -> None:
    battery = tmp_path / "battery"
    battery.mkdir()
    for item in EXAMPLE.iterdir():
        if item.is_file():
            (battery / item.name).write_bytes(item.read_bytes())
    (battery / "questions").mkdir()
    for rubric in (EXAMPLE / "questions").iterdir():
        (battery / "questions" / rubric.name).write_bytes(rubric.read_bytes())
    (battery / "tabench.lock").mkdir()
    status, err = _run(["compile", str(battery), "--check"], capsys)
    assert status == 2 and "Traceback" not in err
    assert "tabench.lock" in err
