"""Judge backends against the scripted server (tests/support/judge_server.py), over real HTTP on 127.0.0.1:
the wire format, the transport faults and their retries, keys kept out of every output, replay and
the judge factory."""

from __future__ import annotations

import asyncio

import msgspec
import pytest
from support.judge_server import Fault, Raw

from tabench_dsl.cli import main
from tabench_dsl.core.errors import JudgeError, TransportError, UsageError
from tabench_dsl.core.nodes import JudgeDefaults
from tabench_dsl.core.records import Attempt, JudgeInfo, Record, Tokens, record_encoder
from tabench_dsl.core.scorer import JudgeSettings, ScorerSettings
from tabench_dsl.grading.judges.anthropic import AnthropicJudge
from tabench_dsl.grading.judges.base import JudgeParams, Message
from tabench_dsl.grading.judges.factory import make_judge
from tabench_dsl.grading.judges.openai import OpenAIJudge, normalize_base_url, prompt_cache_key
from tabench_dsl.grading.judges.replay import ReplayJudge
from tabench_dsl.grading.judges.request_hash import request_sha256
from tabench_dsl.grading.transport import ExchangeGate, RetryPolicy, call_with_retries

MESSAGES = [
    Message("system", "You grade answers. Gold: four stages."),
    Message("user", "-- CANDIDATE ANSWER --\nIngest"),
]
VERDICT = '{"verdict": "pass", "reason": "names all four stages"}'
FENCED = '```json\n{"verdict": "fail", "reason": "wrong"}\n```\n'
PARAMS = JudgeParams(model="judge-m", temperature=0.0, max_tokens=64)
CANARY = "sk-canary-7f3e9a1b2c4d5e6f"
ALL_FAULTS = [
    Fault.RATE_LIMIT,
    Fault.ERROR_500,
    Fault.ERROR_503,
    Fault.OVERLOADED_529,
    Fault.RESET,
    Fault.HANG,
    Fault.NON_JSON,
    Fault.TRUNCATED,
    Fault.EMPTY_CHOICES,
]


class Sleeps:
    """An injected sleep that records the waits instead of waiting, and the clock they move."""

    def __init__(self) -> None:
        self.delays: list[float] = []
        self.now = 1000.0

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)
        self.now += seconds

    def clock(self) -> float:
        return self.now


def policy(attempts: int = 4, sleeps: Sleeps | None = None) -> RetryPolicy:
    sleep = sleeps or Sleeps()
    return RetryPolicy(attempts=attempts, timeout=0.2, base_delay=0.01, max_delay=0.05, sleep=sleep)


def limiter(sleeps: Sleeps | None = None) -> ExchangeGate:
    """The gate and pacer, on the fake clock of `sleeps` (a pause for a Retry-After is one sleep)."""
    sleep = sleeps or Sleeps()
    return ExchangeGate(4, sleep=sleep, clock=sleep.clock)


def openai_judge(server, session, **kw) -> OpenAIJudge:
    return OpenAIJudge(PARAMS, session=session, base_url=server.url, timeout=0.2, **kw)


def anthropic_judge(server, session, key: str | None = "test-key") -> AnthropicJudge:
    return AnthropicJudge(PARAMS, session=session, api_key=key, base_url=server.anthropic_url, timeout=0.2)


MAKERS = {"openai": openai_judge, "anthropic": anthropic_judge}


# -- Chat Completions ----------------------------------------------------------------------------


async def test_openai_request_and_reply(judge_server, http_session):
    server = await judge_server([VERDICT])
    completion = await openai_judge(server, http_session).complete(MESSAGES)
    assert completion.content == VERDICT
    # word counts: 6 + 5 prompt words, 7 reply words
    assert completion.tokens == Tokens(prompt=11, completion=7)
    assert completion.latency_ms > 0
    [request] = server.requests
    assert request["_path"] == "/v1/chat/completions"
    assert {k: v for k, v in request.items() if not k.startswith("_")} == {
        "model": "judge-m",
        "messages": [
            {"role": "system", "content": MESSAGES[0].content},
            {"role": "user", "content": MESSAGES[1].content},
        ],
        "temperature": 0.0,
        "max_tokens": 64,
        "prompt_cache_key": prompt_cache_key(MESSAGES[0].content),
    }
    assert "authorization" not in request["_headers"]  # no key: none sent


