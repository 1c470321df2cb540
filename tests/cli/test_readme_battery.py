"""The README's ten-line battery, its answers and its lint transcript are what tabench does: the
battery lints clean, its answers grade, and with `gold` misspelt `lint` prints exactly the README's
lines (a hint there that lists other fields than lint's own would mislead a first reader)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tabench_dsl.cli import main

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")


def block_after(first_line: str) -> str:
    """The README code block whose first line is `first_line`, without that line."""
    for block in re.findall(r"```[a-z]*\n(.*?)```", README, flags=re.S):
        head, _, rest = block.partition("\n")
        if head == first_line:
            return rest
    raise AssertionError(f"no README code block starts with {first_line!r}")


@pytest.fixture
def rivers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TABENCH_CACHE", raising=False)
    folder = tmp_path / "rivers"
    folder.mkdir()
    (folder / "battery.yaml").write_text(block_after("# rivers/battery.yaml"), encoding="utf-8")
    (folder / "rivers.rubric").write_text(block_after("# rivers/rivers.rubric"), encoding="utf-8")
    return folder


def test_the_readme_battery_lints_clean_and_its_answers_grade(rivers: Path, capsys) -> None:
    assert main(["lint", "rivers"]) == 0
    assert capsys.readouterr().out == "0 errors, 0 warnings\n"
    answers = re.search(r"```\n(\{\"system\": \"model-a\".*?)```", README, flags=re.S)
    assert answers, "the README's answers block"
    Path("answers.jsonl").write_text(answers[1], encoding="utf-8")
    assert main(["grade", "rivers", "--answers", "answers.jsonl", "--out", "rivers-results.jsonl"]) == 0
    assert Path("rivers-results.jsonl").read_bytes().count(b"\n") == 2


def test_lint_of_a_misspelt_gold_prints_the_readme_transcript(rivers: Path, capsys) -> None:
    rubric = rivers / "rivers.rubric"
    rubric.write_text(rubric.read_text(encoding="utf-8").replace('  gold "', '  gloden "'), encoding="utf-8")
    transcript = block_after("$ tabench lint rivers")
    assert main(["lint", "rivers"]) == 2
    captured = capsys.readouterr()
    assert captured.out + captured.err == transcript
