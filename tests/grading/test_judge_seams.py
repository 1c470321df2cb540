"""The seams between grading and its judges: the `Judge` base class and its declared capabilities,
the registry of judge kinds, the one map from HTTP-client errors to `TransportError` and the HTTP
judges' shared base.

HTTP judges talk to the scripted server on 127.0.0.1 (tests/support/judge_server.py); the judges defined
here are backends as a contributor would write one, not stand-ins for tabench's own functions.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap

import aiohttp
import pytest
from support.judge_server import Fault

from tabench_dsl.core.errors import TransportError, UsageError
from tabench_dsl.core.records import JudgeInfo
from tabench_dsl.grading.judges import registry
from tabench_dsl.grading.judges._http import HttpJudge
from tabench_dsl.grading.judges.anthropic import AnthropicJudge
from tabench_dsl.grading.judges.base import Completion, Judge, JudgeParams, Message
from tabench_dsl.grading.judges.factory import make_judge
from tabench_dsl.grading.judges.openai import OpenAIJudge
from tabench_dsl.grading.transport import ExchangeGate, RetryPolicy, call_with_retries

MESSAGES = [Message("system", "grade it"), Message("user", "the answer")]
VERDICT = '{"verdict": "pass", "reason": "fine", "facets": {}}'
PARAMS = JudgeParams(model="m")


async def no_sleep(seconds: float) -> None:
    pass


class ScriptedJudge(Judge):
    """A backend with only what `Judge` requires: `info`, `params` and `complete`. It raises each
    of `faults` in turn, then answers VERDICT."""

    def __init__(self, *faults: BaseException) -> None:
        self.info = JudgeInfo(backend="scripted", model="m")
        self.params = PARAMS
        self.faults = list(faults)
        self.calls = 0

    async def complete(self, messages: list[Message]) -> Completion:
        self.calls += 1
        if self.faults:
            raise self.faults.pop(0)
        return Completion(VERDICT)


# -- the base class ------------------------------------------------------------------------------


async def test_a_judge_with_only_the_required_parts_has_every_optional_capability() -> None:
    judge = ScriptedJudge()
    assert (judge.exchange_timeout, judge.request_shape, judge.secrets) == (None, "", ())
    await judge.aclose()
    completion, retries = await call_with_retries(judge, MESSAGES, RetryPolicy(attempts=1), ExchangeGate(1))
    assert (completion.content, retries) == (VERDICT, 0)


def test_a_judge_without_complete_cannot_be_made() -> None:
    class Silent(Judge):
        info = JudgeInfo(backend="silent", model="m")
        params = PARAMS

    with pytest.raises(TypeError, match="complete"):
        Silent()  # type: ignore[abstract]


def test_each_judge_declares_what_it_has(http_session) -> None:
    env = {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}
    openai = make_judge("openai:m", env=env, session=http_session, timeout=7.0)
    anthropic = make_judge("anthropic:m", env=env, session=http_session, timeout=8.0)
    assert (openai.exchange_timeout, anthropic.exchange_timeout) == (7.0, 8.0)
    assert isinstance(openai, HttpJudge) and isinstance(anthropic, HttpJudge)
    builtin = make_judge("builtin", model="gpt-x", env={})
    assert builtin.exchange_timeout is None


# -- the registry --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "kind", "argument"),
    [
        ("builtin", "builtin", ""),
        ("replay:r.jsonl", "replay", "r.jsonl"),
        ("openai", "openai", ""),
        ("openai:gpt-x", "openai", "gpt-x"),
        ("anthropic:claude-x", "anthropic", "claude-x"),
        ("http://127.0.0.1:8000/v1", "url", "http://127.0.0.1:8000/v1"),
        ("https://judge.example.org", "url", "https://judge.example.org"),
    ],
)
def test_a_spec_names_a_kind_and_its_argument(spec: str, kind: str, argument: str) -> None:
    found = registry.find_backend(spec)
    assert found is not None
    backend, given = found
    assert (backend.kind, given) == (kind, argument)


@pytest.mark.parametrize("spec", ["builtin:x", "builtin:", "url:http://x", "gpt4", "HTTP://x", ""])
def test_a_spec_that_names_no_kind(spec: str) -> None:
    assert registry.find_backend(spec) is None


def test_a_backend_registers_itself_by_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    # The registry's tables as they are, restored when the test ends.
    monkeypatch.setattr(registry, "_BACKENDS", dict(registry._BACKENDS))
    monkeypatch.setattr(registry, "_KIND_OF_HEAD", dict(registry._KIND_OF_HEAD))

    class EchoJudge(ScriptedJudge):
        pass

    @registry.register_judge("echo")
    def echo(setup: registry.JudgeSetup) -> Judge:
        judge = EchoJudge()
        judge.params = setup.params("echo:MODEL", model=setup.argument or None)
        return judge

    judge = make_judge("echo:word", env={})
    assert type(judge) is EchoJudge and judge.params == JudgeParams(model="word")
    with pytest.raises(UsageError, match="--judge echo:MODEL needs a model"):
        make_judge("echo", env={})


def test_building_the_builtin_judge_loads_no_http_backend() -> None:
    code = textwrap.dedent("""
        import sys
        from tabench_dsl.grading.judges.factory import make_judge
        judge = make_judge("builtin", env={})
        loaded = sorted(m for m in sys.modules if m == "aiohttp" or m.startswith(
            ("tabench_dsl.grading.judges.openai", "tabench_dsl.grading.judges.anthropic",
             "tabench_dsl.grading.judges._http", "tabench_dsl.grading.transport")))
        print(type(judge).__name__, loaded)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout.strip()) == (0, "BuiltinJudge []"), done.stderr


