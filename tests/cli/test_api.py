"""The public Python API (`tabench_dsl`'s verbs) does what the commands of the same name do.

Each verb is checked against the CLI on the same inputs: the same prompts as `tabench compile`, the
same records as `tabench grade`, the same totals as `tabench totals --json`. The example of docs/api.md
is run as written.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest
from support.helpers_grading import FAIL, PASS, write_battery

import tabench_dsl as tb
from tabench_dsl.cli import main
from tabench_dsl.core.errors import SpecErrors, UsageError
from tabench_dsl.review.totals import totals_json

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "lark-internals"


def test_the_verbs_types_and_errors_are_the_public_names() -> None:
    assert sorted(n for n in tb.__all__ if n != "__version__") == [
        "Answer",
        "Battery",
        "CompiledBattery",
        "GradingOptions",
        "JudgeError",
        "Price",
        "Record",
        "SpecError",
        "SpecErrors",
        "TabenchError",
        "Totals",
        "TransportError",
        "UsageError",
        "agrade",
        "compile_battery",
        "grade",
        "lint_battery",
        "load_battery",
        "read_results",
        "totals",
    ]
    with pytest.raises(AttributeError):
        tb.no_such_verb  # noqa: B018


def test_each_public_name_is_the_object_the_layers_use() -> None:
    from tabench_dsl import api
    from tabench_dsl.core import compiled, errors, nodes, price, records
    from tabench_dsl.grading import session
    from tabench_dsl.review import totals

    homes = {"api": api, "core.records": records, "core.nodes": nodes, "core.compiled": compiled}
    homes |= {"core.errors": errors, "core.price": price, "grading.session": session, "review.totals": totals}
    for name in tb.__all__:
        if name != "__version__":
            found = [module for module in homes.values() if getattr(module, name, None) is getattr(tb, name)]
            assert found, name
    assert issubclass(tb.SpecErrors, tb.TabenchError) and issubclass(tb.TransportError, tb.JudgeError)


def test_import_tabench_dsl_stays_light() -> None:
    heavy = ("aiohttp", "lark", "tabench_dsl.grading", "tabench_dsl.review")
    code = f"import sys, tabench_dsl; print(sorted(m for m in sys.modules if m.startswith({heavy!r})))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_compile_gives_the_prompts_tabench_compile_prints(capsys) -> None:
    compiled = tb.compile_battery(EXAMPLE)
    assert main(["compile", str(EXAMPLE), "--json"]) == 0
    printed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(p["question"], p["system"], p["sha256"]) for p in printed] == [
        (q.id, q.system, q.sha256) for q in compiled.questions.values()
    ]
    assert tb.compile_battery(tb.load_battery(EXAMPLE)) == compiled


def test_load_raises_every_problem_and_lint_returns_them(tmp_path: Path) -> None:
    battery = write_battery(tmp_path)
    rubric = next(battery.glob("*.rubric"))
    rubric.write_text(rubric.read_text().replace("gold ", "gloden ", 1))
    with pytest.raises(SpecErrors) as raised:
        tb.load_battery(battery)
    problems = tb.lint_battery(battery)
    errors = [p.render() for p in problems if p.severity == "error"]
    assert [p.render() for p in raised.value.errors] == errors
    assert any("unknown field 'gloden'" in p.render() for p in problems)
    with pytest.raises(UsageError):
        tb.load_battery(tmp_path / "nowhere")


def test_grade_records_what_tabench_grade_records(tmp_path: Path, capsys) -> None:
    answers = EXAMPLE / "answers.jsonl"
    records = tb.grade(EXAMPLE, answers)
    out = tmp_path / "cli.jsonl"
    assert main(["grade", str(EXAMPLE), "--answers", str(answers), "--out", str(out), "--no-cache"]) == 0

    def key(r):
        return (r.system, r.question, r.tier, r.verdict, r.cause, r.reason, r.prompt_sha256)

    assert sorted(map(key, records)) == sorted(map(key, tb.read_results(out)))
    assert len(records) == sum(1 for line in answers.read_text().splitlines() if line.strip())
    capsys.readouterr()
    assert main(["totals", str(out), "--json"]) == 0
    assert json.loads(totals_json(tb.totals(records))) == json.loads(capsys.readouterr().out)


async def test_agrade_against_a_judge_server_appends_to_out(tmp_path: Path, judge_server) -> None:
    battery = write_battery(tmp_path, t1=False)
    server = await judge_server([PASS, FAIL])
    answers = [
        {"system": "a", "question": "h01", "answer": "first"},
        tb.Answer(system="b", question="h01", answer="second"),
    ]
    out = tmp_path / "results.jsonl"
    records = await tb.agrade(
        battery, answers, tb.GradingOptions(judge=server.url, model="m"), out=out, env={}
    )
    assert sorted(r.verdict for r in records) == ["fail", "pass"]
    assert [msgspec.json.encode(r) for r in tb.read_results(out)] == [msgspec.json.encode(r) for r in records]
    with pytest.raises(UsageError, match="names no question"):
        await tb.agrade(battery, [{"system": "a", "question": "nope", "answer": "x"}], env={})
    not_results = tmp_path / "notes.txt"
    not_results.write_text("my notes\n")
    with pytest.raises(UsageError):
        await tb.agrade(
            battery, answers, tb.GradingOptions(judge=server.url, model="m"), out=not_results, env={}
        )
    assert not_results.read_text() == "my notes\n"


def test_the_api_page_example_runs_as_written(tmp_path: Path) -> None:
    page = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    found = re.search(r"<!-- api-example -->\n```python\n(.*?)```", page, re.S)
    assert found, "docs/api.md has no api-example block"
    script = tmp_path / "example.py"
    script.write_text(found[1], encoding="utf-8")
    (tmp_path / "examples").symlink_to(ROOT / "examples")  # the example's paths are the checkout's
    keys = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "TABENCH_CACHE")
    env = {k: v for k, v in os.environ.items() if k not in keys}
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr
    assert "lark-internals" in done.stdout and "score" in done.stdout


def test_the_library_resumes_and_slices_as_the_command_does(tmp_path: Path, capsys) -> None:
    # The same answers graded step by step by `tabench grade` into one file and by `tb.grade` into
    # another: each step's new records are the same, and the records `tb.grade` returns are those
    # it appended. Four answers of agent-c are left out, for --missing-as-fail to record.
    lines = [line for line in (EXAMPLE / "answers.jsonl").read_text().splitlines() if line.strip()]
    rows = [json.loads(line) for line in lines]
    kept = [line for line, row in zip(lines, rows, strict=True) if row["system"] != "agent-c"]
    kept += [line for line, row in zip(lines, rows, strict=True) if row["system"] == "agent-c"][4:]
    answers = tmp_path / "answers.jsonl"
    answers.write_text("\n".join(kept) + "\n")
    cli_out, api_out = tmp_path / "cli.jsonl", tmp_path / "api.jsonl"
    questions = sorted({row["question"] for row in rows})[:5]
    steps: list[tuple[dict, list[str], bool]] = [
        ({"limit": 7}, ["--limit", "7"], False),
        (
            {"resume": True, "systems": ["agent-b", "agent-c"], "questions": questions, "limit": 4},
            ["--resume", "--system", "agent-b", "--system", "agent-c"]
            + [flag for q in questions for flag in ("--question", q)]
            + ["--limit", "4"],
            True,  # the library given the answers themselves, not their file
        ),
        ({"resume": True, "missing_as_fail": True}, ["--resume", "--missing-as-fail"], False),
    ]

    def key(r):
        return (r.system, r.question, r.tier, r.verdict, r.cause, r.reason, r.prompt_sha256)

    for plan, flags, given in steps:
        before = len(list(tb.read_results(api_out))) if api_out.exists() else 0
        source = [json.loads(line) for line in kept] if given else answers
        records = tb.grade(EXAMPLE, source, out=api_out, **plan)
        assert list(map(key, records)) == list(map(key, list(tb.read_results(api_out))[before:]))
        cli_before = len(list(tb.read_results(cli_out))) if cli_out.exists() else 0
        argv = ["grade", str(EXAMPLE), "--answers", str(answers), "--out", str(cli_out), "--no-cache"]
        assert main([*argv, *flags]) == 0
        written = list(tb.read_results(cli_out))[cli_before:]
        assert sorted(map(key, records)) == sorted(map(key, written))
        assert records
    capsys.readouterr()
    left_out = [row["question"] for row in rows if row["system"] == "agent-c"][:4]
    missing = [(r.system, r.question) for r in tb.read_results(api_out) if r.cause == "missing"]
    assert sorted(missing) == sorted(("agent-c", question) for question in left_out)
    assert sorted(map(key, tb.read_results(api_out))) == sorted(map(key, tb.read_results(cli_out)))