async def test_openai_fenced_content_passes_through_raw(judge_server, http_session):
    server = await judge_server([FENCED])
    assert (await openai_judge(server, http_session).complete(MESSAGES)).content == FENCED


@pytest.mark.parametrize("suffix", ["", "/", "/v1", "/v1/", "/v1/chat/completions"])
async def test_openai_base_url_forms(judge_server, http_session, suffix):
    server = await judge_server([VERDICT])
    root = server.url.removesuffix("/v1")
    judge = OpenAIJudge(PARAMS, session=http_session, base_url=root + suffix, timeout=0.2)
    assert (await judge.complete(MESSAGES)).content == VERDICT
    assert server.requests[0]["_path"] == "/v1/chat/completions"


def test_openai_base_url_with_a_path_is_kept():
    assert normalize_base_url("https://example.org/api/v1/") == "https://example.org/api/v1"
    with pytest.raises(ValueError, match="not an http"):
        normalize_base_url("ftp://example.org")


async def test_openai_bearer_key_sent(judge_server, http_session):
    server = await judge_server([VERDICT], api_key="right-key")
    judge = openai_judge(server, http_session, api_key="right-key")
    assert (await judge.complete(MESSAGES)).content == VERDICT
    assert server.requests[0]["_headers"]["authorization"] == "<redacted>"


async def test_openai_null_content_is_an_empty_reply_with_its_tokens(judge_server, http_session):
    body = {
        "choices": [{"index": 0, "message": {"role": "assistant", "content": None}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 1, "total_tokens": 13},
    }
    server = await judge_server([Raw(body=body)])
    completion = await openai_judge(server, http_session).complete(MESSAGES)
    assert (completion.content, completion.stop, completion.tokens) == ("", "", Tokens(12, 1))


async def test_openai_missing_usage_counts_zero(judge_server, http_session):
    body = {"choices": [{"message": {"role": "assistant", "content": "x"}}], "usage": None}
    server = await judge_server([Raw(body=body)])
    assert (await openai_judge(server, http_session).complete(MESSAGES)).tokens == Tokens()


async def test_openai_switches_to_max_completion_tokens_when_asked(judge_server, http_session):
    refusal = Raw(
        status=400,
        body={
            "error": {
                "message": "Unsupported parameter: 'max_tokens' is not supported with this model. "
                "Use 'max_completion_tokens' instead.",
                "type": "invalid_request_error",
                "param": "max_tokens",
                "code": "unsupported_parameter",
            }
        },
    )
    server = await judge_server(lambda body: refusal if "max_tokens" in body else VERDICT)
    judge = openai_judge(server, http_session)
    assert (await judge.complete(MESSAGES)).content == VERDICT
    assert (await judge.complete(MESSAGES)).content == VERDICT
    sent = [("max_tokens" in r, r.get("max_completion_tokens")) for r in server.requests]
    assert sent == [(True, None), (False, 64), (False, 64)]  # asked once with the old field only


async def test_unauthorized_without_a_key_says_none_was_sent(judge_server, http_session):
    server = await judge_server([VERDICT], api_key="needed")
    with pytest.raises(TransportError, match=r"HTTP 401.*no key was sent \(set OPENAI_API_KEY\)"):
        await openai_judge(server, http_session).complete(MESSAGES)


# -- Anthropic Messages --------------------------------------------------------------------------


async def test_anthropic_request_and_reply(judge_server, http_session):
    server = await judge_server([VERDICT])
    completion = await anthropic_judge(server, http_session).complete(MESSAGES)
    assert completion.content == VERDICT
    assert completion.tokens == Tokens(prompt=11, completion=7)
    [request] = server.requests
    assert request["_path"] == "/v1/messages"
    assert request["_headers"]["anthropic-version"] == "2023-06-01"
    assert request["_headers"]["x-api-key"] == "<redacted>"
    assert request["_headers"]["content-type"] == "application/json"
    assert {k: v for k, v in request.items() if not k.startswith("_")} == {
        "model": "judge-m",
        "max_tokens": 64,
        "temperature": 0.0,
        "system": [{"type": "text", "text": MESSAGES[0].content, "cache_control": {"type": "ephemeral"}}],
        "messages": [{"role": "user", "content": MESSAGES[1].content}],
    }


async def test_anthropic_text_blocks_joined(judge_server, http_session):
    body = {
        "type": "message",
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "hmm", "signature": "s"},
            {"type": "text", "text": '{"verdict": "pass", '},
            {"type": "text", "text": '"reason": "ok"}'},
        ],
        "usage": {"input_tokens": 11, "output_tokens": 7},
    }
    server = await judge_server([Raw(body=body)])
    completion = await anthropic_judge(server, http_session).complete(MESSAGES)
    assert completion.content == '{"verdict": "pass", "reason": "ok"}'
    assert completion.tokens == Tokens(prompt=11, completion=7)


