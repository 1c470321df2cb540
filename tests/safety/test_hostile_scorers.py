"""A battery's own scorer cannot hang or exhaust the machine: its regular expressions, its
templates, its YAML and its rubric lines, each bounded with a positioned error.

Where time or memory is the point the command runs in a subprocess (under RLIMIT_AS, or with a
timeout that the unbounded code would not meet).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.helpers_grading import write_battery
from support.limited_run import ROOT, limited

from tabench_dsl.cli import main
from tabench_dsl.store.results import iter_records


def grade_argv(work: Path, *answers: Path) -> list[str]:
    argv = ["grade", str(work / "battery"), "--out", str(work / "results.jsonl"), "--no-cache"]
    for path in answers:
        argv += ["--answers", str(path)]
    return argv


# 7. A battery's own scorer cannot hang or exhaust the machine ---------------------------------

SHIPPED_SCORER = ROOT / "specs" / "tabench-1.1"


def own_scorer(work: Path, extra: str) -> Path:
    """The shipped scorer copied into the battery, `extra` appended to its scorer.yaml."""
    import shutil

    battery = work / "battery"
    folder = battery / "scorer"
    shutil.copytree(SHIPPED_SCORER, folder)
    settings = folder / "scorer.yaml"
    settings.write_text(settings.read_text(encoding="utf-8") + extra, encoding="utf-8")
    manifest = battery / "battery.yaml"
    manifest.write_text(manifest.read_text().replace("scorer: tabench-1.1", "scorer: scorer"))
    return settings


def test_a_backtracking_injection_pattern_runs_in_linear_time(work: Path) -> None:
    write_battery(work, t1=False)
    own_scorer(work, "  - '^(a+)+$'\n")  # Python's engine: 2**44 steps on the answer below
    path = work / "answers.jsonl"
    path.write_text(json.dumps({"system": "s", "question": "h03", "answer": "a" * 44 + "!"}) + "\n")
    done = subprocess.run(
        [sys.executable, "-m", "tabench_dsl", *grade_argv(work, path)],
        cwd=work,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    (record,) = list(iter_records(work / "results.jsonl"))
    assert record.injection_suspect is False


@pytest.mark.parametrize(("pattern", "why"), [(r"(\w+) \1", "invalid escape"), ("x(?=y)", "invalid perl")])
def test_an_injection_pattern_re2_cannot_run_is_a_lint_error_at_its_line(
    work: Path, capsys, pattern: str, why: str
) -> None:
    write_battery(work)
    settings = own_scorer(work, f"  - '{pattern}'\n")
    line = len(settings.read_text().splitlines())
    assert main(["lint", str(work / "battery")]) == 2
    out = capsys.readouterr()
    text = out.out + out.err
    assert f"{settings.resolve()}:{line}:5: injection: pattern {pattern!r} cannot be used" in text, text
    assert why in text and "linear time" in text


@pytest.mark.parametrize(
    ("expression", "fault"),
    [
        ('{{ "x" * 10**10 }}', "'*' would build 10,000,000,000"),
        ('{{ ["x"] * 10**10 }}', "'*' would build"),
        ("{{ 2 ** 100000000 }}", "'**' would compute a number over 256 bits"),
        (
            '{% set ns = namespace(s="x") %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}',
            "'~' would build",
        ),
        ('{{ "x"|center(1000000000) }}', "was given 1000000000"),
        ('{{ "x".center(1000000000) }}', "a call was given 1000000000"),
        (
            "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}",
            "more than 2,000,000 steps",
        ),
    ],
)
def test_a_template_cannot_build_too_much_or_run_too_long(work: Path, expression: str, fault: str) -> None:
    write_battery(work)
    own_scorer(work, "")
    system = work / "battery" / "scorer" / "system.j2"
    text = system.read_text(encoding="utf-8")
    system.write_text(text + "\n" + expression + "\n", encoding="utf-8")
    line = len((text + "\n" + expression).splitlines())
    done = limited(["compile", str(work / "battery")], work)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert f"system.j2:{line}:" in done.stderr and fault in done.stderr, done.stderr
    assert "template over a limit" in done.stderr


def test_a_rubric_line_over_the_limit_is_a_positioned_error(work: Path, capsys) -> None:
    battery = write_battery(work)
    rubric = battery / "questions.rubric"
    text = rubric.read_text(encoding="utf-8")
    rubric.write_text(text + 'note "' + "x" * 200_000 + '"\n', encoding="utf-8")
    line = len(text.splitlines()) + 1
    assert main(["lint", str(battery)]) == 2
    out = capsys.readouterr()
    assert f"{rubric.resolve()}:{line}:65537: line {line} is 200,007 characters long" in out.out + out.err


BILLION_LAUGHS = "".join(
    f"{name}: &{name} [{', '.join(['*' + prev] * 9)}]\n"
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True)
)


def test_yaml_alias_expansion_is_capped_with_a_positioned_error(work: Path) -> None:
    battery = write_battery(work)
    manifest = battery / "battery.yaml"
    manifest.write_text(
        manifest.read_text() + "x-laughs:\n  a: &a [lol]\n" + _indent(BILLION_LAUGHS), encoding="utf-8"
    )
    done = limited(["lint", str(battery)], work)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert "values once its aliases are expanded" in done.stdout + done.stderr
    assert f"{manifest.resolve()}:" in done.stdout + done.stderr


def _indent(text: str) -> str:
    return "".join("  " + line + "\n" for line in text.splitlines())


SLOW_PHRASE_CHECK = """
import sys
from tabench_dsl.grading.contradiction import ContradictionCheck
from tabench_dsl.language.battery import load_battery
from tabench_dsl.language.render import compile_battery
compiled = compile_battery(load_battery(sys.argv[1]))
check = ContradictionCheck.from_settings(compiled.settings.contradiction)
print(check.conclusion("a" * 20 + " is wrong"), check.conclusion("a" * 60 + " is wrong"))
"""


def test_a_backtracking_contradiction_phrase_costs_at_most_its_budget(work: Path) -> None:
    """`(a|aa)+b` backtracks on `regex` too (`(a+)+b` it fails at once): on 60 `a`s, for hours. A
    reason the budget cuts short concludes neither, where read whole it would conclude "fail";
    20 `a`s are read whole. How long the budget lets it run is bench/hostile_bench.py's figure."""
    write_battery(work)
    settings = own_scorer(work, "")
    text = settings.read_text(encoding="utf-8")
    settings.write_text(
        text.replace("  pass_shaped:\n", "  pass_shaped:\n    - '(a|aa)+b'\n", 1), encoding="utf-8"
    )
    done = subprocess.run(
        [sys.executable, "-c", SLOW_PHRASE_CHECK, str(work / "battery")],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,  # a hang, not a figure: unbudgeted, the phrase would take hours
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["fail", "None"]


def test_a_scorer_cannot_declare_its_own_phrases_trusted(work: Path, capsys) -> None:
    """`trusted` (run the phrases on Python's engine, without their budget) is the loader's word for
    a shipped scorer; a battery's own scorer.yaml saying it is an unknown key, not a way around the
    budget."""
    write_battery(work)
    settings = own_scorer(work, "")
    text = settings.read_text(encoding="utf-8")
    settings.write_text(
        text.replace("contradiction:\n", "contradiction:\n  trusted: [yes]\n", 1), encoding="utf-8"
    )
    assert main(["lint", str(work / "battery")]) == 2
    err = capsys.readouterr().out
    assert "unknown contradiction key 'trusted'" in err
