"""Refusals a grading must read right: a 4xx body in any common shape says why, a refused
`temperature` is dropped once and said, a refusal for want of credit stops the run at once, and a
key withheld from a plain-http URL says so. Against the scripted judge server, replies and error
bodies in the providers' shapes (tests/support/provider_replies.py)."""

from __future__ import annotations

import socket
from pathlib import Path

import aiohttp
import pytest
from aiohttp.abc import AbstractResolver, ResolveResult
from support.helpers_grading import PASS, compiled_battery, fast_policy, grade
from support.judge_server import TEMPERATURE_REFUSALS, Raw
from support.provider_replies import (
    ANTHROPIC_NO_CREDIT,
    FASTAPI_422,
    MISTRAL_EXTRA_FORBIDDEN,
    OPENAI_NO_QUOTA,
    anthropic_error,
    openai_error,
)

from tabench_dsl.core.errors import JudgeError, UsageError
from tabench_dsl.core.records import Answer
from tabench_dsl.grading.cache import ReplyCache
from tabench_dsl.grading.judges.factory import make_judge
from tabench_dsl.grading.judges.wire_errors import error_message, money_error, refused_field
from tabench_dsl.grading.runner import Grader
from tabench_dsl.grading.transport import ExchangeGate
from tabench_dsl.store.results import ResultsWriter, iter_records

ANSWER = Answer("a", "h03", "azure")


def _body(raw: Raw) -> bytes:
    import json

    return json.dumps(raw.body).encode()


@pytest.mark.parametrize(
    ("raw", "said"),
    [
        (
            openai_error(400, "Invalid value for 'n'", kind="invalid_request_error"),
            "invalid_request_error: Invalid value for 'n'",
        ),
        (
            anthropic_error(400, "max_tokens: Field required", kind="invalid_request_error"),
            "invalid_request_error: max_tokens: Field required",
        ),
        (
            Raw(400, {"error": "model 'qwen3' not found, try pulling it first"}),
            "model 'qwen3' not found, try pulling it first",
        ),
        (Raw(400, {"message": "Unknown parameter: 'seed'"}), "Unknown parameter: 'seed'"),
        (Raw(404, {"detail": "Not Found"}), "Not Found"),
        (FASTAPI_422, "model: Field required (missing)"),
        (MISTRAL_EXTRA_FORBIDDEN, "prompt_cache_key: Extra inputs are not permitted (extra_forbidden)"),
    ],
)
def test_every_common_error_body_gives_its_reason(raw: Raw, said: str) -> None:
    assert error_message(_body(raw)) == said


def test_a_field_is_refused_only_when_the_server_refuses_the_field_itself() -> None:
    openai_status, openai_body = TEMPERATURE_REFUSALS["openai"]
    anthropic_status, anthropic_body = TEMPERATURE_REFUSALS["anthropic"]
    assert refused_field(openai_status, _body(Raw(400, openai_body)), "temperature")
    assert refused_field(anthropic_status, _body(Raw(400, anthropic_body)), "temperature")
    assert refused_field(422, _body(MISTRAL_EXTRA_FORBIDDEN), "prompt_cache_key")
    unsupported = openai_error(
        400,
        "Unsupported parameter: 'temperature' is not supported with this model.",
        kind="invalid_request_error",
        param="temperature",
        code="unsupported_parameter",
    )
    assert refused_field(400, _body(unsupported), "temperature")
    # A value out of range is the user's to fix, not a field to drop; other statuses never refuse.
    out_of_range = anthropic_error(
        400, "temperature: must be a number from 0 to 1", kind="invalid_request_error"
    )
    assert not refused_field(400, _body(out_of_range), "temperature")
    assert not refused_field(500, _body(Raw(500, openai_body)), "temperature")
    assert not refused_field(400, _body(Raw(400, openai_body)), "max_tokens")