async def test_anthropic_key_is_checked_by_the_server(judge_server, http_session):
    server = await judge_server([VERDICT], api_key="right-key")
    with pytest.raises(TransportError) as info:
        await call_with_retries(
            anthropic_judge(server, http_session, key="wrong-key"), MESSAGES, policy(), limiter()
        )
    assert info.value.status == 401 and not info.value.retryable
    assert "ANTHROPIC_API_KEY" in str(info.value)
    assert len(server.requests) == 1  # not retried


async def test_server_rejects_wire_mistakes(judge_server, http_session):
    """The scripted server checks requests as the real APIs do, so a judge's wire mistake fails."""
    server = await judge_server([VERDICT])
    base = server.anthropic_url
    headers = {"x-api-key": "k", "anthropic-version": "2023-06-01"}
    cases = [
        (f"{base}/v1/messages", headers, {"model": "m", "messages": [{"role": "user", "content": "x"}]}),
        (f"{base}/v1/messages", {"x-api-key": "k"}, {"model": "m", "max_tokens": 5, "messages": []}),
        (
            f"{base}/v1/messages",
            headers,
            {"model": "m", "max_tokens": 5, "messages": [{"role": "system", "content": "x"}]},
        ),
        (f"{base}/v1/chat/completions", {}, {"messages": [{"role": "user", "content": "x"}]}),
        (f"{base}/v1/chat/completions", {}, {"model": "m", "messages": [], "max_tokens": 5}),
        (
            f"{base}/v1/chat/completions",
            {},
            {"model": "m", "prompt": "x", "messages": [{"role": "user", "content": "x"}]},
        ),
    ]
    for url, hdrs, body in cases:
        async with http_session.post(url, json=body, headers=hdrs) as response:
            assert response.status == 400, body
    assert server.calls == 0 and len(server.rejections) == len(cases)


