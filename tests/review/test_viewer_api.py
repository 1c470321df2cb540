"""The viewer's JSON API through aiohttp's test client: totals, filters, paging, detail, decisions."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import msgspec
import pytest
from support.make_results import (
    HOSTILE_ANSWER,
    make_record,
    many_results,
    sha,
    small_results,
    write_battery,
    write_results,
)

from tabench_dsl.core.records import CAUSE_TEXTS
from tabench_dsl.review.templating import csp_source
from tabench_dsl.review.viewer.app import make_app
from tabench_dsl.review.viewer.charts import COLOURS, GEOMETRY
from tabench_dsl.review.viewer.disk_index import load_disk_index
from tabench_dsl.review.viewer.queries import FILTER_KEYS, Index
from tabench_dsl.review.viewer.run import compile_battery_at, load_run
from tabench_dsl.store.decisions import load_decisions


@pytest.fixture
def results(tmp_path: Path) -> Path:
    return write_results(tmp_path / "run.jsonl", small_results())


#: The index `client_for` serves: the in-memory `Index` or the `DiskIndex` `tabench view` uses.
INDEX_KIND = {"kind": "memory"}


@pytest.fixture(autouse=True, params=["memory", "disk"])
def index_kind(request: pytest.FixtureRequest):
    """Every API test runs over both indexes: they must answer alike."""
    INDEX_KIND["kind"] = request.param
    yield request.param
    INDEX_KIND["kind"] = "memory"


async def client_for(aiohttp_client, path: Path, battery: Path | None = None, reviewer: str = "ana"):
    if INDEX_KIND["kind"] == "disk":
        index: Index = load_disk_index(path, battery=battery, reviewer=reviewer)
    else:
        index = Index(load_run(path, battery=battery), reviewer=reviewer)
    return await aiohttp_client(make_app(index))


async def get_json(client, url: str, status: int = 200):
    response = await client.get(url)
    assert response.status == status, await response.text()
    assert response.content_type == "application/json"
    return await response.json()


async def test_totals_count_the_standing_records(aiohttp_client, results: Path) -> None:
    client = await client_for(aiohttp_client, results)
    totals = await get_json(client, "/api/totals")
    rows = {
        s["system"]: (s["answers"], s["pass"], s["fail"], s["adjudicate"], s["error"], s["t1_passes"])
        for s in totals["systems"]
    }
    assert rows == {"agent-a": (4, 2, 1, 1, 0, 1), "agent-b": (4, 1, 1, 1, 1, 0)}
    agent_a = totals["systems"][0]
    assert agent_a["score"] == pytest.approx(0.5)
    assert 0 < agent_a["ci_low"] < 0.5 < agent_a["ci_high"] < 1
    charts = totals["charts"]  # data the page draws, never markup
    assert [(b["label"], b["counts"]) for b in charts["systems"]["bars"]] == [
        ("agent-a", {"pass": 2, "fail": 1, "adjudicate": 1, "error": 0}),
        ("agent-b", {"pass": 1, "fail": 1, "adjudicate": 1, "error": 1}),
    ]
    assert charts["systems"]["kind"] == "system" and charts["systems"]["note"] == ""
    assert [b["label"] for b in charts["questions"]["bars"]] == ["h01", "h02", "h03", "h04"]


async def test_filters_each_narrow_the_list(aiohttp_client, results: Path) -> None:
    client = await client_for(aiohttp_client, results)

    async def keys(query: str) -> list[str]:
        page = await get_json(client, "/api/records?" + query)
        assert page["total"] == len(page["items"])
        return [f"{i['system']}/{i['question']}" for i in page["items"]]

    assert len(await keys("")) == 8
    assert await keys("verdict=adjudicate") == ["agent-a/h04", "agent-b/h02"]
    assert await keys("verdict=error") == ["agent-b/h03"]
    assert await keys("verdict=fail&system=agent-a") == ["agent-a/h03"]  # the re-graded pair: last stands
    assert await keys("tier=t1") == ["agent-a/h01"]
    assert await keys("cause=malformed") == ["agent-b/h02"]
    assert await keys("facet=missing_minor") == ["agent-a/h02"]
    assert await keys("question=h01") == ["agent-a/h01", "agent-b/h01"]
    assert await keys("q=SUMMARIZE") == ["agent-a/h03", "agent-b/h04"]  # in the fail reasons
    assert await keys("human=decided") == []
    assert await keys("verdict=pass&tier=t1&system=agent-b") == []


async def test_bad_paging_is_a_400(aiohttp_client, results: Path) -> None:
    client = await client_for(aiohttp_client, results)
    for query in ("offset=-1", "limit=0", "limit=100000", "offset=x"):
        body = await get_json(client, "/api/records?" + query, status=400)
        assert body["error"].startswith("bad paging")


async def test_detail_has_every_attempt_and_the_compiled_prompt(aiohttp_client, tmp_path: Path) -> None:
    battery = write_battery(tmp_path / "battery")
    compiled = compile_battery_at(battery)
    stamped = [
        msgspec.structs.replace(r, prompt_sha256=compiled.questions[r.question].sha256)
        for r in small_results()
    ]
    stamped[-1] = msgspec.structs.replace(stamped[-1], prompt_sha256=sha("an older prompt"))  # agent-b/h04
    client = await client_for(aiohttp_client, write_results(tmp_path / "run.jsonl", stamped), battery)

    detail = await get_json(client, "/api/record/agent-a/h04")
    record, prompts = detail["record"], detail["prompts"]
    assert record["answer"] == HOSTILE_ANSWER
    assert [a["kind"] for a in record["attempts"]] == ["first", "stern"]
    assert '"reason": "The answer is correct and matches the gold."' in record["attempts"][0]["raw"]
    assert prompts["drift"] is None
    assert prompts["recorded_sha256"] == prompts["battery_sha256"] == compiled.questions["h04"].sha256
    assert '"question": "Is there a <Summarize> stage?"' in prompts["system"]
    assert '"answer_gold": "No <b>Summarize</b> stage exists"' in prompts["system"]
    assert prompts["user"] == "-- CANDIDATE ANSWER --\n" + HOSTILE_ANSWER
    assert HOSTILE_ANSWER in prompts["stern"] and prompts["stern"] == compiled.stern.fill(HOSTILE_ANSWER)
    assert prompts["stern"] != prompts["user"]

    drifted = await get_json(client, "/api/record/agent-b/h04")
    assert "sha256 mismatch" in drifted["prompts"]["drift"]
    assert drifted["prompts"]["stern"] is None  # no stern attempt, no stern prompt

    missing = await get_json(client, "/api/record/agent-a/h99", status=404)
    assert "h99" in missing["error"]


async def test_without_a_battery_the_detail_names_the_hash_only(aiohttp_client, results: Path) -> None:
    client = await client_for(aiohttp_client, results)
    prompts = (await get_json(client, "/api/record/agent-b/h02"))["prompts"]
    assert prompts["system"] is None and prompts["recorded_sha256"] == sha("SYSTEM for h02")
    assert prompts["drift"].startswith("no battery given")


async def test_a_system_name_with_a_slash_has_its_detail(aiohttp_client, tmp_path: Path) -> None:
    path = write_results(tmp_path / "run.jsonl", [make_record("org/model-7b", "h01", "pass")])
    client = await client_for(aiohttp_client, path)
    detail = await get_json(client, "/api/record/org%2Fmodel-7b/h01")
    assert detail["record"]["system"] == "org/model-7b"


async def test_a_decision_is_appended_and_counted(aiohttp_client, results: Path) -> None:
    client = await client_for(aiohttp_client, results, reviewer="ana")
    before = results.read_bytes()
    response = await client.post(
        "/api/decision",
        json={
            "system": "agent-a",
            "question": "h04",
            "verdict": "pass",
            "note": "matches <the> gold",
            "prompt_sha256": sha("SYSTEM for h04"),
        },
    )
    assert response.status == 200, await response.text()
    body = await response.json()
    assert body["record"]["human"] == "pass" and body["decision"]["reviewer"] == "ana"
    assert results.read_bytes() == before  # results are never rewritten
    [decision] = load_decisions(decisions_of(results))
    assert (decision.system, decision.question, decision.verdict, decision.note) == (
        "agent-a",
        "h04",
        "pass",
        "matches <the> gold",
    )
    assert decision.prompt_sha256 == sha("SYSTEM for h04") and decision.time.endswith("Z")

    agent_a = (await get_json(client, "/api/totals"))["systems"][0]
    assert (agent_a["pass"], agent_a["adjudicate"], agent_a["human_pass"]) == (3, 0, 1)
    decided = await get_json(client, "/api/records?human=decided")
    assert [i["question"] for i in decided["items"]] == ["h04"]
    undecided = await get_json(client, "/api/records?verdict=adjudicate&human=undecided")
    assert [i["question"] for i in undecided["items"]] == ["h02"]


def decisions_of(results: Path) -> Path:
    return results.with_name("run.decisions.jsonl")


async def test_decisions_are_refused_where_they_do_not_belong(aiohttp_client, results: Path) -> None:
    client = await client_for(aiohttp_client, results)
    good = {"system": "agent-b", "question": "h02", "verdict": "fail"}
    cases = [
        ({**good, "question": "h01"}, {}, 409),  # a pass, not adjudicate
        ({**good, "verdict": "maybe"}, {}, 400),
        ({**good, "prompt_sha256": sha("another prompt")}, {}, 409),  # the page showed other text
        ({"system": "agent-b"}, {}, 400),
        ({**good, "question": "h77"}, {}, 404),
        (good, {"Origin": "http://evil.example"}, 403),  # another site's page
    ]
    for body, headers, status in cases:
        response = await client.post("/api/decision", json=body, headers=headers)
        assert response.status == status, (body, headers, await response.text())
    form = await client.post("/api/decision", data=good)  # a plain HTML form from anywhere
    assert form.status == 415
    rebound = await client.get("/api/meta", headers={"Host": "attacker.example:8080"})
    assert rebound.status == 403
    assert not decisions_of(results).exists()


async def test_page_carries_no_record_text_and_builds_no_markup(aiohttp_client, tmp_path: Path) -> None:
    evil = '<script>alert("x")</script>'
    path = write_results(
        tmp_path / "run.jsonl",
        [*small_results(), make_record(evil, "h01", "adjudicate", answer=HOSTILE_ANSWER)],
    )
    client = await client_for(aiohttp_client, path)
    page = await client.get("/")
    html = await page.text()
    assert page.content_type == "text/html"
    assert "default-src 'none'" in page.headers["Content-Security-Policy"]
    assert "onerror" not in html and "alert(" not in html
    # Record text and chart labels become text nodes: nothing on the page parses markup.
    for parser in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "DOMParser"):
        assert parser not in html
    totals = await get_json(client, "/api/totals")
    assert evil in [b["label"] for b in totals["charts"]["systems"]["bars"]]  # as data, not markup
    items = (await get_json(client, "/api/records?verdict=adjudicate"))["items"]
    assert HOSTILE_ANSWER[:40] in [i["answer"][:40] for i in items]  # JSON keeps the text as it is


async def test_the_page_takes_its_words_and_colours_from_the_server(aiohttp_client, results: Path) -> None:
    client = await client_for(aiohttp_client, results)
    response = await client.get("/")
    page = await response.text()
    blob = re.search(r'<script type="application/json" id="constants">(.*?)</script>', page, re.S)[1]
    constants = msgspec.json.decode(blob)
    assert constants["causes"] == CAUSE_TEXTS
    assert constants["colours"] == COLOURS and constants["chart"] == msgspec.to_builtins(GEOMETRY)
    assert [item["name"] for item in constants["legend"]] == list(COLOURS)
    assert constants["filters"] == list(FILTER_KEYS)
    assert constants["verdicts"] == ["pass", "fail", "adjudicate", "error"]
    assert constants["tiers"] == ["t1", "t2", "match"]
    assert (
        '<select name="verdict"><option value="">any</option><option value="pass">pass</option>'
        '<option value="fail">fail</option><option value="adjudicate">adjudicate</option>'
        '<option value="error">error</option></select>'
    ) in page
    # The script keeps no copy of them; the style sheet takes the colours from the same place.
    script = re.search(r"<script>(.*?)</script>", page, re.S)[1]
    style = re.search(r"<style>(.*?)</style>", page, re.S)[1]
    assert not [text for text in [*CAUSE_TEXTS.values(), *COLOURS.values()] if text in script]
    assert all(f"--{name}: {colour};" in style for name, colour in COLOURS.items())
    # The policy allows exactly the inline script and style the page carries.
    header = response.headers["Content-Security-Policy"]
    policy = dict(part.strip().split(" ", 1) for part in header.split(";"))
    assert policy["script-src"] == csp_source(script) and policy["style-src"] == csp_source(style)


MALFORMED_BODIES = [
    b"[" * 30_000 + b"]" * 30_000,  # nested deeper than Python recurses
    b'{"system": ' + b"[" * 30_000,
    b'{"system": "agent-b", "question": "h02", "verdict": "fail", "note": {"n": '
    + b"[" * 30_000
    + b"]" * 30_000
    + b"}}",
    b"not json",
    b"\xff\xfe{}",
    b"",
    b"null",
    b'"agent-b"',
    b"17",
    b'{"system": ["agent-b"], "question": "h02", "verdict": "fail"}',  # wrong types
    b'{"system": "agent-b", "question": "h02", "verdict": true}',
    b'{"system": "agent-b", "question": "h02", "verdict": "fail", "note": {"x": 1}}',
    b'{"system": "agent-b", "question": "h02", "verdict": "fail", "prompt_sha256": 5}',
    b'{"system": "agent-b", "question": "h02", "verdict": "fail", "extra": 1}',
    b'{"system": "agent-b", "question": "h02", "verdict": "fail", "note": "' + b"x" * 70_000 + b'"}',  # big
]


@pytest.mark.parametrize("body", MALFORMED_BODIES, ids=range(len(MALFORMED_BODIES)))
async def test_a_malformed_decision_is_a_400_and_nothing_in_the_log(
    aiohttp_client, results: Path, caplog: pytest.LogCaptureFixture, body: bytes
) -> None:
    caplog.set_level(logging.DEBUG)
    client = await client_for(aiohttp_client, results)
    response = await client.post("/api/decision", data=body, headers={"Content-Type": "application/json"})
    text = await response.text()
    assert response.status == 400, text[:300]
    assert response.content_type == "application/json"
    error = msgspec.json.decode(text)["error"]
    assert error.startswith("a decision ") and len(error) < 400 and "\n" not in error
    assert not [r for r in caplog.records if r.exc_info or "Traceback" in r.getMessage()]
    assert not decisions_of(results).exists()
    # The viewer still answers.
    assert (await client.get("/api/meta")).status == 200


@pytest.fixture(scope="module")
def big_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_results(tmp_path_factory.mktemp("big") / "big.jsonl", many_results(100_000))


@pytest.mark.slow
async def test_paging_over_100000_records(aiohttp_client, big_results: Path, tmp_path: Path) -> None:
    """Every page of a large run is right; over the disk index (`tabench view`'s) a page reads only
    its own lines: every other line is scribbled over after the index is built, and the pages
    still come back as they were. How long a page takes is bench/scale_bench.py's `view paging`."""
    results = tmp_path / "big.jsonl"
    results.write_bytes(big_results.read_bytes())  # scribbled on below: the fixture's is shared
    client = await client_for(aiohttp_client, results)
    html = await (await client.get("/")).text()
    meta = await get_json(client, "/api/meta")
    totals = await get_json(client, "/api/totals")
    first = await get_json(client, "/api/records?offset=0&limit=50")
    assert meta["records"] == 100_000 and sum(s["answers"] for s in totals["systems"]) == 100_000
    assert first["total"] == 100_000 and len(first["items"]) == 50
    assert len(html) < 60_000  # the page is the same size whatever the run: no rows in it

    adjudicate = sum(s["adjudicate"] for s in totals["systems"])
    seen: set[tuple[str, str]] = set()
    pages = []
    offset = 0
    while True:  # bounded: at most total / limit + 1 pages
        page_data = await get_json(client, f"/api/records?verdict=adjudicate&offset={offset}&limit=500")
        assert page_data["total"] == adjudicate
        keys = {(i["system"], i["question"]) for i in page_data["items"]}
        assert not keys & seen and all(i["verdict"] == "adjudicate" for i in page_data["items"])
        seen |= keys
        pages.append(page_data)
        offset += 500
        if offset >= page_data["total"]:
            break
    assert len(seen) == adjudicate > 10_000
    last = await get_json(client, "/api/records?offset=99990&limit=50")
    assert len(last["items"]) == 10 and last["items"][-1]["system"] == "sys-09"
    if INDEX_KIND["kind"] == "memory":
        return

    # The disk index: keep the lines of three pages, scribble over every other one in place.
    middle = pages[len(pages) // 2]
    kept = {(i["system"], i["question"]) for page in (first, middle, last) for i in page["items"]}
    scribble_lines_but(results, kept)
    assert await get_json(client, "/api/records?offset=0&limit=50") == first
    middle_page = f"/api/records?verdict=adjudicate&offset={middle['offset']}&limit=500"
    assert await get_json(client, middle_page) == middle
    assert await get_json(client, "/api/records?offset=99990&limit=50") == last
    # ... and the scribbling shows where a line is read: a record off those pages is refused.
    elsewhere = await client.get("/api/record/sys-05/q05000")
    assert elsewhere.status == 409 and "changed since the viewer read the file" in await elsewhere.text()


def scribble_lines_but(path: Path, kept: set[tuple[str, str]]) -> None:
    """Overwrite in place every line of the results file at `path` whose (system, question) is not
    in `kept` with as many bytes that are no JSON: the lines keep their offsets."""
    lines = path.read_bytes().splitlines(keepends=True)
    with open(path, "r+b") as f:
        for line in lines:
            record = msgspec.json.decode(line)
            keep = (record["system"], record["question"]) in kept
            f.write(line if keep else b"#" * (len(line) - 1) + b"\n")


async def test_a_later_decision_replaces_an_earlier_one(aiohttp_client, results: Path) -> None:
    client = await client_for(aiohttp_client, results)
    for verdict in ("pass", "fail"):
        response = await client.post(
            "/api/decision", json={"system": "agent-b", "question": "h02", "verdict": verdict}
        )
        assert response.status == 200
    agent_b = (await get_json(client, "/api/totals"))["systems"][1]
    counts = (agent_b["human_pass"], agent_b["human_fail"], agent_b["fail"], agent_b["adjudicate"])
    assert counts == (0, 1, 2, 0)
    assert [d.verdict for d in load_decisions(decisions_of(results))] == ["pass", "fail"]
    # Reloading from disk gives the same standing: the last decision wins.
    reloaded = Index(load_run(results)).totals().systems[1]
    assert (reloaded.human_pass, reloaded.human_fail) == (0, 1)


def test_view_command_usage_errors(tmp_path: Path, capsys, results: Path) -> None:
    import socket

    from tabench_dsl.cli import main

    assert main(["view", str(tmp_path / "none.jsonl"), "--no-browser"]) == 2
    assert capsys.readouterr().err == f"tabench: error: {tmp_path / 'none.jsonl'}: no such results file\n"
    assert main(["view", str(results), "--port", "70000", "--no-browser"]) == 2
    assert "--port 70000: not a port number" in capsys.readouterr().err
    answers = tmp_path / "answers.jsonl"
    answers.write_text('{"system": "a", "question": "h01", "answer": "x"}\n', encoding="utf-8")
    assert main(["view", str(answers), "--no-browser"]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"tabench: error: {answers}: this looks like an answers file, not a results file; grade it first: "
        f"tabench grade BATTERY --answers {answers}\n"
    )
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert main(["view", str(results), "--port", str(port), "--no-browser"]) == 2
    assert f"cannot listen on 127.0.0.1:{port}" in capsys.readouterr().err


def many_systems(tmp_path: Path, count: int = 120) -> Path:
    """A run of `count` systems (agent-000 ...), one answer each; every seventh fails."""
    records = [make_record(f"agent-{i:03d}", "h01", "fail" if i % 7 == 0 else "pass") for i in range(count)]
    return write_results(tmp_path / "many.jsonl", records)


async def test_the_totals_table_pages_and_searches_by_system(aiohttp_client, tmp_path: Path) -> None:
    client = await client_for(aiohttp_client, many_systems(tmp_path))
    first = await get_json(client, "/api/systems?offset=0&limit=50")
    assert (first["total"], first["offset"], first["limit"]) == (120, 0, 50)
    assert [s["system"] for s in first["items"]] == [f"agent-{i:03d}" for i in range(50)]
    last = await get_json(client, "/api/systems?offset=100&limit=50")
    assert [s["system"] for s in last["items"]] == [f"agent-{i:03d}" for i in range(100, 120)]
    # A row carries what the totals row carries (the same numbers as /api/totals).
    totals = await get_json(client, "/api/totals")
    assert last["items"][5] == totals["systems"][105]
    assert (last["items"][5]["fail"], last["items"][5]["pass"]) == (1, 0)
    # The search is case-blind, on the name, and its result pages too.
    found = await get_json(client, "/api/systems?q=AGENT-01&limit=4")
    assert found["total"] == 10
    assert [s["system"] for s in found["items"]] == ["agent-010", "agent-011", "agent-012", "agent-013"]
    assert (await get_json(client, "/api/systems?q=nobody"))["total"] == 0
    assert (await get_json(client, "/api/systems"))["limit"] == 50
    for query in ("offset=-1", "limit=0", "limit=100000", "offset=x"):
        body = await get_json(client, "/api/systems?" + query, status=400)
        assert body["error"].startswith("bad paging")


async def test_a_decision_shows_in_the_paged_totals(aiohttp_client, results: Path) -> None:
    client = await client_for(aiohttp_client, results)
    before = (await get_json(client, "/api/systems?q=agent-a"))["items"]
    assert [(s["system"], s["adjudicate"], s["human_pass"]) for s in before] == [("agent-a", 1, 0)]
    response = await client.post(
        "/api/decision", json={"system": "agent-a", "question": "h04", "verdict": "pass"}
    )
    assert response.status == 200, await response.text()
    after = (await get_json(client, "/api/systems?q=agent-a"))["items"]
    assert [(s["system"], s["adjudicate"], s["human_pass"]) for s in after] == [("agent-a", 0, 1)]


async def test_judges_are_named_as_every_output_names_them(aiohttp_client, tmp_path: Path) -> None:
    """The page shows the server's `JudgeInfo.describe` names: no name of its own, no label nested in
    parentheses ("builtin:lexical-1 (builtin lexical judge (not a language model))")."""
    from tabench_dsl.grading.judges.builtin import INFO

    record = msgspec.structs.replace(make_record("agent-a", "h01", "fail"), judge=INFO)
    path = write_results(tmp_path / "run.jsonl", [record])
    client = await client_for(aiohttp_client, path)
    totals = await get_json(client, "/api/totals")
    assert totals["judge_names"] == [INFO.describe()]
    assert totals["judge_names"][0] == "builtin lexical judge (not a language model), builtin:lexical-1"
    detail = await get_json(client, "/api/record/agent-a/h01")
    assert detail["judge_name"] == INFO.describe()
    page = await (await client.get("/")).text()
    assert "not a language model" not in page  # the script composes no judge name of its own