def test_money_errors_are_told_from_rate_limits() -> None:
    assert money_error(429, _body(OPENAI_NO_QUOTA))
    assert money_error(400, _body(ANTHROPIC_NO_CREDIT))
    assert money_error(402, b'{"error": {"message": "Insufficient credits", "code": 402}}')
    assert not money_error(
        429, b'{"error": {"message": "Rate limit reached for requests", "type": "requests"}}'
    )
    assert not money_error(
        400, b'{"error": {"message": "scripted bad request", "type": "invalid_request_error"}}'
    )


async def test_a_422_naming_a_field_is_asked_again_without_it(tmp_path: Path, judge_server) -> None:
    server = await judge_server([MISTRAL_EXTRA_FORBIDDEN, PASS])
    (record,), stats = await grade(compiled_battery(tmp_path), server.url, [ANSWER], tmp_path / "r.jsonl")
    assert record.verdict == "pass" and record.cause is None
    assert "prompt_cache_key" in server.requests[0] and "prompt_cache_key" not in server.requests[1]
    assert server.calls == 2 and stats.calls == 1 and len(record.attempts) == 1


async def test_a_4xx_in_fastapi_shape_says_why(tmp_path: Path, judge_server) -> None:
    server = await judge_server([FASTAPI_422])
    (record,), _ = await grade(compiled_battery(tmp_path), server.url, [ANSWER], tmp_path / "r.jsonl")
    assert record.verdict == "error" and record.cause == "transport"
    host = server.url.split("/")[2]
    assert record.reason == f"{host} judge rejected the request (HTTP 422): model: Field required (missing)"
    assert server.calls == 1


async def _grade_with(judge_name: str, env: dict, out: Path, battery, answers, *, cache=None, warnings=None):
    async with aiohttp.ClientSession() as session:
        notice = None if warnings is None else warnings.append
        judge = make_judge(judge_name, model="judge-m", session=session, env=env, timeout=5.0, notice=notice)
        with ResultsWriter(out) as writer:
            grader = Grader(
                battery,
                judge,
                writer=writer,
                cache=cache,
                policy=fast_policy(),
                limiter=ExchangeGate(1),
                env=env,
            )
            stats = await grader.run(answers)
    return list(iter_records(out)), stats, judge


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
async def test_a_refused_temperature_is_dropped_once_said_and_keyed(
    tmp_path: Path, judge_server, protocol: str
) -> None:
    server = await judge_server([PASS], refuse_temperature=True)
    if protocol == "openai":
        name, env = server.url, {}
    else:
        name, env = "anthropic", {"ANTHROPIC_BASE_URL": server.anthropic_url, "ANTHROPIC_API_KEY": "k"}
    battery = compiled_battery(tmp_path)
    answers = [Answer("a", "h03", "azure"), Answer("b", "h03", "blue"), Answer("c", "h03", "navy")]
    warnings: list[str] = []
    cache = ReplyCache(tmp_path / "cache.sqlite")
    records, stats, judge = await _grade_with(
        name, env, tmp_path / "r.jsonl", battery, answers, cache=cache, warnings=warnings
    )
    assert [r.verdict for r in records] == ["pass"] * 3 and {r.cause for r in records} == {None}
    # One refusal, then every request without it; three billed replies, one attempt each.
    assert len(server.rejections) == 1 and server.calls == 3 and stats.calls == 3
    assert "temperature" in server.requests[0]
    assert all("temperature" not in r for r in server.requests[1:])
    assert judge.sent_temperature is None and judge.params.temperature == 0  # as built: the key
    assert len(warnings) == 1
    assert warnings[0].endswith(
        "refused temperature 0: asking without it (the model's own default) for the rest of the run"
    )
    # The replies are cached under the judge as it was built: a new run, which starts with
    # temperature 0 again, is served every reply from the cache and asks nothing.
    again, stats, _ = await _grade_with(name, env, tmp_path / "r2.jsonl", battery, answers, cache=cache)
    cache.close()
    assert [r.verdict for r in again] == ["pass"] * 3
    assert len(server.rejections) == 1 and server.calls == 3 and stats.cache_hits == 3


