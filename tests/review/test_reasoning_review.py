"""Answers graded on their final answer (reasoning cut, `core.reasoning`), as the viewer's API, the
HTML report and terminal `adjudicate` show them: the final answer, what was cut, and (in the
viewer) the reasoning itself to unfold."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import msgspec
import pytest
from support.make_results import make_record, write_battery, write_results

from tabench_dsl.cli import main
from tabench_dsl.core.reasoning import ReasoningInfo
from tabench_dsl.core.records import Record
from tabench_dsl.review.report import render_report
from tabench_dsl.review.viewer.app import make_app
from tabench_dsl.review.viewer.queries import Index
from tabench_dsl.review.viewer.run import compile_battery_at, load_run

THOUGHT = "The gold says SQLite <b>but</b> I recall Postgres"
AS_GIVEN = f"<think>{THOUGHT}</think>\n\nIn Postgres."
FINAL = "In Postgres."
CUT = ReasoningInfo(final=FINAL, blocks=1, characters=len(THOUGHT))
UNCLOSED_ANSWER = "<think>Still weighing Ingest, Index"
UNCLOSED = ReasoningInfo(final="", blocks=1, characters=len("Still weighing Ingest, Index"), unclosed=True)


def reasoning_record(question: str, outcome: str, answer: str, cut: ReasoningInfo, **kw) -> Record:
    record = make_record("qwen3", question, outcome, answer=answer, **kw)
    return msgspec.structs.replace(record, reasoning=cut)


@pytest.fixture
def results(tmp_path: Path) -> Path:
    battery = compile_battery_at(write_battery(tmp_path / "battery"))
    records = [
        reasoning_record("h01", "fail", AS_GIVEN, CUT),
        reasoning_record("h02", "adjudicate", UNCLOSED_ANSWER, UNCLOSED),
        make_record("plain", "h01", "pass", answer="In SQLite."),
    ]
    stamped = [
        msgspec.structs.replace(r, prompt_sha256=battery.questions[r.question].sha256) for r in records
    ]
    return write_results(tmp_path / "run.jsonl", stamped)


async def test_the_viewer_api_gives_the_final_answer_and_the_reasoning(
    aiohttp_client, results: Path, tmp_path: Path
) -> None:
    battery = tmp_path / "battery"
    client = await aiohttp_client(make_app(Index(load_run(results, battery=battery), reviewer="ana")))
    page = await (await client.get("/api/records?system=qwen3")).json()
    assert {i["question"]: i["answer"] for i in page["items"]} == {"h01": FINAL, "h02": ""}

    detail = await (await client.get("/api/record/qwen3/h01")).json()
    assert detail["record"]["answer"] == AS_GIVEN  # the record as written
    assert detail["final_answer"] == FINAL
    assert detail["reasoning"] == {
        "blocks": 1,
        "characters": len(THOUGHT),
        "unclosed": False,
        "line": f"reasoning cut before grading: 1 block, {len(THOUGHT)} characters",
        "text": THOUGHT,
    }
    # The prompts shown are the ones the judge saw: around the final answer.
    compiled = compile_battery_at(battery)
    assert detail["prompts"]["user"] == compiled.user.fill(FINAL)

    unclosed = await (await client.get("/api/record/qwen3/h02")).json()
    assert unclosed["final_answer"] == "" and unclosed["reasoning"]["unclosed"] is True
    assert unclosed["reasoning"]["text"] == "Still weighing Ingest, Index"
    assert unclosed["reasoning"]["line"].endswith(
        "; the answer ends inside a reasoning block, so it has no final text after it"
    )
    assert unclosed["prompts"]["user"] == compiled.user.fill("")
    assert unclosed["prompts"]["stern"] == compiled.stern.fill("")

    plain = await (await client.get("/api/record/plain/h01")).json()
    assert plain["final_answer"] == "In SQLite." and plain["reasoning"] is None


def test_the_report_shows_the_final_answer_and_what_was_cut(results: Path) -> None:
    html = render_report(load_run(results))
    assert f"<h4>Answer</h4><pre>{FINAL}</pre>\n" in html
    assert f'<p class="small">reasoning cut before grading: 1 block, {len(THOUGHT)} characters</p>' in html
    assert "I recall Postgres" not in html and "Still weighing" not in html


def test_adjudicate_shows_the_final_answer(monkeypatch, capsys, results: Path) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("q\n"))
    assert main(["adjudicate", str(results), "--reviewer", "ana"]) == 0
    out = capsys.readouterr().out
    assert "=== [1/1] qwen3 · h02 ===" in out
    assert (
        "Answer:\n    (empty)\n    (reasoning cut before grading: 1 block, 28 characters; the answer ends "
        "inside a reasoning block, so it has no final text after it)\n"
    ) in out
    assert "Still weighing" not in out
