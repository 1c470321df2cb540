"""Round 3, the viewer's audits: a draw hands out tokens, so another web site may not make one
through the browser (Origin and Sec-Fetch-Site checked as for every state change), and the tokens
expire and are bounded however often the page draws. Through aiohttp's test client."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.make_results import small_results, write_battery, write_results

from tabench_dsl.review.viewer.app import make_app
from tabench_dsl.review.viewer.audit_api import MAX_AUDIT, MAX_TOKENS, TOKEN_LIFETIME, AuditDesk, AuditRequest
from tabench_dsl.review.viewer.queries import Index
from tabench_dsl.review.viewer.run import load_run


@pytest.fixture
def index(tmp_path: Path) -> Index:
    results = write_results(tmp_path / "run.jsonl", small_results())
    return Index(load_run(results, battery=write_battery(tmp_path / "battery")), reviewer="ana")


async def test_an_audit_draw_from_another_site_is_refused(aiohttp_client, index: Index) -> None:
    client = await aiohttp_client(make_app(index))
    for headers in ({"Origin": "https://evil.example"}, {"Sec-Fetch-Site": "cross-site"}):
        response = await client.get("/api/audit?n=3", headers=headers)
        assert response.status == 403, headers
        response = await client.post("/api/audit", json={"token": "t", "verdict": "pass"}, headers=headers)
        assert response.status == 403, headers
    own = f"http://{client.server.host}:{client.server.port}"
    response = await client.get("/api/audit?n=3", headers={"Origin": own, "Sec-Fetch-Site": "same-origin"})
    assert response.status == 200


def test_audit_tokens_expire_and_are_bounded(index: Index) -> None:
    now = [1000.0]
    desk = AuditDesk(index, clock=lambda: now[0])
    drawn = desk.draw(3, 0)["items"]
    size = len(drawn)
    for seed in range(1, 3 * MAX_TOKENS // max(1, size) + 2):
        desk.draw(3, seed)
    assert len(desk.tokens) <= MAX_TOKENS
    # The first draw's tokens were the oldest: dropped first.
    with pytest.raises(KeyError):
        desk.decide(AuditRequest(token=drawn[0]["token"], verdict="pass"))
    fresh = desk.draw(1, 99)["items"][0]["token"]
    now[0] += TOKEN_LIFETIME + 1
    with pytest.raises(KeyError):
        desk.decide(AuditRequest(token=fresh, verdict="pass"))
    assert MAX_TOKENS >= MAX_AUDIT  # one whole draw always fits
