"""`grade --answers out.json` reads promptfoo's results files (`promptfoo eval -o out.json`), real
ones from promptfoo's repository: before version 3 (no providers, no test indexes) and version 3
(tests/data/imports/NOTICE.md)."""

from __future__ import annotations

import json
from pathlib import Path

from tabench_dsl.grading.answers import AnswerReader
from tabench_dsl.grading.promptfoo_results import is_promptfoo_results

PROMPTFOO = Path(__file__).resolve().parent.parent / "data" / "imports" / "promptfoo"


def read(path: Path, questions: set[str]) -> tuple[list[tuple[str, str, str]], list[str]]:
    problems: list[str] = []
    reader = AnswerReader(path, questions, on_problem=lambda p: problems.append(p.render()))
    return [(a.system, a.question, a.answer) for a in reader], problems


def test_a_version_3_file_names_each_provider_and_test() -> None:
    path = PROMPTFOO / "sample-export" / "sample-export.json"
    assert is_promptfoo_results(path)
    answers, problems = read(path, {"test-1", "test-2"})
    results = json.loads(path.read_text(encoding="utf-8"))["results"]["results"]
    # One template (listed once per provider): no `.prompt-M` in the question ids.
    assert answers == [
        (r["provider"]["id"], f"test-{r['testIdx'] + 1}", r["response"]["output"]) for r in results
    ]
    # Every result failed an assert (latency, cost) and says so in `error`, yet has an output: an
    # answer all the same, since a failed assert is promptfoo's verdict, not a missing answer.
    assert len(answers) == len(results) == 4 and all(r["error"] for r in results)
    assert problems == []


def test_an_older_file_numbers_tests_by_their_vars_and_prompts_by_their_template() -> None:
    path = PROMPTFOO / "simple-test" / "output.json"
    assert is_promptfoo_results(path)
    questions = {f"test-{n}.prompt-{m}" for n in (1, 2) for m in (1, 2)}
    answers, problems = read(path, questions)
    assert [(s, q) for s, q, _ in answers] == [
        ("output", "test-1.prompt-1"),  # no provider named: the file's name
        ("output", "test-2.prompt-1"),
        ("output", "test-2.prompt-2"),
        ("output", "test-1.prompt-2"),
    ]
    assert answers[2][2].startswith("Arrr, me belly be rumblin'!")
    assert problems == []


def test_a_question_the_battery_lacks_is_reported(tmp_path: Path) -> None:
    answers, problems = read(PROMPTFOO / "sample-export" / "sample-export.json", {"test-1"})
    assert [q for _, q, _ in answers] == ["test-1", "test-1"]
    # Results 3 and 4 (1-based places in `results.results`) answer test 2, which it lacks.
    assert [p.split(": ", 1)[0].rsplit(":", 1)[1] for p in problems] == ["3", "4"]
    assert all("unknown question 'test-2'" in p for p in problems)


def test_a_json_answers_file_of_another_shape_is_not_taken_for_promptfoo(tmp_path: Path) -> None:
    other = tmp_path / "answers.json"
    other.write_text('{"system": "s", "question": "q", "answer": "a"}\n', encoding="utf-8")
    assert not is_promptfoo_results(other)
    assert read(other, {"q"}) == ([("s", "q", "a")], [])
