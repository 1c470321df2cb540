"""`grade --resume` reads a results file its index knows nothing of once, for both its done pairs
and its totals (`cli/grade_resume.py`): the done pairs, the missing pairs and the totals kept are
those the store and review read on their own, whether the file is read in one process or over
several, with bad lines or without, pairs graded twice, errors and missing records among them."""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
from pathlib import Path

import msgspec
import pytest
from support.helpers_grading import write_battery
from support.make_results import many_results

from tabench_dsl.cli import main
from tabench_dsl.cli.grade_resume import ResumeRead, read_for_resume, scan_ahead
from tabench_dsl.core.errors import UsageError
from tabench_dsl.core.records import record_encoder
from tabench_dsl.review import last_records
from tabench_dsl.review.totals import totals_json
from tabench_dsl.review.totals_of import totals_of
from tabench_dsl.store import standing_verdicts
from tabench_dsl.store.decisions import decisions_path
from tabench_dsl.store.results_index import index_path
from tabench_dsl.store.resume_checks import ScanAhead, check_t1_rule, recorded_gradings


def kept_variants(results: Path) -> list[str]:
    with sqlite3.connect(index_path(results)) as db:
        return sorted(row[0].split(":")[0] for row in db.execute("SELECT variant FROM value_of"))


def write_results(path: Path, *, bad_line: bool) -> None:
    """Records of 6 systems, some pairs graded again (an error made good, a pass made an error),
    some missing answers' records, and a bad line in the middle when asked. Most T1 passes name
    rule v2, some none (v1's); some records name a scorer, of two."""
    records = [
        msgspec.structs.replace(
            record,
            t1_rule=msgspec.UNSET if n % 13 == 0 else record.t1_rule,
            scorer="tabench-1.1" if n % 5 == 0 else "mine-2" if n % 97 == 0 else msgspec.UNSET,
        )
        for n, record in enumerate(many_results(600, systems=6, seed=3))
    ]
    again = [
        msgspec.structs.replace(record, verdict="error" if record.verdict != "error" else "pass")
        for record in records[::7]
    ]
    missing = [
        msgspec.structs.replace(record, cause="missing", verdict="fail", question=record.question + "-m")
        for record in records[::11]
    ]
    lines = [record_encoder.encode(record) for record in [*records, *missing, *again]]
    if bad_line:
        lines.insert(300, b'{"system": "s", "question": 1}')
    path.write_bytes(b"".join(line + b"\n" for line in lines))


@pytest.mark.parametrize("processes", ["1", "3"])
@pytest.mark.parametrize("bad_line", [False, True])
@pytest.mark.parametrize("sparse", [False, True])
def test_one_read_keeps_what_each_read_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, processes: str, bad_line: bool, sparse: bool
) -> None:
    monkeypatch.setenv("TABENCH_READ_PROCESSES", processes)
    if sparse:  # the last records held in a dict, as for systems each answering questions of its own
        monkeypatch.setattr(last_records, "SPARSE_SLOTS", 0)
        monkeypatch.setattr(last_records, "SPARSE_FLOOR", 0)
    once, apart = tmp_path / "once.jsonl", tmp_path / "apart.jsonl"
    write_results(once, bad_line=bad_line)
    shutil.copyfile(once, apart)

    read_for_resume(once)
    assert kept_variants(once) == ["last-verdicts", "totals"]  # both kept, by one read
    read_for_resume(once)  # the done pairs kept: nothing read again

    for path in (once, apart):
        standing_verdicts._standing_at.cache_clear()
        done = standing_verdicts.done_pairs(path)
        missing = standing_verdicts.recorded_missing(path)
        problems: list[str] = []
        totals = totals_of(path, decisions_path(path), on_problem=problems.append)
        problems = [problem.replace(str(path), "RESULTS") for problem in problems]
        if path == once:
            kept = (set(done), set(missing), totals_json(totals), problems)
    assert kept == (set(done), set(missing), totals_json(totals), problems)
    assert len(kept[0]) > 500 and len(kept[1]) > 40 and (len(problems) == 1) == bad_line


