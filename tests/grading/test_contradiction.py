"""The contradiction check against a hand-labelled set of judge reasons (tests/data/reasons.jsonl).

The set has a `tune` part, used while choosing the phrase lists in scorer.yaml, and a `holdout`
part that was not tuned on: its accuracy says how the lists do on reasons they were not fitted to.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import msgspec
import pytest
from support.battery_files import shipped_settings

from tabench_dsl.core.scorer import ContradictionSettings
from tabench_dsl.grading.contradiction import ContradictionCheck

REASONS = Path(__file__).parents[1] / "data" / "reasons.jsonl"


@pytest.fixture(scope="module")
def check() -> ContradictionCheck:
    return ContradictionCheck.from_settings(shipped_settings().contradiction)


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


def _check(**settings: object) -> ContradictionCheck:
    return ContradictionCheck.from_settings(ContradictionSettings(**settings))  # type: ignore[arg-type]


def test_phrases_come_from_the_settings_not_the_code() -> None:
    empty = _check()
    assert not empty.is_pass_shaped("Correct.")
    custom = _check(pass_shaped=("bang on",), negators=("not",))
    assert custom.is_pass_shaped("Bang on.")
    assert not custom.is_pass_shaped("Not bang on.")
    assert not custom.is_pass_shaped("Correct.")


def test_window_limits_how_far_back_a_negator_reaches() -> None:
    near = _check(pass_shaped=("correct",), negators=("not",), window=1)
    assert not near.is_pass_shaped("not correct")
    assert near.is_pass_shaped("not in my view correct")
    far = _check(pass_shaped=("correct",), negators=("not",), window=4)
    assert not far.is_pass_shaped("not in my view correct")


def test_the_shipped_scorer_settings_are_valid(check: ContradictionCheck) -> None:
    assert check.is_pass_shaped("The answer is correct.")
    assert not check.is_pass_shaped("The answer is incorrect.")


def test_spaces_in_phrases_match_any_white_space_unless_quantified() -> None:
    check = _check(pass_shaped=("spot on", "fine(?= *$)"))
    assert check.is_pass_shaped("Spot \t on.")
    assert check.is_pass_shaped("Fine")
    assert not check.is_pass_shaped("fine print")


def _concluded(check: ContradictionCheck, reason: str) -> tuple[bool, bool]:
    return check.conclusion(reason) == "pass", check.conclusion(reason) == "fail"


def test_the_phrase_lookup_before_the_clauses_never_changes_a_conclusion() -> None:
    # `is_pass_shaped` / `is_fail_shaped` first look for any phrase in the whole reason; the
    # clause by clause `conclusion` is the reference. Reasons: the labelled set, and texts made of
    # the shipped phrases' own words next to breaks, contrast words and negators.
    settings = shipped_settings().contradiction
    # Trusted, as a shipped scorer is when a battery names it: the lookup runs on `re` only.
    check = ContradictionCheck.from_settings(msgspec.structs.replace(settings, trusted=True))
    assert check._any_pass is not None and check._any_fail is not None
    words = [w for p in (*settings.pass_shaped, *settings.fail_shaped) for w in re.findall(r"[a-z]+", p)]
    glue = [",", ".", " but", " not", " although", ":", " -", " no", " partially", " matches exactly", "\n"]
    rng = random.Random(7)
    reasons = [r["reason"] for r in _rows()]
    for _ in range(3000):
        parts = [
            rng.choice(words) + (rng.choice(glue) if rng.random() < 0.4 else "")
            for _ in range(rng.randint(1, 9))
        ]
        reasons.append(" ".join(parts))
    # Phrases anchored to their clause (`^no$`, `matches` before the clause's end): whole, they are
    # not in these reasons; each clause holds one.
    reasons += ["No.", "Every stage named, no.", "It matches, so fine.", "it matches; order wrong"]
    reasons += ["matches exactly", "names three of the four stages"]
    for reason in reasons:
        assert (check.is_pass_shaped(reason), check.is_fail_shaped(reason)) == _concluded(check, reason), (
            reason
        )
    assert check.is_fail_shaped("No.") == _concluded(check, "No.")[1]


def test_a_phrase_that_looks_around_itself_turns_the_lookup_off() -> None:
    looking = ContradictionCheck(pass_shaped=[r"correct(?<=\w)x"], fail_shaped=["wrong"])
    assert looking._any_pass is None
    assert looking.is_pass_shaped("correct") is False and looking.is_fail_shaped("wrong") is True
    widened = ContradictionCheck(pass_shaped=["matches(?= exactly)"], fail_shaped=["^no$"])
    assert widened._any_pass is not None and widened._any_fail is not None
    assert widened.is_pass_shaped("it matches exactly") and not widened.is_pass_shaped("it matches")
    assert widened.is_fail_shaped("no") and not widened.is_fail_shaped("no doubt, fine")
