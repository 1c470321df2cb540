"""Choosing the judge (docs/grading.md, "Judges"): flags, then the manifest's `judge:`, then OPENAI_API_KEY,
OPENAI_BASE_URL, ANTHROPIC_API_KEY; builtin when nothing is configured. Which keys go where.

Every test passes its environment as an explicit mapping. The HTTP judges talk to the scripted
server on 127.0.0.1, and a test checks that the call arrived there.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator

import aiohttp
import pytest
from aiohttp.abc import AbstractResolver, ResolveResult

from tabench_dsl.cli import main
from tabench_dsl.core.errors import UsageError
from tabench_dsl.core.nodes import JudgeDefaults
from tabench_dsl.grading.judges.base import Message
from tabench_dsl.grading.judges.factory import make_judge
from tabench_dsl.grading.judges.urls import url_gets_key

VERDICT = '{"verdict": "pass", "reason": "names all four stages", "facets": {}}'
MESSAGES = [Message("system", "grade it"), Message("user", "the answer")]
CANARY = "sk-canary-factory-4d2e8b0a19c7"


# -- which judge ---------------------------------------------------------------------------------


async def test_a_manifest_model_with_openai_base_url_uses_that_server(judge_server, http_session):
    server = await judge_server([VERDICT])
    judge = make_judge(
        None,
        manifest_judge=JudgeDefaults(model="m1"),
        env={"OPENAI_BASE_URL": server.url},
        session=http_session,
    )
    assert (judge.info.backend, judge.info.model) == ("openai", "m1")
    assert (await judge.complete(MESSAGES)).content == VERDICT
    assert [(r["_path"], r["model"]) for r in server.requests] == [("/v1/chat/completions", "m1")]


async def test_a_model_flag_with_openai_key_and_base_url_sends_the_key(judge_server, http_session):
    server = await judge_server([VERDICT], api_key=CANARY)
    env = {"OPENAI_API_KEY": CANARY, "OPENAI_BASE_URL": server.url}
    judge = make_judge(None, model="m2", env=env, session=http_session)
    assert (await judge.complete(MESSAGES)).content == VERDICT
    assert server.rejections == [] and server.requests[0]["_headers"]["authorization"] == "<redacted>"


def test_openai_key_alone_means_the_openai_api():
    judge = make_judge(None, model="gpt-x", env={"OPENAI_API_KEY": CANARY}, session=object())
    assert (type(judge).__name__, judge.info.backend, judge.info.label) == (
        "OpenAIJudge",
        "openai",
        "https://api.openai.com/v1",
    )


async def test_anthropic_key_chooses_anthropic_when_no_openai_setting(judge_server, http_session):
    server = await judge_server([VERDICT], api_key=CANARY)
    env = {"ANTHROPIC_API_KEY": CANARY, "ANTHROPIC_BASE_URL": server.anthropic_url}
    judge = make_judge(None, manifest_judge=JudgeDefaults(model="claude-x"), env=env, session=http_session)
    assert (judge.info.backend, judge.info.model) == ("anthropic", "claude-x")
    assert (await judge.complete(MESSAGES)).content == VERDICT
    assert [r["_path"] for r in server.requests] == ["/v1/messages"] and server.rejections == []


async def test_openai_settings_come_before_anthropic_key(judge_server, http_session):
    server = await judge_server([VERDICT])
    env = {"ANTHROPIC_API_KEY": CANARY, "OPENAI_BASE_URL": server.url}
    judge = make_judge(None, model="m", env=env, session=http_session)
    assert judge.info.backend == "openai"
    await judge.complete(MESSAGES)
    assert [r["_path"] for r in server.requests] == ["/v1/chat/completions"]


@pytest.mark.parametrize(
    ("spec", "manifest", "expected"),
    [
        ("builtin", JudgeDefaults(model="m", backend="anthropic"), "builtin"),  # the flag first
        (None, JudgeDefaults(model="m", backend="builtin"), "builtin"),  # then the manifest's backend
        (None, JudgeDefaults(model="m", backend="anthropic"), "anthropic"),
    ],
)
def test_flag_then_manifest_backend_before_the_environment(spec, manifest, expected):
    env = {"OPENAI_API_KEY": CANARY, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "ANTHROPIC_API_KEY": CANARY}
    assert make_judge(spec, manifest_judge=manifest, env=env, session=object()).info.backend == expected


def test_no_model_named_is_builtin_whatever_the_environment():
    env = {"OPENAI_API_KEY": CANARY, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "ANTHROPIC_API_KEY": CANARY}
    judge = make_judge(None, env=env, session=object())
    assert judge.info.backend == "builtin"


@pytest.mark.parametrize("env", [{}, {"OPENAI_API_KEY": "", "OPENAI_BASE_URL": "", "ANTHROPIC_API_KEY": ""}])
def test_a_model_with_nothing_to_send_it_to_is_a_usage_error(env):
    # A forgotten `export` must not turn a model's grades into the builtin judge's.
    with pytest.raises(UsageError) as caught:
        make_judge(None, manifest_judge=JudgeDefaults(model="m1"), env=env, session=object())
    message = str(caught.value)
    assert message.startswith("judge model 'm1' is named (battery.yaml judge.model) but nothing reaches it")
    assert "OPENAI_API_KEY" in message and "ANTHROPIC_API_KEY" in message and "--judge" in message
    with pytest.raises(UsageError, match=r"named \(--model\)"):
        make_judge(None, model="m2", env=env, session=object())
    # Naming the builtin judge yourself is the way to grade lexically with a model named.
    assert make_judge("builtin", model="m2", env=env).info.backend == "builtin"


# -- missing keys --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "variable"), [("openai:m", "OPENAI_API_KEY"), ("anthropic:m", "ANTHROPIC_API_KEY")]
)
def test_a_missing_key_is_a_usage_error(spec, variable):
    with pytest.raises(UsageError, match=f"needs {variable}"):
        make_judge(spec, env={}, session=object())


def test_a_missing_key_exits_2(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    battery = tmp_path / "b"
    battery.mkdir()
    (battery / "battery.yaml").write_text("name: b\nscorer: tabench-1.1\nrubrics: [q.rubric]\nt1: false\n")
    (battery / "q.rubric").write_text('question q1 {\n  prompt "Capital of France?"\n  gold "Paris"\n}\n')
    answers = tmp_path / "answers.jsonl"
    answers.write_text('{"system": "a", "question": "q1", "answer": "Paris"}\n')
    assert main(["grade", str(battery), "--answers", str(answers), "--judge", "openai:m"]) == 2
    err = capsys.readouterr().err
    assert "needs OPENAI_API_KEY" in err and "Traceback" not in err


# -- which URL judge gets the key ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://judge.example.org/v1", True),
        ("http://127.0.0.1:8000/v1", True),
        ("http://127.3.2.1:8000", True),
        ("http://localhost:11434/v1", True),
        ("http://LOCALHOST/v1", True),
        ("http://[::1]:8080/v1", True),
        ("http://judge.example.org/v1", False),
        ("http://10.1.2.3:8000/v1", False),
        ("http://localhost.example.org/v1", False),
        ("http://128.0.0.1/v1", False),
    ],
)
def test_url_gets_key(url, expected):
    assert url_gets_key(url) is expected


async def test_a_loopback_url_judge_gets_the_key(judge_server, http_session):
    server = await judge_server([VERDICT], api_key=CANARY)
    judge = make_judge(server.url, model="m", env={"OPENAI_API_KEY": CANARY}, session=http_session)
    assert (await judge.complete(MESSAGES)).content == VERDICT
    assert server.requests[0]["_headers"]["authorization"] == "<redacted>" and server.rejections == []


class _ToLoopback(AbstractResolver):
    """Resolves every name to 127.0.0.1, so a plain-HTTP judge with a non-loopback name is served
    by the scripted server on this machine."""

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
        pass


@pytest.fixture
async def named_session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(resolver=_ToLoopback())) as session:
        yield session


async def test_a_plain_http_judge_by_name_gets_no_key(judge_server, named_session):
    server = await judge_server([VERDICT])
    url = server.url.replace("127.0.0.1", "judge.example.org")
    judge = make_judge(url, model="m", env={"OPENAI_API_KEY": CANARY}, session=named_session)
    assert (await judge.complete(MESSAGES)).content == VERDICT
    (request,) = server.requests
    assert "authorization" not in request["_headers"]
    assert request["_headers"]["host"].startswith("judge.example.org:")
