"""Scorer templates are data: they render in Jinja2's immutable sandbox, and a template that reaches
for Python's internals is a positioned error from lint, compile and grade alike, before it runs.

Each test copies the shipped scorer into a battery that names it by path (a scorer shared with a
battery, as someone else would write it) and changes one template.
"""

from __future__ import annotations

import os
import shutil
import textwrap
from pathlib import Path

import pytest

from tabench_dsl.cli import main

SHIPPED = Path(__file__).resolve().parents[2] / "specs" / "tabench-1.1"
RUBRIC = """\
question q1 {
  prompt "Which stages?"
  gold "Ingest, Index"
  exemplar correct "Ingest and Index." why "both named"
}
"""
HINT = (
    "hint: scorer templates render in a sandbox: they use the values they are given, never an attribute "
    "that starts with '_' or reaches Python's internals"
)


def write_battery(root: Path, **templates: str) -> Path:
    """A battery in `root/bat` whose scorer (a copy of the shipped one at `bat/scorer`) has each
    template of `templates` (part -> text) appended to its own text."""
    battery = root / "bat"
    shutil.copytree(SHIPPED, battery / "scorer")
    for part, text in templates.items():
        with open(battery / "scorer" / f"{part}.j2", "a", encoding="utf-8") as f:
            f.write(text)
    (battery / "battery.yaml").write_text("name: b\nscorer: scorer\nrubrics: [q.rubric]\n", encoding="utf-8")
    (battery / "q.rubric").write_text(RUBRIC, encoding="utf-8")
    (root / "answers.jsonl").write_text('{"system": "s", "question": "q1", "answer": "Ingest"}\n')
    return battery


