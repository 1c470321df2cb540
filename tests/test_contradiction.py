"""The contradiction check against a hand-labelled set of judge reasons (tests/data/reasons.jsonl).

The set has a `tune` part, used while choosing the phrase lists in scorer.yaml, and a `holdout`
part that was not tuned on: its accuracy says how the lists do on reasons they were not fitted to.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tabench_dsl.core.errors import SpecError
from tabench_dsl.core.resources import specs_dir
from tabench_dsl.grading.contradiction import ContradictionCheck

REASONS = Path(__file__).parent / "data" / "reasons.jsonl"


@pytest.fixture(scope="module")
def check() -> ContradictionCheck:
    settings = yaml.safe_load((specs_dir() / "tabench-1.1" / "scorer.yaml").read_text(encoding="utf-8"))
    return ContradictionCheck.from_settings(settings["contradiction"])


def _rows() -> list[dict]:
    with REASONS.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def test_labelled_set_is_large_and_balanced() -> None:
    rows = _rows()
    assert len(rows) >= 80
    assert len({r["reason"] for r in rows}) == len(rows), "duplicate reasons"
    assert all(set(r) == {"reason", "pass_shaped", "part"} for r in rows)
    labels = [r["pass_shaped"] for r in rows]
    assert labels.count(True) >= 30 and labels.count(False) >= 30
    holdout = sum(r["part"] == "holdout" for r in rows)
    assert 0.2 <= holdout / len(rows) <= 0.3


@pytest.mark.parametrize("part", ["tune", "holdout", "all"])
def test_accuracy_on_labelled_reasons(check: ContradictionCheck, part: str) -> None:
    rows = [r for r in _rows() if part in ("all", r["part"])]
    misses = [r for r in rows if check.is_pass_shaped(r["reason"]) != r["pass_shaped"]]
    accuracy = 1 - len(misses) / len(rows)
    print(f"\ncontradiction check, {part}: {len(rows) - len(misses)}/{len(rows)} = {accuracy:.1%}")
    for r in misses:
        print(f"  miss (labelled pass_shaped={r['pass_shaped']}): {r['reason']}")
    # The target is 95% on the set; the held-out part, never tuned on, must stay close to it.
    assert accuracy >= (0.90 if part == "holdout" else 0.95)


# The hardest cases, each asserted on its own: a regression on any of them fails by name.
CORE = [
    ("Correct stage names but wrong order; fails", False),
    ("Although phrased differently, the answer is correct", True),
    ("Matches the gold exactly", True),
    ("Equivalent to the gold answer", True),
    ("Meets the full-credit bar", True),
    ("Partially correct: three of four stages", False),
    ("Would be correct if it named Compact", False),
    ("Not acceptable: names the trap", False),
    ("Right idea, wrong function name", False),
    ("Accurate and complete", True),
    ("Borderline but acceptable", True),
    ("Correct, though it omits the order (minor)", True),
    ("The answer isn't correct: it reverses the order.", False),
    ("Initially looks wrong, but it is actually correct.", True),
    ("Wrong order; otherwise correct.", False),
    ("Not fully correct; omits Compact.", False),
    ("The correct answer is Compact; the candidate says Merge.", False),
    ("Correct, though the order is wrong.", False),
    ("Even though it misses the order, the answer is acceptable.", True),
    ("Passes: the premise rejection gives the actual mechanism.", True),
    ("Answer correctly rejects the false premise and names the mechanism.", True),
    ("Not yet correct.", False),
    ("Correct? No: it names Merge.", False),
    # Quoted text is the answer's or the gold's wording, not the judge's conclusion.
    ('Says "correct order" but lists them reversed.', False),
    ("Asserts 'accurate timestamps', which the honesty trap denies.", False),
    ("Uses fine-grained locking on the right-hand side.", False),
]


@pytest.mark.parametrize(("reason", "pass_shaped"), CORE)
def test_core_cases(check: ContradictionCheck, reason: str, pass_shaped: bool) -> None:
    assert check.is_pass_shaped(reason) is pass_shaped


@pytest.mark.parametrize(
    "reason",
    [
        "Incorrect: names Merge instead of Compact.",
        "Partially correct: three of four stages",
        "Misses the fourth stage.",
        "Fail.",
        "Not a pass.",
        "Correct stage names but wrong order; fails",
    ],
)
def test_fail_shaped(check: ContradictionCheck, reason: str) -> None:
    assert check.is_fail_shaped(reason)
    assert not check.is_pass_shaped(reason)


@pytest.mark.parametrize(
    "reason",
    ["", "Lists three stages.", "The gold says Flush then Compact.", "Correct; the missing detail is minor."],
)
def test_not_fail_shaped(check: ContradictionCheck, reason: str) -> None:
    assert not check.is_fail_shaped(reason)


def test_neither_shape_without_a_verdict_word(check: ContradictionCheck) -> None:
    assert check.conclusion("Lists three stages.") is None
    assert check.conclusion("") is None


def test_phrases_come_from_the_settings_not_the_code() -> None:
    empty = ContradictionCheck.from_settings({})
    assert not empty.is_pass_shaped("Correct.")
    custom = ContradictionCheck.from_settings({"pass_shaped": ["bang on"], "negators": ["not"]})
    assert custom.is_pass_shaped("Bang on.")
    assert not custom.is_pass_shaped("Not bang on.")
    assert not custom.is_pass_shaped("Correct.")


def test_window_limits_how_far_back_a_negator_reaches() -> None:
    settings = {"pass_shaped": ["correct"], "negators": ["not"], "window": 1}
    near = ContradictionCheck.from_settings(settings)
    assert not near.is_pass_shaped("not correct")
    assert near.is_pass_shaped("not in my view correct")
    far = ContradictionCheck.from_settings({**settings, "window": 4})
    assert not far.is_pass_shaped("not in my view correct")


def test_unknown_setting_is_refused() -> None:
    with pytest.raises(SpecError, match="contradiction: unknown setting 'pass_phrases'"):
        ContradictionCheck.from_settings({"pass_phrases": ["correct"]})


def test_yaml_boolean_in_a_list_is_refused() -> None:
    # `- no` in YAML is the boolean False; silently dropping it would disable a negator.
    with pytest.raises(SpecError, match=r"contradiction\.negators: entry False is not a string"):
        ContradictionCheck.from_settings(yaml.safe_load("negators: [not, no]"))


def test_bad_pattern_is_refused() -> None:
    with pytest.raises(SpecError, match=r"contradiction\.fail_shaped: bad pattern 'wrong\('"):
        ContradictionCheck.from_settings({"fail_shaped": ["wrong("]})


@pytest.mark.parametrize("window", [-1, "3", True, 2.5])
def test_bad_window_is_refused(window: object) -> None:
    with pytest.raises(SpecError, match=r"contradiction\.window must be a whole number >= 0"):
        ContradictionCheck.from_settings({"window": window})


def test_errors_point_into_the_scorer_file(tmp_path: Path) -> None:
    scorer = tmp_path / "scorer.yaml"
    scorer.write_text(
        "name: x\ncontradiction:\n  pass_shaped: [correct]\n  negators:\n    - not\n    - no\n",
        encoding="utf-8",
    )
    settings = yaml.safe_load(scorer.read_text(encoding="utf-8"))
    with pytest.raises(SpecError) as caught:
        ContradictionCheck.from_settings(settings["contradiction"], source=scorer)
    assert caught.value.render() == (
        f"{scorer}:6:7: contradiction.negators: entry False is not a string\n"
        "        - no\n"
        "          ^\n"
        "hint: quote entries YAML reads as other types: 'no', 'yes', 'false', 'on', 'off', numbers"
    )


def test_unknown_setting_points_at_its_key(tmp_path: Path) -> None:
    scorer = tmp_path / "scorer.yaml"
    scorer.write_text("contradiction:\n  window: 2\n  pass_phrases: [ok]\n", encoding="utf-8")
    settings = yaml.safe_load(scorer.read_text(encoding="utf-8"))
    with pytest.raises(SpecError) as caught:
        ContradictionCheck.from_settings(settings["contradiction"], source=scorer)
    assert (caught.value.line, caught.value.col) == (3, 3)
    assert caught.value.hint is not None and caught.value.hint.startswith(
        "settings are pass_shaped, fail_shaped"
    )


def test_the_shipped_scorer_settings_are_valid() -> None:
    source = specs_dir() / "tabench-1.1" / "scorer.yaml"
    settings = yaml.safe_load(source.read_text(encoding="utf-8"))
    check = ContradictionCheck.from_settings(settings["contradiction"], source=source)
    assert check.is_pass_shaped("The answer is correct.")
    assert not check.is_pass_shaped("The answer is incorrect.")


def test_spaces_in_phrases_match_any_white_space_unless_quantified() -> None:
    check = ContradictionCheck.from_settings({"pass_shaped": ["spot on", "fine(?= *$)"]})
    assert check.is_pass_shaped("Spot \t on.")
    assert check.is_pass_shaped("Fine")
    assert not check.is_pass_shaped("fine print")
