"""`battery_scorer`'s parts without an Inspect run: the score each tabench verdict becomes, and the
checks made when the scorer is created (a bad battery, a results file that is not one)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

pytest.importorskip("inspect_ai", reason="the inspect extra is not installed (pip install -e '.[inspect]')")

from inspect_ai.scorer import CORRECT, INCORRECT, value_to_float
from support.helpers_grading import write_battery
from support.make_results import make_record

from tabench_dsl.core.errors import SpecErrors, UsageError
from tabench_dsl.inspect import battery_scorer
from tabench_dsl.inspect.scorer import record_score


def test_pass_and_fail_are_correct_and_incorrect() -> None:
    passed = record_score(make_record("s", "h01", "pass", facets={"missing_minor": False}))
    assert passed.value == CORRECT and passed.metadata["verdict"] == "pass"
    assert passed.metadata["facets"] == {"missing_minor": False}
    failed = record_score(make_record("s", "h01", "fail"))
    assert failed.value == INCORRECT and failed.explanation == failed.metadata["reason"]
    t1 = record_score(make_record("s", "h01", "t1"))
    assert t1.value == CORRECT and t1.metadata["tier"] == "t1" and t1.metadata["judge_calls"] == 0


@pytest.mark.parametrize(
    ("outcome", "cause", "reason"),
    [
        ("adjudicate", "contradiction", "adjudicate"),
        ("adjudicate", "malformed", "adjudicate"),
        ("error", None, "grader_failed"),
    ],
)
def test_adjudicate_and_error_are_left_out_of_the_metrics(
    outcome: str, cause: str | None, reason: str
) -> None:
    score = record_score(make_record("s", "h01", outcome, cause=cause))
    # NaN is the value Inspect's metrics skip; NOANSWER ("N") would count as 0, a wrong answer.
    assert isinstance(score.value, float) and math.isnan(score.value)
    assert value_to_float()("N") == 0.0
    assert score.reason == reason
    assert score.metadata["verdict"] == outcome
    assert score.explanation.startswith(f"{outcome} ({score.metadata['cause'] or 'transport'}):")


def test_a_bad_battery_fails_when_the_scorer_is_made(tmp_path: Path) -> None:
    battery = write_battery(tmp_path, rubric='question h01 {\n  prompt "no gold"\n}\n')
    with pytest.raises(SpecErrors):
        battery_scorer(str(battery))


def test_out_must_be_a_results_file(tmp_path: Path) -> None:
    battery = write_battery(tmp_path)
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n", encoding="utf-8")
    with pytest.raises(UsageError, match="not a results file"):
        battery_scorer(str(battery), out=str(notes))
    assert notes.read_text(encoding="utf-8") == "my notes\n"
