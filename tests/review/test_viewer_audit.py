"""The viewer's audit mode through aiohttp's test client: a blind draw, an audit, the reveal, and
the totals and disagreements it feeds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.make_results import small_results, write_battery, write_results

from tabench_dsl.review.viewer.app import make_app
from tabench_dsl.review.viewer.disk_index import load_disk_index
from tabench_dsl.review.viewer.queries import Index
from tabench_dsl.review.viewer.run import load_run
from tabench_dsl.store.decisions import load_decisions


@pytest.fixture
def results(tmp_path: Path) -> Path:
    return write_results(tmp_path / "run.jsonl", small_results())


@pytest.fixture(params=["memory", "disk"])
def kind(request: pytest.FixtureRequest) -> str:
    """The index served: the in-memory `Index` or the `DiskIndex` `tabench view` uses."""
    return request.param


@pytest.fixture
def client_for(kind: str):
    async def make(aiohttp_client, path: Path, battery: Path | None = None):
        if kind == "disk":
            index: Index = load_disk_index(path, battery=battery, reviewer="ana")
        else:
            index = Index(load_run(path, battery=battery), reviewer="ana")
        return await aiohttp_client(make_app(index))

    return make


async def test_a_blind_audit_from_the_page(aiohttp_client, client_for, results: Path, tmp_path: Path) -> None:
    client = await client_for(aiohttp_client, results, write_battery(tmp_path / "battery"))
    response = await client.get("/api/audit?n=3&seed=2")
    assert response.status == 200
    drawn = await response.json()
    assert drawn["seed"] == 2 and len(drawn["items"]) == 3
    # The tokens are random letters (any word may turn up in one by chance): the rest is read.
    text = json.dumps(
        [{key: value for key, value in item.items() if key != "token"} for item in drawn["items"]]
    )
    # Blind: the draw says nothing of who wrote each answer or what the judge made of it.
    for hidden in ("agent-a", "agent-b", "pass", "fail", "Names all four", "Claims a Summarize", "T1"):
        assert hidden not in text
    first = drawn["items"][0]
    assert set(first) == {"token", "question", "answer", "gold"} and first["gold"]

    response = await client.post(
        "/api/audit", json={"token": first["token"], "verdict": "fail", "note": "no"}
    )
    assert response.status == 200
    reveal = await response.json()
    assert reveal["system"] in ("agent-a", "agent-b") and reveal["question"] == first["question"]
    assert reveal["agreed"] == (reveal["judge_verdict"] == "fail")
    [audit] = load_decisions(results.with_name("run.decisions.jsonl"))
    assert (audit.kind, audit.verdict, audit.reviewer, audit.note) == ("audit", "fail", "ana", "no")
    assert (audit.system, audit.question) == (reveal["system"], reveal["question"])

    # A token is spent once; one the server never gave is refused.
    again = await client.post("/api/audit", json={"token": first["token"], "verdict": "pass"})
    assert again.status == 404
    bad = await client.post("/api/audit", json={"token": "x", "verdict": "maybe"})
    assert bad.status == 400

    # The totals the page shows carry the audit and its disagreement, the verdict unchanged.
    totals = await (await client.get("/api/totals")).json()
    overall = totals["all"]["audit"]
    assert overall["n"] == 1
    assert len(overall["disagreements"]) == (0 if reveal["agreed"] else 1)
    record = await (await client.get(f"/api/record/{reveal['system']}/{reveal['question']}")).json()
    assert record["record"]["verdict"] == reveal["judge_verdict"]
    assert record["record"]["human_audit"]["verdict"] == "fail"
    # Already audited: a new draw does not offer it again.
    redrawn = await (await client.get("/api/audit?n=9")).json()
    assert len(redrawn["items"]) == 4


async def test_audit_requests_out_of_range_and_from_elsewhere(
    aiohttp_client, client_for, results: Path
) -> None:
    client = await client_for(aiohttp_client, results)
    assert (await client.get("/api/audit?n=0")).status == 400
    assert (await client.get("/api/audit?n=x")).status == 400
    token = (await (await client.get("/api/audit?n=1")).json())["items"][0]["token"]
    foreign = await client.post(
        "/api/audit", json={"token": token, "verdict": "pass"}, headers={"Origin": "http://evil.example"}
    )
    assert foreign.status == 403
    form = await client.post("/api/audit", data={"token": token, "verdict": "pass"})
    assert form.status == 415
