"""The rubric's `match` checks of closed answers: how an answer is read (its final number, its
chosen letter, a pattern), the field as the language reads it, and grading through the real runner
against the scripted judge server: a match passes with no call, `decides` fails a reading that
differs with no call, an answer with no reading goes to the judge."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.helpers_grading import FAIL, PASS, grade

from tabench_dsl.cli import main
from tabench_dsl.core.closed_match import MatchCheck, chosen_letter, read_answer
from tabench_dsl.core.numbers import final_number
from tabench_dsl.core.records import Answer
from tabench_dsl.language.battery import load_battery
from tabench_dsl.language.lint import lint_battery
from tabench_dsl.language.render import compile_battery

RUBRIC = """\
question rate {
  prompt "What rate does the memo give?"
  gold "6.8%"
  match number 6.8 within 0.05
}

question pick {
  prompt "Which option? A) red B) blue C) green"
  gold "B) blue"
  match choice "B" among "ABC" decides
}

question total {
  prompt "What is the total?"
  gold "1,234"
  t1 off
  match number 1234 decides
}

question word {
  prompt "Say it as a pirate would."
  gold "Yarr"
  t1 off
  match regex "^\\\\s*Yarr[!.]?\\\\s*$"
}
"""


def battery_folder(root: Path, rubric: str = RUBRIC) -> Path:
    folder = root / "battery"
    folder.mkdir(parents=True)
    (folder / "battery.yaml").write_text(
        "name: closed\nscorer: tabench-neutral-1.1\nrubrics: [q.rubric]\n", encoding="utf-8"
    )
    (folder / "q.rubric").write_text(rubric, encoding="utf-8")
    return folder


@pytest.mark.parametrize(
    ("answer", "read"),
    [
        ("The total is 1,234.50 dollars.", "1234.50"),
        ("Rates rose from 8% to 6.8%", "6.8"),
        ("-3", "-3"),
        ("about +0.25", "0.25"),
        ("1.5e-3 of it", "0.0015"),
        ("\u22122", "-2"),
        ("version v2 and x-1", "1"),
        ("none at all", None),
    ],
)
def test_the_final_number_is_read_whole(answer: str, read: str | None) -> None:
    found = final_number(answer)
    assert (found[1] if found else None) == (Decimal(read) if read is not None else None)


@settings(derandomize=True, max_examples=200)
@given(
    st.decimals(min_value=-(10**9), max_value=10**9, places=3, allow_nan=False, allow_infinity=False),
    st.sampled_from(["The answer is {}.", "{}", "so: {} in all", "{}%"]),
    st.booleans(),
)
def test_a_written_number_reads_back_as_itself(value: Decimal, template: str, grouped: bool) -> None:
    text = f"{value:,}" if grouped else f"{value}"
    found = final_number(template.format(text))
    assert found is not None and found[1] == value


@pytest.mark.parametrize(
    ("answer", "letter"),
    [
        ("B", "B"),
        ("(c)", "C"),
        ("B) blue", "B"),
        ("Answer: a", "A"),
        ("The answer is (B).", "B"),
        ("D", None),
    ],
)
def test_the_chosen_letter_is_one_of_the_choices(answer: str, letter: str | None) -> None:
    assert chosen_letter(answer, "ABC") == letter


def test_decides_fails_only_a_reading_that_differs() -> None:
    check = MatchCheck("number", "42", decides=True)
    assert read_answer(check, "42.0").verdict == "pass"
    assert read_answer(check, "41").verdict == "fail"
    assert read_answer(check, "forty-two").verdict is None  # nothing read: the judge decides
    assert read_answer(MatchCheck("number", "42"), "41").verdict is None  # without decides


async def test_grading_passes_and_fails_closed_answers_without_a_judge_call(
    tmp_path: Path, judge_server
) -> None:
    server = await judge_server([PASS, FAIL])
    battery = compile_battery(load_battery(battery_folder(tmp_path)))
    answers = [
        Answer("a", "rate", "The memo gives 6.8%."),  # T1 passes first (the gold's tokens)
        Answer("b", "rate", "It is 6.80 percent"),  # match, within 0.05
        Answer("c", "rate", "8%"),  # differs, no decides: the judge
        Answer("a", "pick", "Answer: B"),
        Answer("b", "pick", "(C)"),  # differs, decides: fail
        Answer("c", "pick", "I would pick blue"),  # no letter read: the judge
        Answer("a", "total", "In all 1,234"),
        Answer("b", "total", "1,243"),
        Answer("a", "word", "Yarr!"),
    ]
    records, stats = await grade(battery, server.url, answers, tmp_path / "r.jsonl")
    by = {(r.system, r.question): r for r in records}
    assert (by["a", "rate"].tier, by["a", "rate"].verdict) == ("t1", "pass")
    decided = {key: (r.verdict, r.match_read) for key, r in by.items() if r.tier == "match"}
    assert decided == {
        ("b", "rate"): ("pass", "6.80"),
        ("a", "pick"): ("pass", "B"),
        ("b", "pick"): ("fail", "C"),
        ("a", "total"): ("pass", "1,234"),
        ("b", "total"): ("fail", "1,243"),
        ("a", "word"): ("pass", "Yarr!"),
    }
    assert by["b", "pick"].reason == "match choice: read 'C', expected B: differs, and the check decides"
    assert {key for key, r in by.items() if r.tier == "t2"} == {("c", "rate"), ("c", "pick")}
    assert server.calls == 2 and stats.matched == 6 and stats.t1 == 1


def test_the_field_is_checked_formatted_and_shown_by_compile(tmp_path: Path, capsys) -> None:
    bad = """\