# -- transport faults, both protocols ------------------------------------------------------------


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
@pytest.mark.parametrize("fault", ALL_FAULTS, ids=lambda f: f.value)
async def test_fault_is_retried_then_succeeds(judge_server, http_session, protocol, fault):
    server = await judge_server([fault, fault, VERDICT])
    sleeps = Sleeps()
    completion, retries = await call_with_retries(
        MAKERS[protocol](server, http_session), MESSAGES, policy(sleeps=sleeps), limiter(sleeps)
    )
    assert (completion.content, retries) == (VERDICT, 2)
    assert len(server.requests) == 3 and len(sleeps.delays) == 2


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
@pytest.mark.parametrize("fault", [Fault.ERROR_503, Fault.HANG, Fault.TRUNCATED], ids=lambda f: f.value)
async def test_persistent_fault_gives_up(judge_server, http_session, protocol, fault):
    server = await judge_server([fault])
    with pytest.raises(TransportError, match="gave up after 3 attempts") as info:
        await call_with_retries(
            MAKERS[protocol](server, http_session), MESSAGES, policy(attempts=3), limiter()
        )
    assert info.value.retryable
    assert len(server.requests) == 3


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
@pytest.mark.parametrize("fault", [Fault.UNAUTHORIZED, Fault.BAD_REQUEST], ids=lambda f: f.value)
async def test_client_errors_are_not_retried(judge_server, http_session, protocol, fault):
    server = await judge_server([fault, VERDICT])
    sleeps = Sleeps()
    with pytest.raises(TransportError) as info:
        await call_with_retries(
            MAKERS[protocol](server, http_session), MESSAGES, policy(sleeps=sleeps), limiter(sleeps)
        )
    assert not info.value.retryable and info.value.status in (400, 401)
    assert len(server.requests) == 1 and sleeps.delays == []


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
async def test_retry_after_is_honoured(judge_server, http_session, protocol):
    server = await judge_server([Fault.RATE_LIMIT, VERDICT], retry_after="7")
    sleeps = Sleeps()
    judge = MAKERS[protocol](server, http_session)
    _, retries = await call_with_retries(judge, MESSAGES, policy(sleeps=sleeps), limiter(sleeps))
    assert retries == 1
    # backoff alone would wait at most max_delay (0.05 s); the server asked for 7 s
    assert sleeps.delays == [7.0]


async def test_retry_after_ms_is_honoured(judge_server, http_session):
    limited = Raw(
        status=429,
        body={"error": {"message": "slow down", "type": "requests"}},
        headers={"retry-after-ms": "1500", "retry-after": "1"},
    )
    server = await judge_server([limited, VERDICT])
    sleeps = Sleeps()
    await call_with_retries(
        openai_judge(server, http_session), MESSAGES, policy(sleeps=sleeps), limiter(sleeps)
    )
    assert sleeps.delays == [1.5]


async def test_real_sleep_path_retries(judge_server, http_session):
    server = await judge_server([Fault.ERROR_500, VERDICT])
    real = RetryPolicy(attempts=2, timeout=0.5, base_delay=0.01, max_delay=0.02)
    completion, retries = await call_with_retries(
        openai_judge(server, http_session), MESSAGES, real, limiter()
    )
    assert (completion.content, retries) == (VERDICT, 1)


# -- keys never leak -----------------------------------------------------------------------------


@pytest.mark.parametrize("spec", ["openai:judge-m", "anthropic:judge-m"])
async def test_canary_key_never_leaks(judge_server, http_session, spec):
    echo = {"error": {"type": "authentication_error", "message": f"Incorrect API key provided: {CANARY}."}}
    server = await judge_server([Raw(status=401, body=echo)], api_key=CANARY)
    env = {
        "OPENAI_API_KEY": CANARY,
        "OPENAI_BASE_URL": server.url,
        "ANTHROPIC_API_KEY": CANARY,
        "ANTHROPIC_BASE_URL": server.anthropic_url,
    }
    judge = make_judge(spec, session=http_session, env=env, timeout=0.2)
    with pytest.raises(TransportError) as info:
        await call_with_retries(judge, MESSAGES, policy(), limiter())
    assert len(server.requests) == 1 and server.rejections == []  # the key did reach the server
    outputs = [repr(judge), str(info.value), repr(info.value), str(judge.info)]
    outputs.append(msgspec.json.encode(judge.info).decode())
    outputs += [str(request) for request in server.requests]
    for text in outputs:
        assert CANARY not in text and "7f3e9a1b" not in text
    assert "authentication failed (HTTP 401)" in str(info.value)


# -- replay --------------------------------------------------------------------------------------


def _record(question: str, attempts: list[Attempt]) -> Record:
    return Record(
        system="a",
        question=question,
        tier="t2",
        verdict="pass",
        reason="r",
        prompt_sha256="p",
        judge=JudgeInfo(backend="openai", model="gpt-x"),
        attempts=attempts,
    )


