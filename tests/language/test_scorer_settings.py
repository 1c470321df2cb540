"""`scorer.yaml` is read once, on the compile side, into typed settings: every section is checked,
regular expressions included, and every problem is reported at its own line and column by `lint`,
`compile` and `grade` alike (a bad phrase list no longer waits for grading to fail at 1:1)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from support.battery_files import shipped_settings
from support.helpers_grading import write_battery

from tabench_dsl.cli import main
from tabench_dsl.core.errors import SpecError
from tabench_dsl.core.resources import specs_dir
from tabench_dsl.core.scorer import ContradictionSettings, JudgeSettings, Markers, ScorerSettings, Templates
from tabench_dsl.language.scorer import read_settings

SHIPPED = specs_dir() / "tabench-1.1"


def problems(tmp_path: Path, text: str) -> list[str]:
    file = tmp_path / "scorer.yaml"
    file.write_text(text, encoding="utf-8")
    errors: list[SpecError] = []
    settings = read_settings(text, file, errors)
    assert (settings is None) == bool(errors)
    return [f"{e.line}:{e.col}: {e.message}" for e in errors]


def test_the_shipped_scorer_reads_into_every_section() -> None:
    settings = shipped_settings()
    assert settings.name == "tabench-1.1"
    assert settings.templates == Templates("system.j2", "user.j2", "stern.j2")
    assert settings.judge == JudgeSettings(temperature=0.0, max_tokens=300)
    assert settings.facets == ("extra_correct_info", "missing_minor", "erroneous_assertion")
    assert settings.builtin == Markers()
    assert "correct" in settings.contradiction.pass_shaped and settings.contradiction.window == 3
    assert len(settings.injection) >= 5


def test_an_empty_scorer_takes_every_default(tmp_path: Path) -> None:
    assert problems(tmp_path, "") == []
    errors: list[SpecError] = []
    assert read_settings("{}\n", tmp_path / "s.yaml", errors) == ScorerSettings()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("contradictoin:\n  window: 2\n", ["1:1: unknown scorer section 'contradictoin'"]),
        (
            "contradiction:\n  window: 2\n  pass_phrases: [ok]\n",
            ["3:3: unknown contradiction key 'pass_phrases'"],
        ),
        # `- no` is YAML's False: dropping it silently would disable a negator
        (
            "contradiction:\n  negators:\n    - not\n    - no\n",
            ["4:7: contradiction.negators: entry False is not a string"],
        ),
        (
            "contradiction:\n  fail_shaped: ['wrong(']\n",
            ["2:17: contradiction.fail_shaped: bad pattern 'wrong(': missing ), unterminated subpattern"],
        ),
        ("contradiction:\n  window: -1\n", ["2:11: contradiction.window must be a whole number >= 0"]),
        ("contradiction:\n  window: '3'\n", ["2:11: contradiction.window must be a whole number >= 0"]),
        ("contradiction: [a]\n", ["1:16: scorer contradiction must be a mapping"]),
        (
            "injection:\n  - 'you are now'\n  - '[a-'\n",
            ["3:5: injection: bad pattern '[a-': unterminated character set"],
        ),
        ("injection: you are now\n", ["1:12: injection must be a list of patterns"]),
        (
            "templates:\n  system: ../../etc/passwd\n",
            ["2:11: templates.system must be a file name in the scorer folder"],
        ),
        ("templates:\n  sytem: s.j2\n", ["2:3: unknown templates key 'sytem'"]),
        (
            "judge:\n  temperature: hot\n  max_tokens: 0\n",
            [
                "2:16: judge.temperature must be a number from 0 to 2",
                "3:15: judge.max_tokens must be a whole number >= 1",
            ],
        ),
        ("facets: [a, a]\n", ["1:9: scorer facets must be a list of names"]),
        ("builtin:\n  question_start: [a]\n", ["2:19: builtin question_start must be a one-line text"]),
        ("name: [x]\n", ["1:7: scorer name must be a text"]),
        ("- a\n", ["1:1: scorer settings must be a mapping"]),
        (
            "name: tabench\nfacets: [a\x1b]\n",
            ["2:11: invalid YAML: character U+001B is not allowed in YAML text"],
        ),
        ("judge: {temperature: 0\n", ["1:8: invalid YAML: expected ',' or '}', but got '<stream end>'"]),
    ],
)
def test_each_problem_is_reported_where_it_is(tmp_path: Path, text: str, expected: list[str]) -> None:
    assert problems(tmp_path, text) == expected


def test_every_problem_at_once(tmp_path: Path) -> None:
    text = "judge:\n  max_tokens: x\ncontradiction:\n  neutral: ['(']\ninjection: ['[']\nextra: 1\n"
    assert [p.split(": ", 1)[0] for p in problems(tmp_path, text)] == ["2:15", "4:13", "5:13", "6:1"]


def copy_scorer(battery: Path, text: str) -> Path:
    folder = battery / "scorer"
    shutil.copytree(SHIPPED, folder)
    original = (folder / "scorer.yaml").read_text(encoding="utf-8")
    (folder / "scorer.yaml").write_text(original + text, encoding="utf-8")
    manifest = battery / "battery.yaml"
    manifest.write_text(manifest.read_text().replace("scorer: tabench-1.1", "scorer: scorer"))
    return folder / "scorer.yaml"


def test_a_bad_injection_pattern_stops_lint_compile_and_grade_at_its_line(tmp_path: Path, capsys) -> None:
    battery = write_battery(tmp_path)
    settings = copy_scorer(battery, "  - '(?P<x'\n")  # a last entry of the shipped `injection:` list
    line = len(settings.read_text().splitlines())
    where = f"{settings.resolve()}:{line}:5: injection: bad pattern '(?P<x'"
    answers = tmp_path / "answers.jsonl"
    answers.write_text('{"system": "a", "question": "h01", "answer": "x"}\n')
    for argv in (
        ["lint", str(battery)],
        ["compile", str(battery)],
        ["grade", str(battery), "--answers", str(answers), "--out", str(tmp_path / "r.jsonl")],
    ):
        assert main(argv) == 2, argv
        out = capsys.readouterr()
        assert where in out.out + out.err, (argv, out)
    assert not (tmp_path / "r.jsonl").exists()


def test_a_scorer_with_its_own_phrase_lists_grades_with_them(tmp_path: Path) -> None:
    from tabench_dsl.grading.contradiction import ContradictionCheck

    settings = ContradictionSettings(pass_shaped=("bang on",), negators=("not",))
    check = ContradictionCheck.from_settings(settings)
    assert check.is_pass_shaped("Bang on.") and not check.is_pass_shaped("Not bang on.")