# -- one map from HTTP-client errors -------------------------------------------------------------


async def test_client_errors_of_any_judge_are_mapped_and_retried() -> None:
    judge = ScriptedJudge(aiohttp.ServerDisconnectedError(), ConnectionResetError())
    completion, retries = await call_with_retries(
        judge, MESSAGES, RetryPolicy(attempts=3, sleep=no_sleep), ExchangeGate(1)
    )
    assert (completion.content, retries, judge.calls) == (VERDICT, 2, 3)

    judge = ScriptedJudge(aiohttp.ServerDisconnectedError(), aiohttp.ServerDisconnectedError())
    with pytest.raises(TransportError) as info:
        await call_with_retries(judge, MESSAGES, RetryPolicy(attempts=2, sleep=no_sleep), ExchangeGate(1))
    assert str(info.value) == (
        "connection to the judge failed (ServerDisconnectedError) (gave up after 2 attempts)"
    )


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize("judge_class", [OpenAIJudge, AnthropicJudge])
async def test_an_http_judge_maps_client_errors_the_same_way(http_session, judge_class) -> None:
    judge = judge_class(
        PARAMS, session=http_session, base_url=f"http://127.0.0.1:{_closed_port()}", api_key=None, timeout=5.0
    )
    with pytest.raises(TransportError) as info:
        await judge.complete(MESSAGES)
    assert str(info.value) == "connection to the judge failed (ClientConnectorError)"
    assert info.value.retryable and info.value.status is None and info.value.unreachable


@pytest.mark.parametrize("judge_class", [OpenAIJudge, AnthropicJudge])
async def test_an_http_judge_times_itself(judge_server, http_session, judge_class) -> None:
    server = await judge_server([Fault.HANG])
    url = server.url if judge_class is OpenAIJudge else server.anthropic_url
    judge = judge_class(PARAMS, session=http_session, base_url=url, api_key="test-key", timeout=0.2)
    with pytest.raises(TransportError, match=r"^no reply within 0\.2 s$"):
        await judge.complete(MESSAGES)


# -- the HTTP judges' shared base ----------------------------------------------------------------


@pytest.mark.parametrize("judge_class", [OpenAIJudge, AnthropicJudge])
def test_the_http_judges_share_their_plumbing(judge_class) -> None:
    judge = judge_class(PARAMS, session=object(), base_url="https://judge.example.org/v1?k=1", api_key="sk-x")
    assert repr(judge) == (f"{judge_class.__name__}(model='m', base_url={judge.base_url!r}, key=set)")
    assert judge.info.label == judge.info.endpoint == judge.base_url
    assert "sk-x" not in repr(judge) + repr(judge.info)
    # The exchange itself is the base's: a backend writes only its wire format.
    assert "complete" not in vars(judge_class) and "aclose" not in vars(judge_class)
