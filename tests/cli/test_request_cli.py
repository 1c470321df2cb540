"""What the user adds to every judge request from the command line: `--structured`,
`--judge-param KEY=JSON`, `--judge-header NAME=VALUE` (its value a secret, checked with a canary), the
manifest's refusal of request fields and headers, and `compile --part schema`."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from support.helpers_grading import PASS, write_battery
from support.judge_server import Raw

from tabench_dsl.cli import main
from tabench_dsl.store.results import iter_records

#: `compile --part schema` of a tabench-1.1 battery, written out by hand.
SCHEMA_TEXT = """\
{
  "type": "object",
  "properties": {
    "verdict": {
      "type": "string",
      "enum": [
        "pass",
        "fail"
      ]
    },
    "reason": {
      "type": "string"
    },
    "facets": {
      "type": "object",
      "properties": {
        "extra_correct_info": {
          "type": "boolean"
        },
        "missing_minor": {
          "type": "boolean"
        },
        "erroneous_assertion": {
          "type": "boolean"
        }
      },
      "required": [
        "extra_correct_info",
        "missing_minor",
        "erroneous_assertion"
      ],
      "additionalProperties": false
    }
  },
  "required": [
    "verdict",
    "reason",
    "facets"
  ],
  "additionalProperties": false
}
"""
#: A header value in no key's shape: only the explicit secret rule can cut it.
CANARY = "hdr-canary-Zq9xK3wLm"


def answers(folder: Path, *questions: str) -> Path:
    path = folder / "answers.jsonl"
    lines = [
        json.dumps({"system": f"s{i}", "question": q, "answer": "Ingest"}) for i, q in enumerate(questions)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


async def run(argv: list[str]) -> int:
    return await asyncio.to_thread(main, argv)


def test_compile_prints_the_reply_schema_once(work: Path, capsysbinary) -> None:
    battery = write_battery(work)
    assert main(["compile", str(battery), "--part", "schema"]) == 0
    assert capsysbinary.readouterr().out == SCHEMA_TEXT.encode()


async def test_grade_structured_on_sends_the_schema(work: Path, judge_server) -> None:
    server = await judge_server([PASS])
    battery = write_battery(work)
    argv = ["grade", str(battery), "--answers", str(answers(work, "h03")), "--judge", server.url]
    assert await run([*argv, "--model", "m", "--structured", "on", "--no-cache"]) == 0
    assert server.requests[0]["response_format"]["json_schema"]["strict"] is True
    assert [r.verdict for r in iter_records(work / "results.jsonl")] == ["pass"]


async def test_params_and_headers_reach_the_server_and_the_header_never_a_file(
    work: Path, judge_server, capsys
) -> None:
    def reply(request: dict):
        if len(reply.seen) == 0:
            reply.seen.append(1)
            echoed = {"error": {"message": f"bad header {CANARY}", "type": "invalid_request_error"}}
            return Raw(500, echoed)
        return json.dumps({"verdict": "pass", "reason": f"fine {CANARY}", "facets": {}})

    reply.seen = []  # type: ignore[attr-defined]
    server = await judge_server(reply)
    battery = write_battery(work)
    argv = [
        "grade",
        str(battery),
        "--answers",
        str(answers(work, "h03")),
        "--judge",
        server.url,
        "--model",
        "m",
    ]
    flags = [
        "--judge-param",
        "top_p=0.5",
        "--judge-param",
        "seed=7",
        "--judge-header",
        f"X-Gateway-Key={CANARY}",
    ]
    assert await run([*argv, *flags, "--cache", str(work / "c.sqlite"), "--retries", "2"]) == 0
    sent = server.requests[-1]
    assert sent["top_p"] == 0.5 and sent["seed"] == 7
    assert sent["_headers"]["x-gateway-key"] == CANARY
    out, err = capsys.readouterr()
    assert CANARY not in out + err
    for path in work.rglob("*"):
        if path.is_file():
            assert CANARY.encode() not in path.read_bytes(), path
    record = next(iter_records(work / "results.jsonl"))
    assert "[redacted]" in record.reason


async def test_a_header_changes_the_reply_cache_key(work: Path, judge_server) -> None:
    server = await judge_server([PASS])
    battery = write_battery(work)
    argv = [
        "grade",
        str(battery),
        "--answers",
        str(answers(work, "h03")),
        "--judge",
        server.url,
        "--model",
        "m",
    ]
    argv += ["--cache", str(work / "c.sqlite")]
    for n, extra in enumerate(
        (["--judge-header", "X-A=1"], ["--judge-header", "X-A=1"], ["--judge-header", "X-A=2"])
    ):
        (work / "results.jsonl").unlink(missing_ok=True)
        assert await run([*argv, *extra]) == 0
        assert server.calls == (1, 1, 2)[n]


@pytest.mark.parametrize(
    ("flag", "said"),
    [
        (["--judge-param", "top_p"], "--judge-param 'top_p' is not KEY=JSON"),
        (["--judge-param", "service_tier=flex"], "--judge-param service_tier: the value is not JSON"),
        (["--judge-param", "messages=[]"], "--judge-param may not set 'messages'"),
        (["--judge-header", "Bad Name=x"], "--judge-header takes NAME=VALUE"),
        (["--judge-header", "Content-Type=text/plain"], "--judge-header may not set Content-Type"),
    ],
)
def test_malformed_flags_are_usage_errors(work: Path, capsys, flag: list[str], said: str) -> None:
    battery = write_battery(work)
    argv = ["grade", str(battery), "--answers", str(answers(work, "h03")), "--judge", "http://127.0.0.1:9"]
    assert main([*argv, "--model", "m", *flag]) == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("key", "flag"),
    [("headers", "--judge-header NAME=VALUE"), ("extra_body", "--judge-param KEY=JSON")],
)
def test_a_manifest_may_not_set_headers_or_body_fields(work: Path, capsys, key: str, flag: str) -> None:
    battery = write_battery(work)
    manifest = battery / "battery.yaml"
    manifest.write_text(manifest.read_text() + f"judge:\n  model: m\n  {key}: {{x: 1}}\n", encoding="utf-8")
    line = manifest.read_text().splitlines().index(f"  {key}: {{x: 1}}") + 1
    said = f"battery.yaml:{line}:3: a battery may not set judge request {key}: the user sets them with {flag}"
    assert main(["lint", str(battery)]) == 2
    assert said in capsys.readouterr().out
    assert main(["grade", str(battery), "--answers", str(answers(work, "h03"))]) == 2
    out, err = capsys.readouterr()
    assert said in out + err and "Traceback" not in err


async def test_batch_carries_the_schema_params_and_header_and_no_file_holds_the_header(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from support.batch_server import start_batch_server

    monkeypatch.setenv("TABENCH_BATCH_POLL", "0.01")
    seen: list[dict] = []

    def reply(body: dict) -> str:
        seen.append(body)
        return json.dumps({"verdict": "pass", "reason": f"fine {CANARY}", "facets": {}})

    server = await start_batch_server(reply)
    try:
        battery = write_battery(work)
        argv = ["grade", str(battery), "--answers", str(answers(work, "h03")), "--judge", server.url]
        argv += ["--model", "m", "--batch", "--structured", "on", "--judge-param", "seed=7"]
        argv += ["--judge-header", f"X-Gateway-Key={CANARY}", "--cache", str(work / "c.sqlite")]
        assert await run(argv) == 0
    finally:
        await server.close()
    assert seen[0]["response_format"]["type"] == "json_schema" and seen[0]["seed"] == 7
    assert any(h.get("X-Gateway-Key") == CANARY for h in server.headers_seen)
    assert (work / "results.batches.jsonl").exists()
    for path in work.rglob("*"):
        if path.is_file():
            assert CANARY.encode() not in path.read_bytes(), path
