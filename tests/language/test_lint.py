"""`tabench lint`: every error and warning of a battery in one run, the summary, the exit status."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from support.battery_files import write_battery

from tabench_dsl.cli import main
from tabench_dsl.language.lint import lint_battery

MANIFEST = """\
    name: memos
    scorer: tabench-1.1
    policies: [memos.policy]
    rubrics: ["*.rubric"]
"""

POLICY = """\
    S1: Answer from the memos only.
    Be brief.
"""

RUBRIC = """\
    question h01 {
      prompt "Which stages make up the pipeline?"
      gold "Ingest, Index"
      accept " Ingest, Index "
      exemplar correct "Ingest, Index." why "both named"
      exemplar partial "Ingest, Index and Summarize." why "adds a stage"
      exemplar incorrect "Ingest and Index? No." why "takes it back" expect pass
    }
    question h02 {
      prompt "Who wrote the memo?"
      gold "Ada"
    }
    question h03 {
      prompt "Which stages make up the pipeline?"
      gold "Ingest, Index"
      exemplar incorrect "Ingest, Index: no, neither." why "denies both"
      t1 off
    }
"""

T1_HINT = (
    "hint: T1 would pass such answers without the judge; "
    "write `t1 off` in the question to send them to the judge"
)

WARNINGS = f"""\
bat/a.rubric:4:3: warning: accepted variant equals the gold answer [W103]
      accept " Ingest, Index "
      ^
hint: remove it: the gold answer is always accepted
bat/a.rubric:6:3: warning: T1 would pass this partial exemplar, which expects fail [W104]
      exemplar partial "Ingest, Index and Summarize." why "adds a stage"
      ^
{T1_HINT}
bat/a.rubric:9:1: warning: question 'h02' has no exemplars [W102]
    question h02 {{
    ^
hint: graded examples (exemplar correct|partial|incorrect) show the judge where the line is
bat/memos.policy:2:1: warning: rule has no id [W101]
    Be brief.
    ^
hint: write it as `S<n>: text` so reviews and results can name it
"""


def test_all_warnings_in_one_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    write_battery(tmp_path, {"battery.yaml": MANIFEST, "memos.policy": POLICY, "a.rubric": RUBRIC})
    assert main(["lint", "bat"]) == 0
    out, err = capsys.readouterr()
    assert (out, err) == (WARNINGS + "0 errors, 4 warnings\n", "")


def test_errors_and_warnings_together(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    write_battery(
        tmp_path,
        {
            "battery.yaml": MANIFEST,
            "memos.policy": POLICY,
            "a.rubric": RUBRIC,
            "b.rubric": 'question h04 {\n  prompt "p"\n  glod "g"\n}\n',
        },
    )
    assert main(["lint", "bat"]) == 2
    out, err = capsys.readouterr()
    errors = textwrap.dedent("""\
        bat/b.rubric:1:1: question 'h04' has no gold
            question h04 {
            ^
        hint: every question needs prompt "..." and gold "..."
        bat/b.rubric:3:3: unknown field 'glod'
              glod "g"
              ^
        hint: fields are prompt, gold, accept, trap, structure, scoring, guide, facet, exemplar, t1, tags, match
        """)  # noqa: E501
    head, _, tail = WARNINGS.partition("bat/memos.policy")
    assert (out, err) == (head + errors + "bat/memos.policy" + tail + "2 errors, 4 warnings\n", "")


def test_t1_off_for_the_battery_silences_the_t1_warning(tmp_path: Path) -> None:
    battery = write_battery(
        tmp_path,
        {
            "battery.yaml": MANIFEST + "    t1: false\n",
            "memos.policy": "S1: x\n",
            "a.rubric": RUBRIC,
        },
    )
    problems = [(p.severity, p.line, p.message) for p in lint_battery(battery)]
    assert problems == [
        ("warning", 4, "accepted variant equals the gold answer"),
        ("warning", 9, "question 'h02' has no exemplars"),
    ]


def test_one_of_each_is_counted_in_singular(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    write_battery(
        tmp_path,
        {
            "battery.yaml": MANIFEST,
            "memos.policy": "S1: x\nS1: y\n",
            "a.rubric": 'question q {\n  prompt "p"\n  gold "g"\n}\n',
        },
    )
    assert main(["lint", "bat"]) == 2
    assert capsys.readouterr().out.splitlines()[-1] == "1 error, 1 warning"