async def test_replay_serves_recorded_replies_in_order(tmp_path):
    sha = request_sha256(MESSAGES)
    other = request_sha256([MESSAGES[0], Message("user", "something else")])
    lines = [
        _record(
            "q1",
            [
                Attempt("first", "not json", tokens=Tokens(3, 2), request_sha256=sha),
                Attempt("format", VERDICT, request_sha256=sha),
            ],
        ),
        _record(
            "q2",
            [
                Attempt("first", None, error="gave up", request_sha256=other),
                Attempt("first", FENCED, request_sha256=other),
            ],
        ),
    ]
    path = tmp_path / "results.jsonl"
    path.write_bytes(b"".join(record_encoder.encode(r) + b"\n" for r in lines) + b'{"torn')
    judge = ReplayJudge(path)
    assert (judge.info.backend, judge.info.model) == ("replay", "gpt-x")
    first = await judge.complete(MESSAGES)
    assert (first.content, first.tokens) == ("not json", Tokens(3, 2))
    assert (await judge.complete(MESSAGES)).content == VERDICT
    assert (await judge.complete([MESSAGES[0], Message("user", "something else")])).content == FENCED
    with pytest.raises(TransportError, match="no recorded reply for this prompt") as info:
        await call_with_retries(judge, MESSAGES, policy(), limiter())
    assert not info.value.retryable
    assert len(judge.problems) == 1  # the torn last line


def test_request_sha256_is_canonical_json():
    import hashlib

    text = '[{"content":"s","role":"system"},{"content":"ü","role":"user"}]'
    assert (
        request_sha256([Message("system", "s"), Message("user", "ü")])
        == hashlib.sha256(text.encode()).hexdigest()
    )


# -- the factory ---------------------------------------------------------------------------------


async def test_factory_specs(judge_server, http_session, tmp_path):
    server = await judge_server([VERDICT])
    local = {"OPENAI_BASE_URL": server.url}
    judge = make_judge("openai:m1", session=http_session, env=local)
    assert (judge.info.backend, judge.info.model, type(judge).__name__) == ("openai", "m1", "OpenAIJudge")
    assert (await judge.complete(MESSAGES)).content == VERDICT  # local server: no key needed

    assert judge.info.endpoint == server.url  # the cache tells servers apart by it

    judge = make_judge(server.url, model="m2", session=http_session, env={})
    assert judge.info.backend == server.url.split("/")[2] and judge.info.model == "m2"
    # Query and fragment never reach the endpoint (nor anything written from it).
    queried = make_judge(server.url + "?token=abc#x", model="m2", session=http_session, env={})
    assert queried.info.endpoint == server.url
    anthropic = make_judge(
        "anthropic:c", session=http_session, env={"ANTHROPIC_BASE_URL": server.anthropic_url + "/v1?key=abc"}
    )
    assert anthropic.info.endpoint == server.anthropic_url

    # A URL only the manifest names is not trusted with keys or answers (tests/safety/test_keys.py).
    manifest = JudgeDefaults(backend=server.url, model="m3")
    with pytest.raises(UsageError, match=f"pass --judge {server.url}"):
        make_judge(None, manifest_judge=manifest, session=http_session)

    builtin = make_judge(None, session=http_session)
    assert builtin.info.backend == "builtin" and builtin.info.language_model is False
    assert builtin.info.endpoint == ""

    path = tmp_path / "r.jsonl"
    path.write_bytes(record_encoder.encode(_record("q", [])) + b"\n")
    replay = make_judge(f"replay:{path}")
    assert replay.info.backend == "replay" and replay.info.endpoint == ""


