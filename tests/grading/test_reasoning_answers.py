"""Answers that carry reasoning: T1 and the judge grade the final answer, against a real scripted
judge server. The record keeps the answer as given and says what was cut; the manifest's
`reasoning_tags` and `grade --reasoning-tags` choose the tags (the flag wins)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import msgspec
import pytest
from support.helpers_grading import FAIL, PASS, grade, user_content

from tabench_dsl.cli import main
from tabench_dsl.core.errors import SpecErrors
from tabench_dsl.core.reasoning import ReasoningInfo
from tabench_dsl.core.records import Answer, Record, record_decoder, record_encoder
from tabench_dsl.language.battery import load_battery
from tabench_dsl.language.render import compile_battery
from tabench_dsl.store.results import iter_records

#: The gold names `asdict`, the trap the function that does not exist: an answer whose reasoning
#: recalls the gold but whose final answer names the trap must not pass T1.
RUBRIC = """\
question d01 {
  prompt "How do you turn a dataclass instance into a dict?"
  gold "dataclasses asdict"
  trap "dataclasses.todict() does not exist"
}
"""

#: The issue's answer: the gold's tokens are all in its reasoning, none of them in its final answer.
THINKING = (
    "<think>... the gold is dataclasses with asdict ... I recall a todict() function</think> "
    "Use dataclasses.todict()."
)
FINAL = "Use dataclasses.todict()."
REASONING = "... the gold is dataclasses with asdict ... I recall a todict() function"
#: The USER prompt of tabench-1.1 around an answer.
USER_OPENING = "-- CANDIDATE ANSWER --\n"


def write_battery(root: Path, reasoning_tags: str | None = None) -> Path:
    folder = root / "battery"
    folder.mkdir(parents=True, exist_ok=True)
    # T1's trap check is off: it would send the uncut answers, which name the trap's `todict`, to
    # the judge, and these tests are about what the cut leaves T1 (tests/grading/test_t1_trap.py).
    manifest = "name: dc\nscorer: tabench-1.1\nrubrics: [questions.rubric]\n"
    if reasoning_tags is not None:
        manifest += f"reasoning_tags: {reasoning_tags}\n"
    manifest += "t1_trap: false\n"
    # Rule v1, the token subset: the reasoning's "dataclasses with asdict" holds the gold's tokens
    # (v2 would want them together); these tests are about what the cut leaves T1 to read.
    manifest += "t1: {rule: v1}\n"
    (folder / "battery.yaml").write_text(manifest, encoding="utf-8")
    (folder / "questions.rubric").write_text(RUBRIC, encoding="utf-8")
    return folder


def compiled(root: Path, reasoning_tags: str | None = None):
    return compile_battery(load_battery(write_battery(root, reasoning_tags)))


async def test_reasoning_that_names_the_gold_does_not_pass_t1(tmp_path: Path, judge_server) -> None:
    server = await judge_server([FAIL])
    (record,), stats = await grade(
        compiled(tmp_path), server.url, [Answer("qwen3", "d01", THINKING)], tmp_path / "r.jsonl"
    )
    assert (record.tier, record.verdict, stats.t1, server.calls) == ("t2", "fail", 0, 1)
    # The judge read the final answer only.
    assert user_content(server.requests[0]) == USER_OPENING + FINAL
    # The record keeps the answer as given and says what was cut.
    assert record.answer == THINKING
    assert record.reasoning_cut == ReasoningInfo(
        final=FINAL, blocks=1, characters=len(REASONING), unclosed=False, tags=(("<think>", "</think>"),)
    )
    assert record.graded_answer == FINAL


async def test_without_the_cut_the_same_answer_passes_t1(tmp_path: Path, judge_server) -> None:
    # `reasoning_tags: []` turns the cut off: T1 then reads the reasoning and passes the answer.
    server = await judge_server([FAIL])
    battery = compiled(tmp_path, "[]")
    assert battery.reasoning_tags == ()
    (record,), _ = await grade(battery, server.url, [Answer("qwen3", "d01", THINKING)], tmp_path / "r.jsonl")
    assert (record.tier, record.verdict, server.calls) == ("t1", "pass", 0)
    assert record.reasoning_cut is None and record.graded_answer == THINKING


async def test_an_unclosed_block_leaves_an_empty_answer(tmp_path: Path, judge_server) -> None:
    server = await judge_server([FAIL])
    answer = "<think>the gold is dataclasses asdict, so the answer is"
    (record,), _ = await grade(
        compiled(tmp_path), server.url, [Answer("r1", "d01", answer)], tmp_path / "r.jsonl"
    )
    assert record.tier == "t2" and record.verdict == "fail"
    # The judge got the USER frame around nothing: the seed's "Missing answer = fail" rule decides.
    assert user_content(server.requests[0]) == USER_OPENING
    assert record.answer == answer
    assert record.reasoning_cut is not None and record.reasoning_cut.unclosed
    assert record.reasoning_cut.final == "" and record.reasoning_cut.blocks == 1


async def test_every_block_in_any_case_and_the_stern_retry_reads_the_final(
    tmp_path: Path, judge_server
) -> None:
    contradiction = json.dumps({"verdict": "fail", "reason": "The answer matches the gold.", "facets": {}})
    server = await judge_server([contradiction, PASS])
    answer = "<THINK>asdict?</THINK>Use <Think>hmm <think>nested</think></Think>dataclasses.todict()."
    (record,), _ = await grade(
        compiled(tmp_path), server.url, [Answer("m", "d01", answer)], tmp_path / "r.jsonl"
    )
    assert [a.kind for a in record.attempts] == ["first", "stern"]
    first, stern = (user_content(r) for r in server.requests)
    assert first == USER_OPENING + "Use dataclasses.todict()."
    assert stern.endswith("\n-- CANDIDATE ANSWER --\nUse dataclasses.todict().")
    assert "asdict" not in first + stern and "nested" not in stern
    assert record.reasoning_cut is not None and record.reasoning_cut.blocks == 2


async def test_an_answer_without_reasoning_is_written_as_before(tmp_path: Path, judge_server) -> None:
    server = await judge_server([PASS])
    out = tmp_path / "r.jsonl"
    await grade(compiled(tmp_path), server.url, [Answer("m", "d01", "Use dataclasses.replace.")], out)
    line = json.loads(out.read_text(encoding="utf-8"))
    assert "reasoning" not in line and line["answer"] == "Use dataclasses.replace."


def test_old_and_new_records_read() -> None:
    old = (
        b'{"system":"a","question":"q","tier":"t2","verdict":"pass","reason":"r","prompt_sha256":"x",'
        b'"judge":{"backend":"openai","model":"m"}}'
    )
    record = record_decoder.decode(old)
    assert record.reasoning_cut is None and record.graded_answer == ""
    info = ReasoningInfo(final="B", blocks=2, characters=7, unclosed=True, tags=(("<r>", "</r>"),))
    new = msgspec.structs.replace(record, answer="<r>x</r>B<r>yyyyyy", reasoning=info)
    again = record_decoder.decode(record_encoder.encode(new))
    assert isinstance(again, Record) and again.reasoning_cut == info and again.graded_answer == "B"
    assert json.loads(record_encoder.encode(new))["reasoning"] == {
        "final": "B",
        "blocks": 2,
        "characters": 7,
        "unclosed": True,
        "tags": [["<r>", "</r>"]],
    }


def test_manifest_setting_reaches_the_compiled_battery(tmp_path: Path) -> None:
    assert compiled(tmp_path / "a").reasoning_tags == (("<think>", "</think>"),)
    tags = '[["<reasoning>", "</reasoning>"], ["<|begin_of_thought|>", "<|end_of_thought|>"]]'
    assert compiled(tmp_path / "b", tags).reasoning_tags == (
        ("<reasoning>", "</reasoning>"),
        ("<|begin_of_thought|>", "<|end_of_thought|>"),
    )


def test_every_bad_pair_is_reported_where_it_stands(tmp_path: Path) -> None:
    folder = write_battery(tmp_path, '[["<think>", ""], [a], {x: y}, [1, "</r>"]]')
    with pytest.raises(SpecErrors) as raised:
        load_battery(folder)
    assert [(e.line, e.col, e.message) for e in raised.value.errors] == [
        (4, 30, "a reasoning tag may not be empty, not ''"),
        (4, 35, "a reasoning tag pair is a list of two tags, not a list of 1"),
        (4, 40, "a reasoning tag pair is a list of two tags, not a mapping"),
        (4, 49, "a reasoning tag is text, not '1'"),
    ]


# -- the flag, through `main(argv)` ----------------------------------------------------------------
async def _main(argv: list[str]) -> int:
    return await asyncio.to_thread(main, argv)


def _answers(folder: Path, answer: str) -> Path:
    path = folder / "answers.jsonl"
    path.write_text(json.dumps({"system": "m", "question": "d01", "answer": answer}) + "\n", encoding="utf-8")
    return path


async def test_the_flag_wins_over_the_manifest(work: Path, judge_server, capsys) -> None:
    server = await judge_server([FAIL, FAIL])
    battery = write_battery(work, "[]")  # the manifest cuts nothing
    answer = "<r>dataclasses asdict</r> Use dataclasses.todict()."
    answers = _answers(work, answer)
    base = [
        "grade",
        str(battery),
        "--answers",
        str(answers),
        "--judge",
        server.url,
        "--model",
        "m",
        "--no-cache",
    ]
    assert await _main([*base, "--reasoning-tags", "<r>,</r>", "--out", "one.jsonl"]) == 0
    assert user_content(server.requests[0]) == USER_OPENING + FINAL
    (record,) = iter_records(work / "one.jsonl")
    assert record.answer == answer and record.reasoning_cut is not None
    assert record.reasoning_cut.tags == (("<r>", "</r>"),)

    # `none` cuts nothing, whatever the manifest says: the reasoning names the gold, T1 passes.
    battery = write_battery(work / "default")  # the manifest's default: the think pair
    think = _answers(work, THINKING)
    argv = ["grade", str(battery), "--answers", str(think), "--judge", server.url, "--model", "m"]
    assert await _main([*argv, "--no-cache", "--reasoning-tags", "none", "--out", "two.jsonl"]) == 0
    (record,) = iter_records(work / "two.jsonl")
    assert (record.tier, record.verdict, server.calls) == ("t1", "pass", 1)
    capsys.readouterr()


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--reasoning-tags", "<think>"], "'<think>': give one pair as OPEN,CLOSE"),
        (["--reasoning-tags", "<a>, </a>"], "'<a>, </a>': a reasoning tag may not hold blank space"),
        (["--reasoning-tags", ",</a>"], "',</a>': a reasoning tag may not be empty"),
        (["--reasoning-tags", "none", "--reasoning-tags", "<a>,</a>"], "none cuts nothing"),
    ],
)
def test_bad_flag_values_are_usage_errors(work: Path, capsys, flags: list[str], message: str) -> None:
    battery = write_battery(work)
    answers = _answers(work, THINKING)
    assert main(["grade", str(battery), "--answers", str(answers), *flags]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (work / "results.jsonl").exists()


def test_the_dry_run_counts_t1_on_the_final_answer(work: Path, capsys) -> None:
    battery = write_battery(work)
    answers = _answers(work, THINKING)
    base = [
        "grade",
        str(battery),
        "--answers",
        str(answers),
        "--judge",
        "openai:gpt-x",
        "--dry-run",
        "--json",
    ]
    counts = []
    for flags in ([], ["--reasoning-tags", "none"]):
        assert main([*base, *flags]) == 0
        document = json.loads(capsys.readouterr().out)["dry_run"]
        counts.append((document["t1_passes"], document["judge_calls"]))
    assert counts == [(0, 1), (1, 0)]  # cut: the judge is asked; not cut: T1 passes the reasoning


@pytest.mark.slow
async def test_grading_workers_cut_with_the_flags_tags(work: Path, judge_server) -> None:
    # The compiled battery crosses into each --workers process with the tags the flag chose.
    server = await judge_server([FAIL])
    battery = write_battery(work)
    answers = work / "answers.jsonl"
    answers.write_text(
        "".join(
            json.dumps({"system": f"s{i}", "question": "d01", "answer": answer}) + "\n"
            for i, answer in enumerate([THINKING, "<r>dataclasses asdict</r> Use dataclasses.todict()."])
        ),
        encoding="utf-8",
    )
    argv = ["grade", str(battery), "--answers", str(answers), "--judge", server.url, "--model", "m"]
    flags = ["--no-cache", "--workers", "2", "--reasoning-tags", "<r>,</r>"]
    assert await _main([*argv, *flags]) == 0
    records = {r.system: r for r in iter_records(work / "results.jsonl")}
    # Only <r> is cut: the <think> answer passes T1 on its reasoning, the <r> one goes to the judge.
    assert (records["s0"].tier, records["s0"].reasoning_cut) == ("t1", None)
    assert records["s1"].tier == "t2" and records["s1"].reasoning_cut is not None
    assert [user_content(r) for r in server.requests] == [USER_OPENING + FINAL]