@pytest.mark.parametrize(
    ("protocol", "reply", "said"),
    [
        ("openai", OPENAI_NO_QUOTA, "HTTP 429): insufficient_quota: You exceeded your current quota"),
        (
            "anthropic",
            ANTHROPIC_NO_CREDIT,
            "HTTP 400): invalid_request_error: Your credit balance is too low",
        ),
    ],
)
async def test_a_money_error_stops_the_run_at_once(
    tmp_path: Path, judge_server, protocol: str, reply: Raw, said: str
) -> None:
    server = await judge_server([PASS, reply])
    if protocol == "openai":
        name, env = server.url, {}
    else:
        name, env = "anthropic", {"ANTHROPIC_BASE_URL": server.anthropic_url, "ANTHROPIC_API_KEY": "k"}
    battery = compiled_battery(tmp_path)
    answers = [Answer(f"s{i}", "h03", "azure") for i in range(5)]
    out = tmp_path / "r.jsonl"
    with pytest.raises(UsageError) as caught:
        await _grade_with(name, env, out, battery, answers)
    message = str(caught.value)
    assert message.startswith("the judge refused the request: ")
    assert "for want of credit or quota (" + said in message and message.endswith("then --resume")
    # Not waited on, not retried: the first answer's record is kept, one call more was billed.
    assert server.calls == 2
    assert [(r.system, r.verdict) for r in iter_records(out)] == [("s0", "pass")]


class _ToLoopback(AbstractResolver):
    """Resolves every name to 127.0.0.1, so a judge URL naming another host reaches the scripted
    server through a real connection."""

    async def resolve(self, host: str, port: int = 0, family: int = socket.AF_INET) -> list[ResolveResult]:
        return [
            ResolveResult(
                hostname=host,
                host="127.0.0.1",
                port=port,
                family=socket.AF_INET,
                proto=0,
                flags=socket.AI_NUMERICHOST,
            )
        ]

    async def close(self) -> None:
        return None


async def test_a_key_withheld_from_a_plain_http_url_says_so(tmp_path: Path, judge_server) -> None:
    server = await judge_server([Raw(401, {"error": {"message": "Missing bearer token", "type": "auth"}})])
    plain = server.url.replace("127.0.0.1", "judge.example")
    host = plain.split("/")[2]
    env = {"OPENAI_API_KEY": "sk-canary-0123456789abcdef"}
    answers = [ANSWER]
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(resolver=_ToLoopback())) as session:
        judge = make_judge(plain, model="m", session=session, env=env, timeout=5.0)
        with ResultsWriter(tmp_path / "r.jsonl") as writer:
            grader = Grader(compiled_battery(tmp_path), judge, writer=writer, policy=fast_policy(), env=env)
            with pytest.raises(JudgeError) as caught:
                await grader.run(answers)
    assert str(caught.value) == (
        f"the judge at {plain} ({host}:m) refused the request: {host} judge authentication failed "
        "(HTTP 401): auth: Missing bearer token; OPENAI_API_KEY was not sent: the URL is not https "
        "(nor a loopback host); the run stopped, the records written are kept"
    )
    assert "authorization" not in server.requests[0]["_headers"] and server.calls == 1


def test_a_body_nested_past_any_reason_is_read_without_failing() -> None:
    deep = b'{"error":' * 100_000 + b'"temperature is unsupported"' + b"}" * 100_000
    assert error_message(deep).startswith('{"error":{"error":')
    assert not refused_field(400, deep, "temperature") and not money_error(400, deep)
    shallow_but_deep = b'{"error":' * 500 + b'"Your credit balance is too low"' + b"}" * 500
    assert error_message(shallow_but_deep) == "" and not money_error(400, shallow_but_deep)
