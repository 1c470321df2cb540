"""The viewer's API and the HTML report on a run graded by a judge panel with a T1 audit: each
judge's vote on an answer, the panel and T1 audit tables, and the audit filters."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support.make_results import make_record, write_results

from tabench_dsl.core.records import Attempt, Audit, JudgeInfo, PanelVote, Record
from tabench_dsl.review.report import render_report
from tabench_dsl.review.viewer.app import make_app
from tabench_dsl.review.viewer.queries import Index
from tabench_dsl.review.viewer.run import load_run

JUDGE_A = JudgeInfo("openai", "judge-a", endpoint="http://127.0.0.1:1/v1")
JUDGE_B = JudgeInfo("anthropic", "judge-b", endpoint="http://127.0.0.1:2")
PANEL = JudgeInfo("panel", "openai:judge-a + anthropic:judge-b", label="panel (majority)")


def panel_record(system: str, a: str, b: str, outcome: str, cause: str | None = None) -> Record:
    base = make_record(system, "h02", "pass")
    votes = [
        PanelVote(JUDGE_A, a, f"A says {a}", attempts=[Attempt("first", f'{{"verdict": "{a}"}}', 10.0)]),  # type: ignore[arg-type]
        PanelVote(JUDGE_B, b, f"B says <{b}>", attempts=[Attempt("first", f'{{"verdict": "{b}"}}', 10.0)]),  # type: ignore[arg-type]
    ]
    return Record(
        system=system,
        question="h02",
        tier="t2",
        verdict=outcome,  # type: ignore[arg-type]
        reason=votes[0].reason,
        prompt_sha256=base.prompt_sha256,
        judge=PANEL,
        answer=base.answer,
        cause=cause,  # type: ignore[arg-type]
        panel=votes,
    )


def audited(system: str, verdict: str) -> Record:
    record = make_record(system, "h01", "t1")
    record.audit = Audit(verdict, f"the judge says {verdict}: it is NOT right", JUDGE_A)  # type: ignore[arg-type]
    return record


@pytest.fixture
def results(tmp_path: Path) -> Path:
    records = [
        panel_record("agent-a", "pass", "pass", "pass"),
        panel_record("agent-b", "pass", "fail", "adjudicate", "panel_split"),
        audited("agent-a", "pass"),
        audited("agent-b", "fail"),
        make_record("agent-c", "h01", "t1"),
    ]
    return write_results(tmp_path / "run.jsonl", records)


async def test_the_viewer_shows_each_judges_vote_and_filters_the_audit(aiohttp_client, results: Path) -> None:
    client = await aiohttp_client(make_app(Index(load_run(results), reviewer="ana")))

    async def keys(query: str) -> list[str]:
        response = await client.get("/api/records?" + query)
        assert response.status == 200
        return [f"{i['system']}/{i['question']}" for i in (await response.json())["items"]]

    assert await keys("audit=audited") == ["agent-a/h01", "agent-b/h01"]
    assert await keys("audit=disagree") == ["agent-b/h01"]
    assert await keys("audit=agree") == ["agent-a/h01"]
    assert await keys("cause=panel_split") == ["agent-b/h02"]

    page = await (await client.get("/api/records?system=agent-b")).json()
    by_key = {i["question"]: i for i in page["items"]}
    assert by_key["h02"]["votes"] == ["pass", "fail"] and by_key["h01"]["audit"] == "fail"

    detail = await (await client.get("/api/record/agent-b/h02")).json()
    assert [(v["judge_name"], v["verdict"], v["reason"]) for v in detail["votes"]] == [
        ("openai:judge-a", "pass", "A says pass"),
        ("anthropic:judge-b", "fail", "B says <fail>"),
    ]
    assert detail["votes"][1]["attempts"][0]["raw"] == '{"verdict": "fail"}'
    assert detail["audit"] is None
    audit = (await (await client.get("/api/record/agent-b/h01")).json())["audit"]
    assert (audit["judge_name"], audit["verdict"]) == ("openai:judge-a", "fail")

    totals = await (await client.get("/api/totals")).json()
    assert totals["t1_audit"]["agreed"] == 1 and totals["t1_audit"]["n"] == 2
    assert [j["judge"] for j in totals["panel"]["judges"]] == ["openai:judge-a", "anthropic:judge-b"]

    page_html = await (await client.get("/")).text()
    assert '<select name="audit">' in page_html


def test_the_report_shows_the_panel_the_audit_and_filters_it(results: Path) -> None:
    html = render_report(load_run(results))
    assert '<table id="panel">' in html
    assert '<tr><td class="l">openai:judge-a</td><td>2</td><td>2</td><td>0</td>' in html
    # Rows (pass, fail) (2,0) (1,1): P = (1 + 0) / 2 = 1/2; p = (3/4, 1/4), Pe = 10/16;
    # kappa = (1/2 - 5/8) / (3/8) = -1/3.
    assert "Fleiss' kappa -0.333 over the 2 answers" in html
    assert "agreed 1 of 2, 50.0%" in html
    assert re.search(r'<table id="t1-disagreements">.*?agent-b.*?it is NOT right', html, re.S)
    assert html.count('data-audit="fail"') == 1 and html.count('data-audit="pass"') == 1
    assert '<select name="audit">' in html
    assert "anthropic:judge-b: fail" in html and "B says &lt;fail&gt;" in html
    assert "T1 audit: openai:judge-a says fail: the judge says fail: it is NOT right" in html
