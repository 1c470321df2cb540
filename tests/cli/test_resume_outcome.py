"""A resume that graded nothing keeps its outcome in the results index (`grading/plan_outcome.py`),
and the same resume again replays it: the same counts, bad lines, warnings, missing questions and
totals as a resume that reads both files, with neither read; any change to the inputs reads them."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import pytest
from support.helpers_grading import write_battery

from tabench_dsl.cli import main
from tabench_dsl.store.results_index import index_path


def ans(system: str, question: str, answer: str) -> str:
    return json.dumps({"system": system, "question": question, "answer": answer})


FIRST = [ans("a", "h01", "x"), ans("a", "h02", "7311"), ans("a", "h03", "blue"), ans("b", "h02", "7311")]
#: The first answers again, with bad lines among them and one new answer (b h03).
SECOND = [
    *FIRST[:2],
    ans("a", "h02", "again"),
    "{oops",
    "",
    ans("a", "nope", "x"),
    *FIRST[2:],
    ans("b", "h03", "blue"),
]


#: Every answer of SECOND but the new one, and a line with a key that is not an answer's: a resume
#: of it after SECOND's has nothing to grade, three bad lines and a warning to say.
DONE_AGAIN = [
    *SECOND[:-2],
    json.dumps({"system": "b", "question": "h02", "answer": "7311", "id": 7}),
    SECOND[-1],
]


async def grade(work: Path, capsys, lines: list[str] | None, *extra: str) -> tuple[int, str, str]:
    """`grade` of the answers `lines` (None: the file as it is) into results.jsonl; its status,
    stdout and stderr, the seconds it took said as `in N s` left out."""
    answers = work / "answers.jsonl"
    if lines is not None:
        answers.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    battery = write_battery(work)
    code = await asyncio.to_thread(main, ["grade", str(battery), "--answers", str(answers), *extra])
    out, err = capsys.readouterr()
    err = "\n".join(line for line in err.splitlines() if not line.startswith("done "))
    return code, out, err


def kept_outcomes(results: Path) -> int:
    with sqlite3.connect(index_path(results)) as db:
        return db.execute("SELECT count(*) FROM value_of WHERE variant LIKE 'resume-outcome:%'").fetchone()[0]


def nothing_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading the done pairs, the missing records or an answer line fails the test."""
    from tabench_dsl.grading import answers, answers_scan, plan
    from tabench_dsl.store import standing_verdicts

    def not_read(*args, **kwargs):
        raise AssertionError("read again: the kept outcome was not replayed")

    monkeypatch.setattr(plan, "done_pairs", not_read)
    monkeypatch.setattr(plan, "changed_pairs", not_read)
    monkeypatch.setattr(plan, "count_answers", not_read)
    monkeypatch.setattr(standing_verdicts, "recorded_missing", not_read)
    monkeypatch.setattr(answers, "_strict_answer", not_read)
    monkeypatch.setattr(answers, "kept_scan", not_read)
    monkeypatch.setattr(answers_scan, "kept_scan", not_read)


@pytest.mark.parametrize(
    "flags", [(), ("--json",), ("--missing-as-fail",), ("--regrade-changed", "--system", "a")]
)
async def test_a_resume_replayed_says_what_the_resume_read_says(
    work: Path, capsys, monkeypatch: pytest.MonkeyPatch, flags: tuple[str, ...]
) -> None:
    assert (await grade(work, capsys, FIRST))[0] == 0
    assert (await grade(work, capsys, SECOND, "--resume"))[0] == 1  # grades b h03; bad lines
    results = work / "results.jsonl"
    await grade(work, capsys, DONE_AGAIN, "--resume", *flags)  # --missing-as-fail writes its records
    index_path(results).unlink()
    read = await grade(work, capsys, None, "--resume", *flags)  # reads both files, writes nothing
    assert read[0] == 1 and "nothing to grade" in read[2] and "bad answer line" in read[2]
    assert "unknown key(s) 'id' ignored" in read[2]
    graded = results.read_bytes()
    assert kept_outcomes(results) == 1
    with monkeypatch.context() as patched:
        nothing_read(patched)
        replayed = await grade(work, capsys, None, "--resume", *flags)
    assert replayed == read
    assert results.read_bytes() == graded  # nothing written
    index_path(results).unlink()  # and without any index: the same again
    assert await grade(work, capsys, None, "--resume", *flags) == read


async def test_an_outcome_is_replayed_only_for_the_same_inputs(
    work: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert (await grade(work, capsys, FIRST))[0] == 0
    results = work / "results.jsonl"
    assert (await grade(work, capsys, FIRST, "--resume"))[0] == 0
    assert kept_outcomes(results) == 1

    # Another answer: graded, as it would be without the outcome.
    code, _, err = await grade(work, capsys, [*FIRST, ans("b", "h01", "x")], "--resume")
    assert code == 0 and "graded 1 answer(s)" in err and "skipped 4 already done" in err
    # Another slice: read again, not the outcome of every system's resume.
    assert (await grade(work, capsys, None, "--resume"))[0] == 0
    code, _, err = await grade(work, capsys, None, "--resume", "--system", "b")
    assert code == 0 and "nothing to grade: all 2 answer(s) already done" in err
    # A record appended to the results since (a pair graded again, in error): read again, graded.
    assert (await grade(work, capsys, None, "--resume"))[0] == 0
    last = json.loads(results.read_text(encoding="utf-8").splitlines()[0])
    last["verdict"] = "error"
    with open(results, "a", encoding="utf-8") as f:
        f.write(json.dumps(last) + "\n")
    code, _, err = await grade(work, capsys, None, "--resume")
    assert "graded 1 answer(s)" in err and "skipped 4 already done" in err