def test_factory_parameters_in_order():
    manifest = JudgeDefaults(model="from-manifest", temperature=0.5, max_tokens=None)
    settings = ScorerSettings(judge=JudgeSettings(temperature=0.0, max_tokens=123))
    env = {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    judge = make_judge("openai", manifest_judge=manifest, settings=settings, env=env, session=object())
    assert judge.params == JudgeParams(model="from-manifest", temperature=0.5, max_tokens=123)
    judge = make_judge("openai", model="flag", manifest_judge=manifest, env=env, session=object())
    assert judge.params == JudgeParams(model="flag", temperature=0.5, max_tokens=300)
    judge = make_judge("openai:spec-model", model="flag", env=env, session=object())
    assert judge.params.model == "spec-model"


def test_factory_errors():
    with pytest.raises(UsageError, match="needs OPENAI_API_KEY"):
        make_judge("openai:m", env={}, session=object())
    with pytest.raises(UsageError, match="needs ANTHROPIC_API_KEY"):
        make_judge("anthropic:m", env={"OPENAI_API_KEY": "x"}, session=object())
    with pytest.raises(UsageError, match="needs a model"):
        make_judge("http://127.0.0.1:8080/v1", env={}, session=object())
    with pytest.raises(UsageError, match="unknown judge 'gpt4'"):
        make_judge("gpt4", env={})
    with pytest.raises(UsageError, match="not in the URL"):
        make_judge("http://user:pw@127.0.0.1:8080/v1", model="m", env={}, session=object())
    with pytest.raises(JudgeError, match="no results file"):
        make_judge("replay:/nonexistent/results.jsonl")


# -- through the command line --------------------------------------------------------------------


def _tiny_battery(root) -> tuple[str, str]:
    battery = root / "tiny"
    battery.mkdir()
    (battery / "battery.yaml").write_text(
        "name: tiny\nscorer: tabench-1.1\npolicies: [tiny.policy]\nrubrics: [tiny.rubric]\nt1: false\n"
    )
    (battery / "tiny.policy").write_text("S1: Grade against the gold answer only.\n")
    (battery / "tiny.rubric").write_text('question q1 {\n  prompt "Capital of France?"\n  gold "Paris"\n}\n')
    answers = root / "answers.jsonl"
    answers.write_text(
        '{"system": "a", "question": "q1", "answer": "Paris"}\n'
        '{"system": "b", "question": "q1", "answer": "Lyon"}\n'
    )
    return str(battery), str(answers)


@pytest.mark.parametrize("server_key", [CANARY, "another-key"], ids=["accepted", "refused"])
async def test_canary_key_stays_out_of_results_and_output(
    judge_server, tmp_path, monkeypatch, capfd, server_key
):
    echo = {"error": {"type": "invalid_request_error", "message": f"Incorrect API key provided: {CANARY}"}}
    server = await judge_server(
        lambda body: VERDICT if "Paris" in body["messages"][1]["content"] else FENCED, api_key=server_key
    )
    if server_key != CANARY:  # the server refuses the key and echoes it back, as OpenAI does
        server.responder = [Raw(status=401, body=echo)]
        server.protocol_check = False
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    battery, answers = _tiny_battery(tmp_path)
    out = tmp_path / "results.jsonl"
    argv = [
        "grade",
        battery,
        "--answers",
        answers,
        "--out",
        str(out),
        "--judge",
        "openai:judge-m",
        "--no-cache",
        "--timeout",
        "2",
        "--concurrency",
        "1",
    ]
    status = await asyncio.to_thread(main, argv)
    captured = capfd.readouterr()
    written = out.read_text() if out.exists() else ""
    for text in (captured.out, captured.err, written):
        assert CANARY not in text and "7f3e9a1b" not in text
    if server_key == CANARY:
        assert status == 0 and written.count("\n") == 2 and '"backend":"openai"' in written
    else:
        assert status != 0 and "authentication failed (HTTP 401)" in captured.err + written


def test_one_scrubber_for_keys_and_key_shaped_words() -> None:
    from tabench_dsl.core.redact import REDACTED, scrub, secrets_in

    env = {"OPENAI_API_KEY": "plain-value-0001-abcd", "ANTHROPIC_API_KEY": "", "OTHER": "x"}
    assert secrets_in(env) == ["plain-value-0001-abcd"]
    text = "key plain-value-0001-abcd refused; you sent sk-abc***wxyz and sk-ant-api03-zzzzzzzz; "
    text += "see OPENAI_API_KEY"
    assert scrub(text, secrets_in(env)) == (
        f"key {REDACTED} refused; you sent {REDACTED} and {REDACTED}; see OPENAI_API_KEY"
    )
    assert scrub("HTTP 500: upstream busy") == "HTTP 500: upstream busy"