question q {
  prompt "p"
  gold "g"
  match number forty
}
question r {
  prompt "p"
  gold "g"
  match choice "E" among "ABCD"
}
question s {
  prompt "p"
  gold "g"
  match regex "(a)\\\\1"
}
"""
    problems = lint_battery(battery_folder(tmp_path / "bad", bad))
    assert [(p.line, p.col, p.message.split(":")[0]) for p in problems if p.severity == "error"] == [
        (4, 16, "bad match check"),
        (9, 16, "bad match check"),
        (14, 15, "bad match check"),
    ]
    folder = battery_folder(tmp_path / "good")
    assert main(["fmt", "--check", str(folder / "q.rubric")]) == 0
    capsys.readouterr()
    assert main(["compile", str(folder), "--json"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert '"match":"choice \\"B\\" among \\"ABC\\" decides"' in lines[1]
    assert main(["compile", str(folder)]) == 0
    assert "## total match number 1234 decides\n" in capsys.readouterr().out


def test_the_check_never_reaches_a_prompt(tmp_path: Path) -> None:
    with_check = compile_battery(load_battery(battery_folder(tmp_path / "with")))
    without = compile_battery(
        load_battery(
            battery_folder(
                tmp_path / "without",
                "\n".join(line for line in RUBRIC.splitlines() if "match " not in line) + "\n",
            )
        )
    )
    assert [q.system for q in with_check.questions.values()] == [q.system for q in without.questions.values()]


async def test_the_t1_audit_covers_match_passes_and_totals_count_the_tier(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys, judge_server
) -> None:
    import asyncio
    import json

    from tabench_dsl.store.results import iter_records

    monkeypatch.chdir(tmp_path)
    for name in ("TABENCH_CACHE", "OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    server = await judge_server([FAIL, FAIL])
    folder = battery_folder(tmp_path)
    rows = [("a", "pick", "Answer: B"), ("b", "pick", "(C)"), ("a", "total", "In all 1,234")]
    Path("answers.jsonl").write_text(
        "".join(json.dumps({"system": s, "question": q, "answer": a}) + "\n" for s, q, a in rows),
        encoding="utf-8",
    )
    argv = ["grade", str(folder), "--answers", "answers.jsonl", "--judge", server.url, "--model", "m"]
    assert await asyncio.to_thread(main, [*argv, "--t1-audit", "1", "--json", "--no-cache"]) == 0
    totals = json.loads(capsys.readouterr().out)
    records = {(r.system, r.question): r for r in iter_records(tmp_path / "results.jsonl")}
    # The passes stand and carry the judge's verdict; the decided fail is never audited.
    assert [(k, r.verdict, r.audited is not None) for k, r in sorted(records.items())] == [
        (("a", "pick"), "pass", True),
        (("a", "total"), "pass", True),
        (("b", "pick"), "fail", False),
    ]
    assert server.calls == 2
    assert totals["t1_audit"]["audited"] == 2 and totals["t1_audit"]["agreed"] == 0
    assert {s["system"]: s["match_decided"] for s in totals["systems"]} == {"a": 2, "b": 1}
    assert totals["run"]["match"] == 3


def test_the_dry_run_counts_the_answers_the_checks_settle(tmp_path: Path, monkeypatch, capsys) -> None:
    import json

    monkeypatch.chdir(tmp_path)
    for name in ("TABENCH_CACHE", "OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    folder = battery_folder(tmp_path)
    rows = [("a", "pick", "Answer: B"), ("b", "pick", "(C)"), ("c", "pick", "blue"), ("a", "rate", "8%")]
    Path("answers.jsonl").write_text(
        "".join(json.dumps({"system": s, "question": q, "answer": a}) + "\n" for s, q, a in rows),
        encoding="utf-8",
    )
    argv = ["grade", str(folder), "--answers", "answers.jsonl", "--dry-run", "--json"]
    assert main(argv) == 0
    dry = json.loads(capsys.readouterr().out)["dry_run"]
    assert (dry["answers"], dry["t1_passes"], dry["match_decided"], dry["judge_calls"]) == (4, 0, 2, 2)


def test_lint_warns_of_an_exemplar_the_check_decides_against_its_expectation(tmp_path: Path) -> None:
    rubric = """\
question total {
  prompt "What is the total?"
  gold "1,234"
  t1 off
  match number 1234 decides
  exemplar correct "1,234 in all" why "the total"
  exemplar incorrect "It is 1234, give or take" why "hedges" expect fail
  exemplar correct "about 1,243" why "a typo" expect pass
}
"""
    warnings = [p for p in lint_battery(battery_folder(tmp_path, rubric)) if p.severity == "warning"]
    assert [(p.line, p.message) for p in warnings] == [
        (7, "the match check would pass this incorrect exemplar, which expects fail"),
        (8, "the match check would fail this correct exemplar, which expects pass"),
    ]
