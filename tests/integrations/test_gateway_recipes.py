"""The judge recipes of docs/judges.md whose wire differs from plain OpenAI, each run as written
(the host swapped for a scripted server on 127.0.0.1, tests/support/compat_server.py): OpenRouter's
attribution headers and its error body, Gemini's `/v1beta/openai` path and its list-shaped error
refusing `prompt_cache_key`, Bedrock's `/openai/v1` path with its bearer API key. The key, sent as
OPENAI_API_KEY, never reaches a file or a message."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from support.compat_server import start_compat_server
from support.helpers_grading import PASS, write_battery

from tabench_dsl.cli import main
from tabench_dsl.store.results import iter_records

KEY = "sk-recipe-canary-0123456789abcdef"


@pytest.fixture
def work(work: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    return work


async def grade(work: Path, judge: str, *extra: str) -> int:
    answers = work / "answers.jsonl"
    answers.write_text(
        json.dumps({"system": "a", "question": "h03", "answer": "blue"}) + "\n", encoding="utf-8"
    )
    argv = ["grade", str(write_battery(work)), "--answers", str(answers), "--judge", judge, "--no-cache"]
    return await asyncio.to_thread(main, [*argv, *extra])


def no_key_written(work: Path) -> None:
    for path in work.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path


async def test_openrouter_with_its_attribution_headers(work: Path, capsys) -> None:
    server = await start_compat_server("/api/v1/chat/completions", [PASS], key=KEY)
    try:
        headers = [
            "--judge-header",
            "HTTP-Referer=https://example.org/lab",
            "--judge-header",
            "X-OpenRouter-Title=lab",
        ]
        assert await grade(work, f"{server.root}/api/v1", "--model", "openai/gpt-4o-mini", *headers) == 0
    finally:
        await server.close()
    sent = server.requests[0]["_headers"]
    assert sent["http-referer"] == "https://example.org/lab" and sent["x-openrouter-title"] == "lab"
    assert sent["authorization"] == f"Bearer {KEY}"
    assert next(iter_records(work / "results.jsonl")).verdict == "pass"
    no_key_written(work)


async def test_openrouters_error_body_gives_its_reason(work: Path, capsys) -> None:
    no_credit = {
        "error": {
            "code": 402,
            "message": "Insufficient credits. Add more using https://openrouter.ai/credits",
        }
    }
    server = await start_compat_server("/api/v1/chat/completions", [(402, no_credit)], key=KEY)
    try:
        assert await grade(work, f"{server.root}/api/v1", "--model", "openai/gpt-4o-mini") != 0
    finally:
        await server.close()
    err = capsys.readouterr().err
    assert "Insufficient credits" in err and KEY not in err


async def test_gemini_openai_endpoint_refusing_the_prompt_cache_key(work: Path) -> None:
    unknown = [
        {
            "error": {
                "code": 400,
                "message": "Invalid JSON payload received. "
                'Unknown name "prompt_cache_key": Cannot find field.',
                "status": "INVALID_ARGUMENT",
            }
        }
    ]
    server = await start_compat_server("/v1beta/openai/chat/completions", [(400, unknown), PASS], key=KEY)
    try:
        assert await grade(work, f"{server.root}/v1beta/openai/", "--model", "gemini-2.5-flash") == 0
    finally:
        await server.close()
    assert ["prompt_cache_key" in r for r in server.requests] == [True, False]
    assert next(iter_records(work / "results.jsonl")).verdict == "pass"
    no_key_written(work)


async def test_bedrock_openai_endpoint(work: Path) -> None:
    server = await start_compat_server("/openai/v1/chat/completions", [PASS], key=KEY)
    try:
        assert await grade(work, f"{server.root}/openai/v1", "--model", "openai.gpt-oss-120b-1:0") == 0
    finally:
        await server.close()
    assert server.requests[0]["model"] == "openai.gpt-oss-120b-1:0"
    assert server.requests[0]["_headers"]["authorization"] == f"Bearer {KEY}"
    no_key_written(work)
