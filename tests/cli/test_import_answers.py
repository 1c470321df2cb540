"""`grade --answers` of OpenAI's hosted Evals output items (tests/data/imports/openai_hosted, see
its NOTICE.md): the answers name the questions `tabench import openai-evals` made of the same file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tabench_dsl.cli import main
from tabench_dsl.grading.answers import AnswerProblem, AnswerReader
from tabench_dsl.language.battery import load_battery
from tabench_dsl.store.results import iter_records

HOSTED = Path(__file__).resolve().parent.parent / "data" / "imports" / "openai_hosted"
OUTPUT_ITEMS = HOSTED / "output_items"


@pytest.fixture(autouse=True)
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("TABENCH_CACHE", "OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def grade(battery: Path, answers: Path, out: Path, status: int) -> None:
    argv = ["grade", str(battery), "--answers", str(answers), "--judge", "builtin", "--out", str(out)]
    assert main(argv) == status


def test_the_apis_output_items_are_graded_as_the_runs_answers(tmp_path: Path, capsys) -> None:
    listed = HOSTED / "run-output-items.json"  # the API reference's output items of one run
    battery = tmp_path / "headlines"
    assert (
        main(["import", "openai-evals", str(listed), str(HOSTED / "eval.json"), "--out", str(battery)]) == 0
    )
    grade(battery, listed, tmp_path / "r.jsonl", 0)
    [output] = json.loads(listed.read_text(encoding="utf-8"))["data"]
    [record] = list(iter_records(tmp_path / "r.jsonl"))
    assert (record.system, record.question, record.answer) == (
        output["run_id"],
        f"run-output-items.{output['datasource_item_id'] + 1}",
        output["sample"]["output"][0]["content"],
    )
    assert [q.id for q in load_battery(battery).questions] == [record.question]
    assert (record.tier, record.verdict) == ("match", "pass")  # the eval's string_check, as a match check
    assert "Traceback" not in capsys.readouterr().err


def test_the_dashboards_export_grades_each_run_and_names_a_row_without_an_answer(
    tmp_path: Path, capsys
) -> None:
    # One item, two runs: the first ended in an error, the second answered. The export holds no
    # eval object: the criterion is this test's, written as the API took it.
    runs = OUTPUT_ITEMS / "openai-evals-multi-run-items.jsonl"
    criterion = tmp_path / "criterion.json"
    grader = {"type": "string_check", "name": "label", "operation": "eq", "input": "{{ sample.output_text }}"}
    criterion.write_text(json.dumps(grader | {"reference": "{{ item.correct_label }}"}), encoding="utf-8")
    battery = tmp_path / "tickets"
    # The failed run's row sent no prompt: the item is written from the other run's row, no skip.
    assert main(["import", "openai-evals", str(runs), str(criterion), "--out", str(battery)]) == 0
    said = capsys.readouterr()
    assert "a row of another run for an item already read -> the same question: 1" in said.out
    assert "skipped" not in said.out + said.err
    grade(battery, runs, tmp_path / "r.jsonl", 1)  # one row not graded
    records = list(iter_records(tmp_path / "r.jsonl"))
    assert [(r.system, r.question, r.answer, r.verdict) for r in records] == [
        ("evalrun_pass_fixture", "openai-evals-multi-run-items.1", "Hardware", "pass")
    ]
    err = capsys.readouterr().err
    assert f"{runs}:1: the sample ended in an error (Response input item missing role); not graded" in err


def test_an_export_without_samples_says_so_for_each_row() -> None:
    items = OUTPUT_ITEMS / "openai-evals-items.jsonl"  # rows with grades, and no sample
    problems: list[AnswerProblem] = []
    assert (
        list(
            AnswerReader(items, {"openai-evals-items.11", "openai-evals-items.4"}, on_problem=problems.append)
        )
        == []
    )
    assert [(p.line, p.message) for p in problems] == [
        (n, "no sample: the export holds no output for this row; not graded") for n in (1, 2)
    ]


def test_output_items_that_are_not_json_are_named_not_read(tmp_path: Path) -> None:
    broken = tmp_path / "items.json"
    broken.write_text(
        '{"object": "list", "data": [{"object": "eval.run.output_item", "run_id": ', encoding="utf-8"
    )
    problems: list[AnswerProblem] = []
    assert list(AnswerReader(broken, {"items.1"}, on_problem=problems.append)) == []
    [problem] = problems
    assert problem.message.startswith("not graded, not hosted Evals output items it is safe to read: ")


def test_output_items_graded_against_a_battery_of_another_file_say_what_to_do(tmp_path: Path, capsys) -> None:
    # The battery made of the run (`run.N`), the answers of its output items (`run-output-items.N`).
    listed = HOSTED / "run-output-items.json"
    battery = tmp_path / "headlines"
    argv = [
        "import",
        "openai-evals",
        str(HOSTED / "run.json"),
        str(HOSTED / "eval.json"),
        "--out",
        str(battery),
    ]
    assert main(argv) == 0
    capsys.readouterr()
    grade(battery, listed, tmp_path / "r.jsonl", 1)
    err = capsys.readouterr().err
    assert f"{listed}:12: unknown question 'run-output-items.6'" in err  # its datasource_item's line
    assert (
        f"{listed}:1: no question of the battery is named as this file names its items "
        "('run-output-items.6': the item's id, else run-output-items.N): import this file to grade its "
        "answers (`tabench import openai-evals run-output-items.json EVAL.json --out DIR`)"
    ) in err