def line_count(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def run_everywhere(battery: Path, root: Path, capsys) -> list[tuple[int, str]]:
    """(exit status, output) of lint, compile and grade on `battery`, in that order."""
    outcomes = []
    for argv in (
        ["lint", str(battery)],
        ["compile", str(battery)],
        [
            "grade",
            str(battery),
            "--answers",
            str(root / "answers.jsonl"),
            "--judge",
            "builtin",
            "--no-cache",
            "--out",
            str(root / "results.jsonl"),
        ],
    ):
        status = main(argv)
        out, err = capsys.readouterr()
        outcomes.append((status, out + err))
    return outcomes


def test_a_template_reaching_python_internals_never_runs(tmp_path: Path, capsys) -> None:
    marker = tmp_path / "PWNED"
    battery = write_battery(
        tmp_path, system="{{ cycler.__init__.__globals__.os.popen('touch " + str(marker) + "').read() }}\n"
    )
    system = Path(os.path.realpath(battery / "scorer" / "system.j2"))
    line = line_count(system)
    source = f"{{{{ cycler.__init__.__globals__.os.popen('touch {marker}').read() }}}}"
    expected = (
        f"{system}:{line}:11: unsafe template: attribute '__init__' is not available to templates\n"
        f"    {source}\n"
        f"              ^\n"
        f"{HINT}\n"
    )
    lint, compiled, graded = run_everywhere(battery, tmp_path, capsys)
    assert lint == (2, expected + "1 error, 0 warnings\n")
    assert compiled == (2, expected)
    assert graded == (2, expected)
    assert not marker.exists()
    assert not (tmp_path / "results.jsonl").exists()


@pytest.mark.parametrize(
    ("text", "message", "col"),
    [
        # A name computed while rendering: only the sandbox can see it, at render time.
        (
            '{% set n = "_" ~ "_class__" %}{{ answer[n] }}\n',
            "unsafe template: access to attribute '__class__' of 'str' object is unsafe",
            1,
        ),
        # Templates cannot change the values they are given (the immutable sandbox).
        (
            "{% set seen = [] %}{{ seen.append(answer) }}\n",
            "unsafe template: access to attribute 'append' of 'list' object is unsafe",
            28,
        ),
        (
            "{{ answer|attr('__class__') }}\n",
            "unsafe template: attribute '__class__' is not available to templates",
            17,
        ),
        (
            '{{ answer["__len__"]() }}\n',
            "unsafe template: attribute '__len__' is not available to templates",
            12,
        ),
    ],
)
def test_every_way_to_an_internal_is_a_positioned_error(
    tmp_path: Path, capsys, text: str, message: str, col: int
) -> None:
    battery = write_battery(tmp_path, user=text)
    user = Path(os.path.realpath(battery / "scorer" / "user.j2"))
    expected = (
        f"{user}:{line_count(user)}:{col}: {message}\n    {text.rstrip()}\n    {' ' * (col - 1)}^\n{HINT}\n"
    )
    lint, compiled, graded = run_everywhere(battery, tmp_path, capsys)
    assert lint == (2, expected + "1 error, 0 warnings\n")
    assert compiled == (2, expected)
    assert graded == (2, expected)


def test_a_template_that_fails_is_an_error_at_its_line_not_a_traceback(tmp_path: Path, capsys) -> None:
    battery = write_battery(tmp_path, stern="{{ answer ~ (1 // 0) }}\n")
    stern = Path(os.path.realpath(battery / "scorer" / "stern.j2"))
    expected = (
        f"{stern}:{line_count(stern)}:1: template failed: ZeroDivisionError: integer division or "
        "modulo by zero\n"
        "    {{ answer ~ (1 // 0) }}\n"
        "    ^\n"
    )
    lint, compiled, graded = run_everywhere(battery, tmp_path, capsys)
    assert lint == (2, expected + "1 error, 0 warnings\n")
    assert compiled == (2, expected)
    assert graded == (2, expected)


def test_templates_are_read_from_the_scorer_folder_only(tmp_path: Path, capsys) -> None:
    (tmp_path / "secret.txt").write_text("API_KEY=sk-do-not-show\n", encoding="utf-8")
    battery = write_battery(tmp_path)
    user = battery / "scorer" / "user.j2"
    user.unlink()
    user.symlink_to(tmp_path / "secret.txt")
    scorer = os.path.realpath(battery / "scorer")
    settings = battery / "scorer" / "scorer.yaml"
    line = settings.read_text(encoding="utf-8").splitlines().index("  user: user.j2") + 1

    assert main(["compile", str(battery), "--part", "user"]) == 2
    out, err = capsys.readouterr()
    refusal = f"scorer template {scorer}/user.j2 is outside the scorer folder"
    assert (out, err) == ("", f"tabench: error: {refusal}\n")

    assert main(["lint", str(battery)]) == 2
    out, err = capsys.readouterr()
    assert out == textwrap.dedent(f"""\
        {settings}:{line}:9: scorer template {scorer}/user.j2 is outside the scorer folder
              user: user.j2
                    ^
        1 error, 0 warnings
        """)
    assert "sk-do-not-show" not in out + err


def test_lint_reports_a_missing_template_at_the_line_naming_it(tmp_path: Path, capsys) -> None:
    battery = write_battery(tmp_path)
    (battery / "scorer" / "stern.j2").unlink()
    settings = battery / "scorer" / "scorer.yaml"
    line = settings.read_text(encoding="utf-8").splitlines().index("  stern: stern.j2") + 1
    assert main(["lint", str(battery)]) == 2
    scorer = os.path.realpath(battery / "scorer")
    assert capsys.readouterr().out == textwrap.dedent(f"""\
        {settings}:{line}:10: scorer template not found: {scorer}/stern.j2
              stern: stern.j2
                     ^
        1 error, 0 warnings
        """)


def test_a_template_with_logic_still_renders_in_the_sandbox(tmp_path: Path, capsys) -> None:
    battery = write_battery(
        tmp_path,
        system="{% for word in question.gold.split(', ') %}[{{ loop.index }}:{{ word|upper }}]"
        "{% endfor %} {{ question.id }}\n",
    )
    assert main(["lint", str(battery)]) == 0
    capsys.readouterr()
    assert main(["compile", str(battery)]) == 0
    assert capsys.readouterr().out.endswith("[1:INGEST][2:INDEX] q1\n")
