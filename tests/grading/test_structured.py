"""Structured verdicts: the scorer's reply schema (`core.reply_schema`), valid JSON Schema for every
golden battery's scorer and in the prompt's key order; how each protocol sends it (`--structured on`),
how `auto` drops it after a refusal (400 or 422 naming it, said once), Anthropic's forced-tool form,
and the reply cache key naming it. Against the scripted server (tests/support/judge_server.py)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from support.helpers_grading import PASS, write_battery
from support.judge_server import Raw

from tabench_dsl.core.errors import TransportError
from tabench_dsl.core.reply_schema import SCHEMA_NAME, reply_schema
from tabench_dsl.core.scorer import FACET_NAMES
from tabench_dsl.grading.cache_keys import cache_key
from tabench_dsl.grading.judges.base import JudgeParams, Message
from tabench_dsl.grading.judges.factory import make_judge
from tabench_dsl.grading.judges.request_shape import RequestOptions
from tabench_dsl.language.battery import load_battery
from tabench_dsl.language.render import compile_battery

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
MESSAGES = [Message("system", "You grade."), Message("user", "-- CANDIDATE ANSWER --\nIngest")]
#: The schema of tabench-1.1's reply, written out by hand.
EXPECTED_SCHEMA = {
    "type": "object",
    "properties": {
        "verdict": {"type": "string", "enum": ["pass", "fail"]},
        "reason": {"type": "string"},
        "facets": {
            "type": "object",
            "properties": {
                "extra_correct_info": {"type": "boolean"},
                "missing_minor": {"type": "boolean"},
                "erroneous_assertion": {"type": "boolean"},
            },
            "required": ["extra_correct_info", "missing_minor", "erroneous_assertion"],
            "additionalProperties": False,
        },
    },
    "required": ["verdict", "reason", "facets"],
    "additionalProperties": False,
}


def test_the_shipped_scorers_schema_is_the_hand_written_one() -> None:
    assert reply_schema(FACET_NAMES) == EXPECTED_SCHEMA
    assert list(reply_schema(FACET_NAMES)["properties"]) == ["verdict", "reason", "facets"]


@pytest.mark.parametrize("case", sorted(p.name for p in GOLDEN.iterdir() if (p / "battery.yaml").exists()))
def test_every_golden_batterys_schema_is_valid_and_follows_its_prompt(case: str) -> None:
    compiled = compile_battery(load_battery(str(GOLDEN / case)))
    facets = compiled.settings.facets
    schema = reply_schema(facets)
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    good = {"verdict": "pass", "reason": "names all four", "facets": dict.fromkeys(facets, False)}
    assert not list(validator.iter_errors(good))
    bad = [
        {**good, "verdict": "partial"},
        {**good, "extra": 1},
        {"verdict": "fail", "reason": "r"},
        {**good, "facets": {**good["facets"], "unknown_facet": True}},
        {**good, "facets": dict.fromkeys(facets, "yes")},
    ]
    for reply in bad:
        assert list(validator.iter_errors(reply)), reply
    # The keys in the order the SYSTEM prompt's reply line shows them.
    system = next(iter(compiled.questions.values())).system
    line = next(text for text in system.splitlines() if text.startswith('{"verdict"'))
    names = ["verdict", "reason", "facets", *facets]
    places = [line.index(f'"{name}"') for name in names]
    assert places == sorted(places)


def judge(server, session, structured: str, **kw):
    return make_judge(
        server.url,
        model="judge-m",
        session=session,
        env={},
        timeout=2.0,
        request=RequestOptions(structured=structured),  # type: ignore[arg-type]
        **kw,
    )


async def test_on_sends_a_strict_response_format(judge_server, http_session) -> None:
    server = await judge_server([PASS])
    j = judge(server, http_session, "on")
    assert (await j.complete(MESSAGES)).content == PASS
    sent = server.requests[0]["response_format"]
    assert sent == {
        "type": "json_schema",
        "json_schema": {"name": SCHEMA_NAME, "strict": True, "schema": EXPECTED_SCHEMA},
    }


async def test_off_sends_nothing_and_keeps_the_cache_key(judge_server, http_session) -> None:
    server = await judge_server([PASS])
    j = judge(server, http_session, "off")
    await j.complete(MESSAGES)
    assert "response_format" not in server.requests[0]
    assert j.request_shape == ""
    params = JudgeParams("judge-m")
    assert cache_key("u", params, MESSAGES, "first", shape="") == cache_key("u", params, MESSAGES, "first")


async def test_the_schema_is_part_of_the_reply_cache_key(judge_server, http_session) -> None:
    server = await judge_server([PASS])
    shapes = {judge(server, http_session, mode).request_shape for mode in ("off", "auto", "on")}
    assert len(shapes) == 3
    keys = {cache_key("u", JudgeParams("m"), MESSAGES, "first", shape=s) for s in shapes}
    assert len(keys) == 3


MISTRAL_422 = {
    "object": "error",
    "message": {
        "detail": [
            {
                "type": "extra_forbidden",
                "loc": ["body", "response_format"],
                "msg": "Extra inputs are not permitted",
                "input": {},
            }
        ]
    },
    "type": "invalid_request_message_error",
    "param": None,
    "code": None,
}
VLLM_400 = {
    "object": "error",
    "message": "response_format json_schema is not supported by this model",
    "type": "BadRequestError",
    "param": None,
    "code": 400,
}


@pytest.mark.parametrize(("status", "body"), [(422, MISTRAL_422), (400, VLLM_400)])
async def test_auto_asks_again_without_the_schema_for_the_rest_of_the_run(
    judge_server, http_session, status: int, body: dict
) -> None:
    def reply(request: dict):
        return Raw(status, body) if "response_format" in request else PASS

    server = await judge_server(reply)
    told: list[str] = []
    j = judge(server, http_session, "auto", notice=told.append)
    for _ in range(3):
        assert (await j.complete(MESSAGES)).content == PASS
    # The json_schema form, then the json_object form, both refused; then none, for good.
    forms = [r.get("response_format", {}).get("type") for r in server.requests]
    assert forms == ["json_schema", "json_object", None, None, None]
    assert len(told) == 1 and f"HTTP {status}" in told[0] and "--structured auto" in told[0]


async def test_on_keeps_the_schema_and_the_refusal_stands(judge_server, http_session) -> None:
    server = await judge_server([Raw(400, VLLM_400)])
    j = judge(server, http_session, "on")
    with pytest.raises(TransportError) as caught:
        await j.complete(MESSAGES)
    assert caught.value.status == 400 and not caught.value.retryable
    assert [r["response_format"]["type"] for r in server.requests] == ["json_schema", "json_object"]


#: What llama-cpp-python's server answers a `json_schema` response_format with (its request check
#: fails inside the handler): HTTP 500 naming the field.
LLAMA_CPP_PYTHON_500 = {
    "error": {
        "message": "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', "
        "'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema'}",
        "type": "internal_server_error",
        "param": None,
        "code": None,
    }
}


async def test_a_server_of_the_older_form_gets_json_object_with_the_schema(
    judge_server, http_session
) -> None:
    def reply(request: dict):
        return Raw(500, LLAMA_CPP_PYTHON_500) if request["response_format"]["type"] == "json_schema" else PASS

    server = await judge_server(reply)
    j = judge(server, http_session, "on")
    for _ in range(2):
        assert (await j.complete(MESSAGES)).content == PASS
    assert [r["response_format"] for r in server.requests[1:]] == [
        {"type": "json_object", "schema": EXPECTED_SCHEMA}
    ] * 2


async def test_a_500_that_names_nothing_is_retried_not_adapted(judge_server, http_session) -> None:
    server = await judge_server([Raw(500, {"error": {"message": "boom", "type": "server_error"}})])
    j = judge(server, http_session, "on")
    with pytest.raises(TransportError) as caught:
        await j.complete(MESSAGES)
    assert caught.value.retryable and server.calls == 1


async def test_auto_ignores_a_refusal_that_names_something_else(judge_server, http_session) -> None:
    other = {"error": {"message": "messages: too long", "type": "invalid_request_error"}}
    server = await judge_server([Raw(400, other)])
    j = judge(server, http_session, "auto")
    with pytest.raises(TransportError):
        await j.complete(MESSAGES)
    assert server.calls == 1


def anthropic(server, session, structured: str):
    env = {"ANTHROPIC_BASE_URL": server.anthropic_url, "ANTHROPIC_API_KEY": "k"}
    return make_judge(
        "anthropic:claude-x",
        session=session,
        env=env,
        timeout=2.0,
        request=RequestOptions(structured=structured),  # type: ignore[arg-type]
    )


async def test_anthropic_sends_structured_outputs(judge_server, http_session) -> None:
    server = await judge_server([PASS])
    j = anthropic(server, http_session, "on")
    assert (await j.complete(MESSAGES)).content == PASS
    assert server.requests[0]["output_config"] == {
        "format": {"type": "json_schema", "schema": EXPECTED_SCHEMA}
    }
    assert "tools" not in server.requests[0]


async def test_anthropic_falls_back_to_a_forced_tool(judge_server, http_session) -> None:
    refusal = {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "output_config.format: not supported by this model",
        },
    }
    verdict = json.loads(PASS)

    def reply(request: dict):
        if "output_config" in request:
            return Raw(400, refusal)
        message = {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": request["model"],
            "content": [{"type": "tool_use", "id": "toolu_1", "name": SCHEMA_NAME, "input": verdict}],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
        return Raw(200, message)

    server = await judge_server(reply)
    j = anthropic(server, http_session, "on")
    for _ in range(2):
        completion = await j.complete(MESSAGES)
        assert json.loads(completion.content) == verdict
    forced = server.requests[1]
    assert forced["tool_choice"] == {"type": "tool", "name": SCHEMA_NAME}
    assert forced["tools"][0]["name"] == SCHEMA_NAME
    assert forced["tools"][0]["input_schema"] == EXPECTED_SCHEMA
    assert ["output_config" in r for r in server.requests] == [True, False, False]


def test_manifest_structured_values(tmp_path: Path) -> None:
    folder = write_battery(tmp_path)
    manifest = folder / "battery.yaml"
    base = manifest.read_text(encoding="utf-8")
    for written, read in (("on", "on"), ("off", "off"), ("auto", "auto"), ("'on'", "on")):
        manifest.write_text(base + f"judge:\n  structured: {written}\n", encoding="utf-8")
        assert load_battery(str(folder)).judge.structured == read


async def test_a_header_given_replaces_the_protocols_own(judge_server, http_session) -> None:
    server = await judge_server([PASS], api_key="gateway-token")  # checks the first authorization
    j = make_judge(
        server.url,
        model="judge-m",
        session=http_session,
        env={"OPENAI_API_KEY": "sk-env-key-0123456789"},
        request=RequestOptions(headers=(("Authorization", "Bearer gateway-token"),)),
    )
    assert (await j.complete(MESSAGES)).content == PASS
    assert list(j.secrets) == ["sk-env-key-0123456789", "Bearer gateway-token"]
