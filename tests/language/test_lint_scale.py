"""Lint that scales to a battery of thousands of questions: warning codes turned off (the manifest's
`lint: ignore`, `--ignore`) or shown as a count (`lint: count`, `--count`), and text output that
summarises a code found more than 20 times after its first few. JSON keeps every problem that is
not turned off."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.battery_files import write_battery

import tabench_dsl as tb
from tabench_dsl.cli import main
from tabench_dsl.cli.lint_cmd import SHOWN_FIRST, SUMMARY_OVER
from tabench_dsl.core.errors import UsageError

MANIFEST = """\
    name: memos
    scorer: tabench-1.1
    policies: [memos.policy]
    rubrics: ["*.rubric"]
"""


def questions(n: int) -> str:
    """`n` questions, none with exemplars (W102 each); the first has a variant equal to its gold (W103)."""
    out = ['question q0 {\n  prompt "p"\n  gold "g"\n  accept "g"\n}\n']
    out += [f'question q{i} {{\n  prompt "p"\n  gold "g"\n}}\n' for i in range(1, n)]
    return "".join(out)


def lint(tmp_path: Path, capsys, n: int, *argv: str, manifest_extra: str = "") -> tuple[int, str]:
    write_battery(
        tmp_path,
        {"battery.yaml": MANIFEST + manifest_extra, "memos.policy": "S1: x\n", "a.rubric": questions(n)},
    )
    status = main(["lint", "bat", *argv])
    out, err = capsys.readouterr()
    assert err == ""
    return status, out


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def test_up_to_twenty_of_a_code_are_all_shown_with_their_code(tmp_path: Path, capsys) -> None:
    status, out = lint(tmp_path, capsys, SUMMARY_OVER)
    assert status == 0
    assert out.count("has no exemplars [W102]\n") == SUMMARY_OVER
    assert "more like this" not in out
    assert out.endswith(f"0 errors, {SUMMARY_OVER + 1} warnings\n")


def test_more_than_twenty_of_a_code_show_the_first_few_and_one_line(tmp_path: Path, capsys) -> None:
    status, out = lint(tmp_path, capsys, 1200)
    assert status == 0
    assert out.count("has no exemplars [W102]\n") == SHOWN_FIRST
    assert out.count("accepted variant equals the gold answer [W103]\n") == 1  # a code found once: shown
    more = 1200 - SHOWN_FIRST
    assert out.endswith(
        f"W102: {more:,} more like this (a question without exemplars); turn them off with "
        "`lint: {ignore: [W102]}` in battery.yaml or --ignore W102\n"
        "0 errors, 1201 warnings\n"
    )


def test_json_keeps_every_problem(tmp_path: Path, capsys) -> None:
    _, out = lint(tmp_path, capsys, 30, "--format", "json")
    document = json.loads(out)
    assert [p["code"] for p in document["problems"]].count("W102") == 30
    assert document["warnings"] == 31


@pytest.mark.parametrize(
    ("argv", "extra"),
    [
        ((), "    lint: {ignore: [W102]}\n"),
        (("--ignore", "W102"), ""),
        (("--ignore", "W102", "--ignore", "W101"), ""),
    ],
)
def test_an_ignored_code_is_left_out_everywhere(
    tmp_path: Path, capsys, argv: tuple[str, ...], extra: str
) -> None:
    status, out = lint(tmp_path, capsys, 30, *argv, manifest_extra=extra)
    assert (status, "W102" in out) == (0, False)
    assert out.endswith("0 errors, 1 warning\n")  # W103 stays
    _, out = lint(tmp_path, capsys, 30, *argv, "--format", "json", manifest_extra=extra)
    assert [p["code"] for p in json.loads(out)["problems"]] == ["W103"]


@pytest.mark.parametrize(
    ("argv", "extra"), [((), "    lint:\n      count: W102\n"), (("--count", "W102"), "")]
)
def test_a_counted_code_is_one_line_in_text_and_every_problem_in_json(
    tmp_path: Path, capsys, argv: tuple[str, ...], extra: str
) -> None:
    _, out = lint(tmp_path, capsys, 3, *argv, manifest_extra=extra)
    assert "has no exemplars" not in out
    assert out.endswith(
        "W102: 3 warnings, counted only (a question without exemplars)\n0 errors, 4 warnings\n"
    )
    _, out = lint(tmp_path, capsys, 3, *argv, "--format", "json", manifest_extra=extra)
    assert [p["code"] for p in json.loads(out)["problems"]].count("W102") == 3


@pytest.mark.parametrize("code", ["E201", "W999", "w102"])
def test_only_a_warning_code_may_be_ignored(tmp_path: Path, capsys, code: str) -> None:
    write_battery(tmp_path, {"battery.yaml": MANIFEST, "memos.policy": "S1: x\n", "a.rubric": questions(1)})
    assert main(["lint", "bat", "--ignore", code]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(f"tabench: error: '{code}' is not a warning code")
    assert "Traceback" not in err


def test_the_library_ignores_as_the_command_does(tmp_path: Path) -> None:
    battery = write_battery(
        tmp_path, {"battery.yaml": MANIFEST, "memos.policy": "S1: x\n", "a.rubric": questions(3)}
    )
    assert [p.message for p in tb.lint_battery(battery, ignore=["W102"])] == [
        "accepted variant equals the gold answer"
    ]
    assert len(tb.lint_battery(battery)) == 4
    with pytest.raises(UsageError, match="'E201' is not a warning code"):
        tb.lint_battery(battery, ignore=["E201"])
