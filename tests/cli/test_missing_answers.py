"""Answers that count: an empty answer is graded (the judge sees it empty), a question a system did
not answer is named, and `--missing-as-fail` records it as `fail` (cause `missing`), once.

Through `main(argv)` with the builtin judge (local, deterministic) or the scripted judge server.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from support.helpers_grading import PASS, user_content, write_battery

from tabench_dsl.cli import main
from tabench_dsl.language.battery import load_battery
from tabench_dsl.language.render import compile_battery
from tabench_dsl.store.results import iter_records

TAGGED = """\
question h01 {
  prompt "Which stages make up the memory pipeline?"
  gold "Four stages: Ingest, Index, Recall, Compact"
  tags "pipeline"
}
question h02 {
  prompt "Which port does the daemon listen on?"
  gold "7311"
  tags "ops"
}
question h03 {
  prompt "What colour is the sky?"
  gold "blue"
  t1 off
  tags "ops"
}
"""


async def run(argv: list[str]) -> int:
    return await asyncio.to_thread(main, argv)


def ans(system: str, question: str, answer: str) -> dict:
    return {"system": system, "question": question, "answer": answer}


def jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.mark.parametrize("form", ["jsonl", "csv"])
async def test_an_empty_answer_is_graded_and_the_judge_sees_it_empty(
    work: Path, capsys, judge_server, form: str
) -> None:
    server = await judge_server([PASS])
    battery = write_battery(work, rubric=TAGGED)
    if form == "csv":
        answers = work / "answers.csv"
        answers.write_text('system,question,answer\na,h03,""\na,h01,\n', encoding="utf-8")
    else:
        answers = jsonl(work / "answers.jsonl", [ans("a", "h03", ""), ans("a", "h01", "")])
    argv = ["grade", str(battery), "--answers", str(answers), "--judge", server.url, "--model", "m"]
    assert await run(argv) == 0
    err = capsys.readouterr().err
    assert "0 bad answer line(s)" in err and "is empty" not in err
    records = sorted(iter_records(work / "results.jsonl"), key=lambda r: r.question)
    assert [(r.question, r.answer, r.tier, r.verdict) for r in records] == [
        ("h01", "", "t2", "pass"),  # no token of the gold in it: T1 cannot pass it, the judge is asked
        ("h03", "", "t2", "pass"),
    ]
    empty_user = compile_battery(load_battery(battery)).user.fill("")
    assert [user_content(request) for request in server.requests] == [empty_user, empty_user]


async def test_missing_questions_are_named_per_system_and_not_recorded(work: Path, capsys) -> None:
    battery = write_battery(work, rubric=TAGGED)
    answers = jsonl(
        work / "answers.jsonl",
        [ans("a", "h01", "Ingest, Index, Recall, Compact"), ans("a", "h02", "7311"), ans("b", "h02", "7311")],
    )
    assert await run(["grade", str(battery), "--answers", str(answers), "--json"]) == 0
    captured = capsys.readouterr()
    assert (
        "system 'a' has no answer to 1 of the 3 question(s): h03; not in its score; "
        "--missing-as-fail records them as fail" in captured.err
    )
    assert "system 'b' has no answer to 2 of the 3 question(s): h01, h03;" in captured.err
    document = json.loads(captured.out)
    assert document["run"]["missing"] == {"a": ["h03"], "b": ["h01", "h03"]}
    assert document["run"]["missing_recorded"] == 0
    assert len(list(iter_records(work / "results.jsonl"))) == 3


async def test_missing_as_fail_records_fail_once_and_a_late_answer_is_graded_over_it(
    work: Path, capsys
) -> None:
    battery = write_battery(work, rubric=TAGGED)
    answers = jsonl(work / "answers.jsonl", [ans("a", "h02", "7311"), ans("b", "h02", "7311")])
    argv = ["grade", str(battery), "--answers", str(answers), "--missing-as-fail", "--json"]
    assert await run(argv) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["run"]["missing_recorded"] == 4
    scores = {s["system"]: (s["pass"], s["fail"], s["score"]) for s in document["systems"]}
    assert scores == {"a": (1, 2, pytest.approx(1 / 3)), "b": (1, 2, pytest.approx(1 / 3))}
    # Nobody judged a missing answer: the totals name no judge for it.
    assert all(judge["backend"] == "builtin" for judge in document["judges"])
    records = list(iter_records(work / "results.jsonl"))
    missing = sorted((r.system, r.question) for r in records if r.cause == "missing")
    assert missing == [("a", "h01"), ("a", "h03"), ("b", "h01"), ("b", "h03")]
    assert {(r.verdict, r.answer, r.judge.backend) for r in records if r.cause == "missing"} == {
        ("fail", "", "none")
    }

    # Resumed with the same answers: nothing more is written.
    before = (work / "results.jsonl").read_bytes()
    assert await run([*argv, "--resume"]) == 0
    assert json.loads(capsys.readouterr().out)["run"]["missing_recorded"] == 0
    assert (work / "results.jsonl").read_bytes() == before

    # b answers h01 now: it is graded (T1 passes it), standing over the missing record.
    late = ans("b", "h01", "Ingest Index Recall Compact")
    jsonl(answers, [ans("a", "h02", "7311"), ans("b", "h02", "7311"), late])
    assert await run([*argv, "--resume"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["run"]["missing_recorded"] == 0 and document["run"]["graded"] == 1
    scores = {s["system"]: (s["pass"], s["fail"]) for s in document["systems"]}
    assert scores == {"a": (1, 2), "b": (2, 1)}


@pytest.mark.parametrize(
    ("slice_args", "expected"),
    [
        (["--question", "h02"], {}),
        (["--tag", "ops"], {"a": ["h03"], "b": ["h03"]}),
        (["--tag", "pipeline"], {"b": ["h01"]}),
        (["--system", "a"], {"a": ["h03"]}),
    ],
)
async def test_what_is_missing_respects_the_slice(work: Path, capsys, slice_args, expected) -> None:
    battery = write_battery(work, rubric=TAGGED)
    answers = jsonl(
        work / "answers.jsonl",
        [ans("a", "h01", "Ingest Index Recall Compact"), ans("a", "h02", "7311"), ans("b", "h02", "7311")],
    )
    argv = ["grade", str(battery), "--answers", str(answers), "--missing-as-fail", "--json", *slice_args]
    assert await run(argv) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["run"]["missing"] == expected
    written = sorted((r.system, r.question) for r in iter_records(work / "results.jsonl") if r.cause)
    assert written == sorted((system, q) for system, qs in expected.items() for q in qs)


async def test_missing_as_fail_with_limit_is_a_usage_error(work: Path, capsys) -> None:
    battery = write_battery(work, rubric=TAGGED)
    answers = jsonl(work / "answers.jsonl", [ans("a", "h02", "7311")])
    argv = ["grade", str(battery), "--answers", str(answers), "--missing-as-fail", "--limit", "1"]
    assert await run(argv) == 2
    err = capsys.readouterr().err
    assert "--missing-as-fail needs the whole answers file read: it does not go with --limit" in err
    assert "Traceback" not in err and not (work / "results.jsonl").exists()
