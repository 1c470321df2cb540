"""The viewer with a second grading (`view --compare`), rubric tags and the pairwise comparison,
through aiohttp's test client against the real app."""

from __future__ import annotations

from pathlib import Path

import pytest
from msgspec.structs import replace
from test_diff import BOTH, NEW, OLD, rec, write

from tabench_dsl.core.records import Decision, record_encoder
from tabench_dsl.review.viewer.app import make_app
from tabench_dsl.review.viewer.queries import Index
from tabench_dsl.review.viewer.run import load_run
from tabench_dsl.store.decisions import decisions_path


@pytest.fixture
def gradings(tmp_path: Path) -> tuple[Path, Path]:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    write(a, [rec(q, x, OLD) for q, x, _ in BOTH] + [rec("only-a", "pass", OLD)])
    write(b, [rec(q, y, NEW) for q, _, y in BOTH])
    decision = Decision("s", "q5", "fail", "sha-q5", "ann", "2026-12-01T00:00:00Z")
    decisions_path(b).write_bytes(record_encoder.encode(decision) + b"\n")
    return a, b


async def get(client, url: str):
    response = await client.get(url)
    assert response.status == 200, await response.text()
    return await response.json()


async def test_second_grading_beside_the_first(aiohttp_client, gradings) -> None:
    a, b = gradings
    client = await aiohttp_client(make_app(Index(load_run(a), reviewer="ana", compare=load_run(b))))
    meta = await get(client, "/api/meta")
    assert meta["compare"] == str(b)
    compared = (await get(client, "/api/totals"))["compared"]
    assert (compared["flips"], compared["agreed"], compared["compared"]) == (6, 6, 11)
    assert compared["kappa"] == pytest.approx(1 / 6) and compared["p_value"] == 0.375
    assert "flipped: 6" in compared["lines"]
    flipped = await get(client, "/api/records?compared=flipped&limit=50")
    assert sorted(item["question"] for item in flipped["items"]) == ["q1", "q3", "q4", "r0", "r1", "r2"]
    missing = await get(client, "/api/records?compared=missing")
    assert [item["question"] for item in missing["items"]] == ["only-a"]
    assert missing["items"][0]["compared"] is None
    q5 = (await get(client, "/api/records?question=q5"))["items"][0]
    assert q5["compared"] == {
        "verdict": "adjudicate",
        "human": "fail",
        "reason": "new-judge says adjudicate",
        "judge_name": "anthropic:new-judge",
    }
    detail = await get(client, "/api/record/s/q1")
    assert detail["compared"]["verdict"] == "fail" and detail["compared"]["reason"] == "new-judge says fail"


async def test_a_decision_here_updates_what_changed(aiohttp_client, gradings) -> None:
    a, b = gradings
    client = await aiohttp_client(make_app(Index(load_run(a), reviewer="ana", compare=load_run(b))))
    # A's q3 is adjudicate, B's pass: deciding it pass here takes it off the flips.
    response = await client.post("/api/decision", json={"system": "s", "question": "q3", "verdict": "pass"})
    assert response.status == 200, await response.text()
    compared = (await get(client, "/api/totals"))["compared"]
    assert compared["flips"] == 5
    flipped = await get(client, "/api/records?compared=flipped")
    assert "q3" not in [item["question"] for item in flipped["items"]]


async def test_without_a_second_grading(aiohttp_client, gradings) -> None:
    a, _ = gradings
    client = await aiohttp_client(make_app(Index(load_run(a), reviewer="ana")))
    assert (await get(client, "/api/meta"))["compare"] is None
    assert (await get(client, "/api/totals"))["compared"] is None
    assert (await get(client, "/api/records?question=q1"))["items"][0]["compared"] is None


async def test_tags_pairs_and_the_tag_filter(aiohttp_client, tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    records = []
    for i in range(6):
        tags = ["easy"] if i < 4 else ["hard", "ops"]
        records.append(replace(rec(f"q{i}", "pass", OLD, "x"), tags=tags))
        records.append(replace(rec(f"q{i}", "fail" if i % 2 else "pass", OLD, "y"), tags=tags))
    write(path, records)
    client = await aiohttp_client(make_app(Index(load_run(path), reviewer="ana")))
    meta = await get(client, "/api/meta")
    assert meta["tags"] == ["easy", "hard", "ops"]
    totals = await get(client, "/api/totals")
    easy = totals["tags"][0]
    assert (easy["tag"], easy["answers"], easy["pass"], easy["score"]) == ("easy", 8, 6, 0.75)
    assert [(s["system"], s["score"]) for s in easy["systems"]] == [("x", 1.0), ("y", 0.5)]
    (pair,) = totals["comparisons"]["pairs"]
    # x passes all 6, y passes q0, q2, q4: discordant 3 (x only) to 0; p = 2 * (1/2)^3 = 0.25.
    assert (pair["a"], pair["b"], pair["a_only"], pair["b_only"], pair["p_value"]) == ("x", "y", 3, 0, 0.25)
    assert pair["significant"] is False
    hard = await get(client, "/api/records?tag=hard")
    assert sorted((i["system"], i["question"]) for i in hard["items"]) == [
        ("x", "q4"),
        ("x", "q5"),
        ("y", "q4"),
        ("y", "q5"),
    ]
    assert hard["items"][0]["tags"] == ["hard", "ops"]
