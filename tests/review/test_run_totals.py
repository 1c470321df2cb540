"""The totals `grade` prints, counted as it writes the results file (`review.run_totals`): the
figures of a read of the whole file, kept in its index as that read keeps them, and a read of the
file whenever the run cannot know them (a resume, decisions, a pair twice, a record not counted)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from support.helpers_grading import FAIL, PASS, user_content, write_battery
from support.judge_server import Fault

from tabench_dsl.cli import main
from tabench_dsl.core.records import Answer, JudgeInfo, Record
from tabench_dsl.review import streamed_totals, totals_of
from tabench_dsl.review.run_totals import RunTotals
from tabench_dsl.review.totals import compute_totals, totals_json
from tabench_dsl.store.decisions import decisions_path
from tabench_dsl.store.results import iter_records
from tabench_dsl.store.results_index import index_path


def write_answers(path: Path, answers: list[tuple[str, str, str]]) -> Path:
    lines = (json.dumps({"system": s, "question": q, "answer": a}) + "\n" for s, q, a in answers)
    path.write_text("".join(lines))
    return path


def responder(body: dict) -> str | Fault:
    text = user_content(body)
    if "junk" in text:
        return "no verdict"
    if "down" in text:
        return Fault.ERROR_500
    return PASS if "good" in text else FAIL


#: Passes, fails, T1 passes (7311 is h02's gold), malformed replies (adjudicate) and transport
#: errors, each from a system of its own.
ANSWERS = [
    (f"s{i:02d}", q, f"{word} {i}")
    for i, (q, word) in enumerate(
        [("h01", "good"), ("h02", "bad"), ("h03", "junk"), ("h02", "7311"), ("h01", "down"), ("h03", "good")]
        * 3
    )
]


async def test_printed_totals_are_counted_as_written_and_kept_in_the_index(
    work: Path, capsys, judge_server, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = await judge_server(responder)
    answers = write_answers(work / "answers.jsonl", ANSWERS)
    # A fresh file: its totals come from the run; reading the file for them would fail here.
    real = streamed_totals.streamed_totals

    def no_read(*args, **kwargs):
        raise AssertionError("the results file was read for totals the run had counted")

    monkeypatch.setattr(totals_of, "streamed_totals", no_read)
    battery = write_battery(work)
    argv = ["grade", str(battery), "--answers", str(answers), "--judge", server.url, "--model", "m"]
    assert await asyncio.to_thread(main, [*argv, "--json", "--retries", "0"]) == 1  # some errors
    printed = json.loads(capsys.readouterr().out)
    printed.pop("run")
    records = list(iter_records(work / "results.jsonl"))
    assert {r.verdict for r in records} == {"pass", "fail", "adjudicate", "error"}
    assert any(r.tier == "t1" for r in records)
    assert printed == json.loads(totals_json(compute_totals(records)))

    # The index holds them as a read of the file keeps them: `totals` reads them back, unread.
    assert index_path(work / "results.jsonl").is_file()
    assert main(["totals", "results.jsonl", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == printed

    # Without the index, `totals` counts the file and finds the same figures.
    monkeypatch.setattr(totals_of, "streamed_totals", real)
    index_path(work / "results.jsonl").unlink()
    assert main(["totals", "results.jsonl", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == printed

    # From the cache this time (a second fresh file): cache hits counted as the file counts them.
    assert await asyncio.to_thread(main, [*argv, "--json", "--retries", "0", "--out", "again.jsonl"]) == 1
    again = json.loads(capsys.readouterr().out)
    again.pop("run")
    assert sum(s["cache_hits"] for s in again["systems"]) > 0
    assert again == json.loads(totals_json(compute_totals(iter_records(work / "again.jsonl"))))


async def test_a_resumed_file_is_read_for_its_totals(work: Path, capsys, judge_server) -> None:
    server = await judge_server(responder)
    battery = write_battery(work)
    argv = ["grade", str(battery), "--judge", server.url, "--model", "m", "--json", "--retries", "0"]
    first = write_answers(work / "first.jsonl", ANSWERS[:6])
    assert await asyncio.to_thread(main, [*argv, "--answers", str(first)]) == 1
    capsys.readouterr()
    # The resume grades the errors again and the new answers: the file's totals count its records
    # before this run too, and the last record of each pair only.
    everything = write_answers(work / "all.jsonl", ANSWERS)
    assert await asyncio.to_thread(main, [*argv, "--answers", str(everything), "--resume"]) == 1
    printed = json.loads(capsys.readouterr().out)
    printed.pop("run")
    records = list(iter_records(work / "results.jsonl"))
    assert len(records) > len({r.key for r in records})  # some pair has two records
    assert printed == json.loads(totals_json(compute_totals(records)))
    assert printed["records"] == len(ANSWERS)


def record(system: str, question: str) -> Record:
    return Record(
        system=system,
        question=question,
        tier="t2",
        verdict="pass",
        reason="",
        prompt_sha256="0" * 64,
        judge=JudgeInfo(backend="openai", model="m"),
        answer=Answer(system, question, "x").answer,
    )


def counting(
    tmp_path: Path, records: list[Record], *, opened_size: int = 0, written: int | None = None, grown: int = 0
) -> RunTotals:
    """The run that wrote a file holding `records`, which the writer left `grown` bytes shorter."""
    results = tmp_path / "r.jsonl"
    lines = (json.dumps({"system": r.system, "question": r.question}) + "\n" for r in records)
    results.write_text("".join(lines))
    run = RunTotals()
    run.follow(opened_size)
    for one in records:
        run.add(one)
    run.written = len(records) if written is None else written
    run.end = results.stat().st_size - grown
    return run


def counted(tmp_path: Path, records: list[Record], **run):
    """The run's totals of a file holding `records` (`counting`), or None."""
    return counting(tmp_path, records, **run).totals(tmp_path / "r.jsonl")


def test_the_run_gives_no_totals_when_it_cannot_know_them(tmp_path: Path) -> None:
    pairs = [record("a", "q1"), record("a", "q2"), record("b", "q1")]
    assert counted(tmp_path, pairs) is not None
    assert counted(tmp_path, pairs).records == 3
    # A pair twice: its last record stands, and the first was counted.
    assert counted(tmp_path, [*pairs, record("a", "q2")]) is None
    # Records before this run, or one written that was not counted.
    assert counted(tmp_path, pairs, opened_size=120) is None
    assert counted(tmp_path, pairs, written=4) is None
    # Decisions beside the file change what stands.
    decisions_path(tmp_path / "r.jsonl").write_text("")
    assert counted(tmp_path, pairs) is None


def test_a_file_another_grading_appended_to_is_read_again(tmp_path: Path, monkeypatch) -> None:
    """A file longer than the writer left it (another grading appended once this one let go) is
    not the file the run counted: no totals are given for it (the file is read), and none kept."""
    results = tmp_path / "r.jsonl"
    pairs = [record("a", "q1"), record("b", "q1")]
    kept = totals_of.totals_of(results, decisions_path(results), written=counting(tmp_path, pairs))
    assert kept.records == 2 and index_path(results).is_file()
    index_path(results).unlink()
    assert counted(tmp_path, pairs, grown=1) is None
    grown = counting(tmp_path, pairs, grown=1)

    def no_read(*args, **kwargs):
        raise AssertionError("counted from the file")

    monkeypatch.setattr(totals_of, "streamed_totals", no_read)
    with pytest.raises(AssertionError, match="counted from the file"):  # nothing kept for it
        totals_of.totals_of(results, decisions_path(results), written=grown)
