"""`grade --resume` takes its done pairs out while reading the answers (`grading/resume_skip.py`): the
done answers are counted as skipped only within the slice, still count as answered for the missing
account, and every bad line among them is still reported at its file:line."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from support.helpers_grading import write_battery

from tabench_dsl.cli import main
from tabench_dsl.store import key_cells
from tabench_dsl.store.results import iter_records


@pytest.fixture(autouse=True, params=["keys in a set", "keys in rows"])
def key_layout(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test both ways `store/key_cells.py` holds pair keys: a few keys go to a set, and here
    to rows too (as ten million would)."""
    if request.param == "keys in rows":
        monkeypatch.setattr(key_cells, "DENSE_FROM", 0)


def ans(system: str, question: str, answer: str) -> str:
    return json.dumps({"system": system, "question": question, "answer": answer})


FIRST = [ans("a", "h01", "x"), ans("a", "h02", "7311"), ans("a", "h03", "blue"), ans("b", "h02", "7311")]
#: The first run's answers again, with bad lines among them and one new answer (b h03, after a BOM).
SECOND = [
    *FIRST[:2],
    ans("a", "h02", "again"),  # a duplicate of a done pair: still reported
    "{oops",
    "",
    ans("a", "nope", "x"),
    *FIRST[2:],
    "\ufeff" + ans("b", "h03", "blue"),
]


async def run_json(work: Path, capsys, lines: list[str], *extra: str) -> tuple[int, dict, str]:
    answers = work / "answers.jsonl"
    answers.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    battery = write_battery(work)
    code = await asyncio.to_thread(main, ["grade", str(battery), "--answers", str(answers), "--json", *extra])
    out, err = capsys.readouterr()
    return code, json.loads(out)["run"], err


async def test_resume_skips_done_pairs_and_reports_every_bad_line(work: Path, capsys) -> None:
    code, _, _ = await run_json(work, capsys, FIRST)
    assert code == 0
    code, run, _ = await run_json(work, capsys, SECOND, "--resume")
    assert code == 1  # the bad lines
    assert (run["graded"], run["skipped"], run["bad_lines"]) == (1, 4, 3)
    answers = work / "answers.jsonl"
    assert run["bad_line_messages"] == [
        f"{answers}:3: duplicate answer of system 'a' to question 'h02' (first at line 2); skipped",
        f"{answers}:4: not a JSON object: JSON is malformed: object keys must be strings (byte 1)",
        f"{answers}:6: unknown question 'nope'",
    ]
    assert run["missing"] == {"b": ["h01"]}  # a's done answers count as answered
    assert [(r.system, r.question) for r in iter_records(work / "results.jsonl")][4:] == [("b", "h03")]


async def test_resume_counts_as_skipped_only_the_slice(work: Path, capsys) -> None:
    assert (await run_json(work, capsys, FIRST))[0] == 0
    code, run, err = await run_json(work, capsys, FIRST, "--resume", "--system", "b")
    assert code == 0
    assert (run["graded"], run["skipped"], run["bad_lines"]) == (0, 1, 0)
    assert run["missing"] == {"b": ["h01", "h03"]}
    assert "nothing to grade: all 1 answer(s) already done (--resume)" in err


def records_without_time(path: Path) -> list[dict]:
    """The records of `path` without what the clock decides (when, and how long a call took)."""
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    for record in records:
        record["time"] = None
        for attempt in record["attempts"]:
            attempt["latency_ms"] = None
    return records


async def test_a_resume_from_what_is_kept_is_the_resume_without_it(
    work: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The compiled battery and the answers file's scan kept in the cache folder and the done pairs
    kept in the results index change nothing a resume does: the same records, counts and messages
    as one that has none of them."""
    from tabench_dsl.grading import answers as answers_module
    from tabench_dsl.language import render
    from tabench_dsl.store import standing_verdicts
    from tabench_dsl.store.results_index import index_path

    assert (await run_json(work, capsys, FIRST))[0] == 0
    results = work / "results.jsonl"
    start = results.read_bytes()

    monkeypatch.setenv("XDG_CACHE_HOME", str(work / "fresh-cache"))  # nothing kept yet
    index_path(results).unlink()
    without = await run_json(work, capsys, SECOND, "--resume")
    graded_without = records_without_time(results)
    assert list((work / "fresh-cache" / "tabench" / "compiled").glob("*.msgpack"))  # kept on the way
    assert list((work / "fresh-cache" / "tabench" / "answers").glob("*.msgpack"))

    results.write_bytes(start)
    standing_verdicts.done_pairs(results)  # the index of the file as it was, as a run leaves it

    def not_again(*args, **kwargs):
        raise AssertionError("compiled or read again: what was kept was not used")

    monkeypatch.setattr(render, "compile_battery", not_again)
    monkeypatch.setattr(render, "compiled_questions", not_again)
    monkeypatch.setattr(standing_verdicts._Growing, "note", not_again)
    monkeypatch.setattr(answers_module, "_strict_answer", not_again)  # no answer line decoded
    monkeypatch.setattr(answers_module.AnswerReader, "_all_passed_over", not_again)
    standing_verdicts._standing_at.cache_clear()
    kept = await run_json(work, capsys, SECOND, "--resume")
    assert kept == without
    assert records_without_time(results) == graded_without
    assert (kept[1]["graded"], kept[1]["skipped"], kept[1]["bad_lines"]) == (1, 4, 3)


async def test_resume_into_another_batterys_results_refuses_and_changes_nothing(work: Path, capsys) -> None:
    code, _, _ = await run_json(work, capsys, FIRST)
    assert code == 0
    # The same questions under another battery's name: its records would mix with demo's.
    other = work / "other"
    other.mkdir()
    for name in ("rules.policy", "questions.rubric"):
        (other / name).write_bytes((work / "battery" / name).read_bytes())
    manifest = (work / "battery" / "battery.yaml").read_text(encoding="utf-8")
    (other / "battery.yaml").write_text(manifest.replace("name: demo", "name: demo-two"), encoding="utf-8")
    before = {p.name: p.read_bytes() for p in work.iterdir() if p.is_file()}  # the results and its index
    argv = ["grade", str(other), "--answers", str(work / "answers.jsonl"), "--resume"]
    assert await asyncio.to_thread(main, argv) == 2
    err = capsys.readouterr().err
    assert err == (
        "tabench: error: results.jsonl holds the results of battery demo, not demo-two: --resume would "
        "mix the two in one file; give this grading another --out\n"
    )
    assert {p.name: p.read_bytes() for p in work.iterdir() if p.is_file()} == before