@pytest.mark.parametrize("processes", ["1", "2"])
@pytest.mark.parametrize("bad_line", [False, True])
def test_a_read_begun_before_the_compile_finds_and_keeps_what_the_reads_apart_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, processes: str, bad_line: bool
) -> None:
    """The resume's read begun before the battery compiles (`scan_ahead`: the totals' first read,
    shared with a forked child) finds the rules and scorers the byte scan finds, and keeps the
    done pairs and totals the reads apart keep. With a bad line it takes no part: the scan and
    the totals' own read (which names the line) do it, as ever."""
    monkeypatch.setenv("TABENCH_READ_PROCESSES", processes)
    once, apart = tmp_path / "once.jsonl", tmp_path / "apart.jsonl"
    write_results(once, bad_line=bad_line)
    shutil.copyfile(once, apart)

    ahead = scan_ahead(once)
    assert isinstance(ahead, ResumeRead) and ahead.begun is not None
    assert ahead.ahead is None  # no scan of its own begun
    if processes == "2":
        assert ahead.begun.forked
    found, keep_found = ahead.found()
    assert (ahead.read is None) == bad_line  # the read's findings taken, unless it held a bad line
    assert ScanAhead(apart, begin=False).found()[0] == found
    assert found.scorers == ["mine-2", "tabench-1.1"] and found.rules == ["v2"] and found.tiers > found.named
    keep_found()
    read_for_resume(once, ahead)
    ahead.cancel()
    assert kept_variants(once) == ["gradings", "last-verdicts", "totals"]

    for path in (once, apart):
        standing_verdicts._standing_at.cache_clear()
        done = standing_verdicts.done_pairs(path)
        problems: list[str] = []
        totals = totals_of(path, decisions_path(path), on_problem=problems.append)
        problems = [problem.replace(str(path), "RESULTS") for problem in problems]
        if path == once:
            kept = (set(done), totals_json(totals), problems)
    assert kept == (set(done), totals_json(totals), problems)
    assert (len(problems) == 1) == bad_line


def test_a_read_begun_then_cancelled_is_never_taken(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TABENCH_READ_PROCESSES", "2")
    once, apart = tmp_path / "once.jsonl", tmp_path / "apart.jsonl"
    write_results(once, bad_line=False)
    shutil.copyfile(once, apart)
    ahead = scan_ahead(once)
    assert isinstance(ahead, ResumeRead) and ahead.begun is not None and ahead.begun.forked
    ahead.cancel()  # the child and the ranges it took are gone: the totals read the file themselves
    assert ahead.begun.read() is None
    read_for_resume(once, ahead)
    read_for_resume(apart)
    totals = [totals_json(totals_of(path, decisions_path(path))) for path in (once, apart)]
    assert totals[0] == totals[1] and totals[0].count(b'"system":"sys-') == 6


def test_a_read_begun_before_a_refusal_keeps_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TABENCH_READ_PROCESSES", "2")
    results = tmp_path / "r.jsonl"
    write_results(results, bad_line=False)
    ahead = scan_ahead(results)
    assert isinstance(ahead, ResumeRead) and ahead.begun is not None
    with pytest.raises(UsageError, match="T1 passes of rule v1, v2"):
        recorded = recorded_gradings(results, keep=False, ahead=ahead)
        check_t1_rule(results, "v3", recorded.t1_rules)
    ahead.cancel()
    assert not index_path(results).exists()


def test_a_file_that_is_no_results_file_is_left_to_the_resume_to_refuse(tmp_path: Path) -> None:
    answers = tmp_path / "answers.jsonl"
    answers.write_text(json.dumps({"system": "a", "question": "h01", "answer": "x"}) + "\n")
    read_for_resume(answers)  # the totals refuse it: nothing kept, nothing said
    assert not index_path(answers).exists() or "last-verdicts" not in kept_variants(answers)


async def test_a_first_resume_prints_what_a_resume_with_its_index_prints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    battery = write_battery(tmp_path)
    answers = tmp_path / "answers.jsonl"
    lines = [("a", "h01", "x"), ("a", "h02", "7311"), ("b", "h02", "7311"), ("b", "h03", "blue")]
    answers.write_text(
        "".join(json.dumps(dict(zip(("system", "question", "answer"), x, strict=True))) + "\n" for x in lines)
    )
    argv = ["grade", str(battery), "--answers", str(answers)]
    assert await asyncio.to_thread(main, argv) == 0
    capsys.readouterr()
    results = tmp_path / "results.jsonl"

    index_path(results).unlink()  # a first resume: one read for the done pairs and the totals
    assert await asyncio.to_thread(main, [*argv, "--resume"]) == 0
    out, err = capsys.readouterr()
    first = (out, "\n".join(line for line in err.splitlines() if not line.startswith("done ")))
    assert {"last-verdicts", "totals"} <= set(kept_variants(results))
    assert "nothing to grade: all 4 answer(s) already done" in err
    # Again with the done pairs kept and the totals not: the totals counted at the end, as ever.
    with sqlite3.connect(index_path(results)) as db:
        db.execute("DELETE FROM value_of WHERE variant NOT LIKE 'last-verdicts:%'")
    assert await asyncio.to_thread(main, [*argv, "--resume"]) == 0
    out, err = capsys.readouterr()
    assert (out, "\n".join(line for line in err.splitlines() if not line.startswith("done "))) == first
