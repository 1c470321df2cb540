"""Replies that are no plain verdict, through the grading loop against the scripted judge server:
cut off at the token budget, refused, tool calls or no text, and reasoning in all its shapes
(`<think>` in the content as llama.cpp and Ollama send it, vLLM's `reasoning_content`, Anthropic's
`thinking` blocks). Each asserts the record, the cause, the message and the calls billed."""

from __future__ import annotations

from pathlib import Path

from support.helpers_grading import FAIL, PASS, compiled_battery, grade
from support.provider_replies import anthropic_reply, openai_reply, text_block, thinking_block

from tabench_dsl.core.records import Answer, Served, Tokens

ANSWER = Answer("a", "h03", "azure")
ANTHROPIC = {"ANTHROPIC_API_KEY": "k"}


async def _one(tmp_path: Path, server, *, anthropic: bool = False):
    if anthropic:
        env = {**ANTHROPIC, "ANTHROPIC_BASE_URL": server.anthropic_url}
        (record,), stats = await grade(
            compiled_battery(tmp_path), "anthropic", [ANSWER], tmp_path / "r.jsonl", env=env
        )
    else:
        (record,), stats = await grade(compiled_battery(tmp_path), server.url, [ANSWER], tmp_path / "r.jsonl")
    return record, stats


def _budget(body: dict) -> int:
    return body.get("max_tokens") or body["max_completion_tokens"]


# -- cut off at the token budget -------------------------------------------------------------------


async def test_a_cut_off_reply_is_asked_again_with_twice_the_budget(tmp_path: Path, judge_server) -> None:
    def reply(body: dict):
        if _budget(body) == 300:
            return openai_reply('{"verdict": "pass", "reas', finish_reason="length", completion_tokens=300)
        return openai_reply(PASS, completion_tokens=12)

    server = await judge_server(reply)
    record, stats = await _one(tmp_path, server)
    assert record.verdict == "pass" and record.cause is None
    assert [_budget(r) for r in server.requests] == [300, 600] and server.calls == 2 == stats.calls
    first, again = record.attempts
    assert (first.kind, first.stop, first.max_tokens, first.tokens.completion) == (
        "first",
        "length",
        300,
        300,
    )
    assert (again.kind, again.stop, again.max_tokens, again.raw) == ("first", None, 600, PASS)


async def test_cut_off_twice_ends_truncated_naming_the_budget(tmp_path: Path, judge_server) -> None:
    server = await judge_server([openai_reply("The answer", finish_reason="length", completion_tokens=300)])
    record, stats = await _one(tmp_path, server)
    assert record.verdict == "adjudicate" and record.cause == "truncated"
    assert record.reason == (
        "the judge's reply was cut off at its token budget twice (300 tokens, then 600 on the re-ask): "
        "raise it with --max-tokens N (or judge.max_tokens in battery.yaml) above 600"
    )
    assert [(a.stop, a.max_tokens) for a in record.attempts] == [("length", 300), ("length", 600)]
    assert server.calls == 2 == stats.calls


async def test_a_reasoning_model_that_spent_its_budget_thinking_is_cut_off(
    tmp_path: Path, judge_server
) -> None:
    # gpt-5 style: empty content, every completion token spent reasoning.
    def reply(body: dict):
        if _budget(body) == 300:
            return openai_reply("", finish_reason="stop", completion_tokens=300, reasoning_tokens=300)
        return openai_reply(FAIL, completion_tokens=420, reasoning_tokens=400)

    server = await judge_server(reply)
    record, _ = await _one(tmp_path, server)
    assert record.verdict == "fail" and server.calls == 2
    assert [a.tokens.reasoning for a in record.attempts] == [300, 400]
    assert [a.max_tokens for a in record.attempts] == [300, 600]


async def test_anthropic_max_tokens_stop_is_a_cut_off(tmp_path: Path, judge_server) -> None:
    def reply(body: dict):
        if body["max_tokens"] == 300:
            return anthropic_reply(
                [text_block('{"verdict": "fa')], stop_reason="max_tokens", output_tokens=300
            )
        return anthropic_reply([text_block(FAIL)])

    server = await judge_server(reply)
    record, _ = await _one(tmp_path, server, anthropic=True)
    assert record.verdict == "fail" and [r["max_tokens"] for r in server.requests] == [300, 600]
    assert record.attempts[0].stop == "length"


# -- refusals and replies without text -------------------------------------------------------------


async def test_an_openai_refusal_is_asked_again_then_adjudicated_with_its_text(
    tmp_path: Path, judge_server
) -> None:
    refusal = "I'm sorry, but I can't help with grading this."
    server = await judge_server([openai_reply(None, refusal=refusal, completion_tokens=11)])
    record, stats = await _one(tmp_path, server)
    assert record.verdict == "adjudicate" and record.cause == "refusal"
    assert record.reason == f"refused twice: {refusal}"
    assert [(a.kind, a.raw, a.stop, a.refusal) for a in record.attempts] == [
        ("first", "", "refusal", refusal),
        ("format", "", "refusal", refusal),
    ]
    # Billed replies, not transport faults: two calls, their tokens recorded.
    assert server.calls == 2 == stats.calls
    assert [a.tokens for a in record.attempts] == [Tokens(10, 11)] * 2


async def test_a_refusal_then_a_verdict_keeps_the_verdict(tmp_path: Path, judge_server) -> None:
    server = await judge_server([openai_reply(None, refusal="No."), openai_reply(PASS)])
    record, _ = await _one(tmp_path, server)
    assert record.verdict == "pass" and [a.kind for a in record.attempts] == ["first", "format"]


async def test_an_anthropic_refusal_stop(tmp_path: Path, judge_server) -> None:
    server = await judge_server([anthropic_reply([], stop_reason="refusal", output_tokens=0)])
    record, _ = await _one(tmp_path, server, anthropic=True)
    assert record.verdict == "adjudicate" and record.cause == "refusal"
    assert record.reason == "refused twice: stop_reason: refusal" and server.calls == 2


async def test_tool_calls_without_text_are_malformed(tmp_path: Path, judge_server) -> None:
    call = {"id": "call_1", "type": "function", "function": {"name": "grade", "arguments": "{}"}}
    server = await judge_server([openai_reply(None, tool_calls=[call], finish_reason="tool_calls")])
    record, _ = await _one(tmp_path, server)
    assert record.verdict == "adjudicate" and record.cause == "malformed"
    assert record.reason == "malformed reply twice: the reply holds tool calls and no text"
    assert server.calls == 2 and {a.stop for a in record.attempts} == {"tool_calls"}


async def test_no_text_at_all_is_malformed_not_a_transport_fault(tmp_path: Path, judge_server) -> None:
    server = await judge_server([openai_reply(None)])
    record, _ = await _one(tmp_path, server)
    assert (record.verdict, record.cause, record.reason) == (
        "adjudicate",
        "malformed",
        "malformed reply twice: empty reply",
    )
    assert server.calls == 2


async def test_an_anthropic_reply_without_text_blocks_is_malformed(tmp_path: Path, judge_server) -> None:
    server = await judge_server([anthropic_reply([thinking_block("Let me think.")])])
    record, _ = await _one(tmp_path, server, anthropic=True)
    assert (record.verdict, record.cause) == ("adjudicate", "malformed") and server.calls == 2


# -- reasoning never decides -----------------------------------------------------------------------


async def test_a_verdict_inside_think_never_counts(tmp_path: Path, judge_server) -> None:
    # llama.cpp and Ollama without a reasoning parser: the chain of thought in the content.
    reply = f"<think>Draft: {PASS} ... no, the colour is wrong.</think>\n{FAIL}"
    server = await judge_server([reply])
    record, _ = await _one(tmp_path, server)
    assert record.verdict == "fail" and record.attempts[0].raw == reply and server.calls == 1


async def test_a_reply_cut_inside_think_with_a_draft_pass_is_never_pass(tmp_path: Path, judge_server) -> None:
    cut = f"<think>The gold is blue. Draft verdict: {PASS} but let me check the facets"
    server = await judge_server([openai_reply(cut, finish_reason="length", completion_tokens=300)])
    record, _ = await _one(tmp_path, server)
    assert record.verdict == "adjudicate" and record.cause == "truncated" and server.calls == 2


async def test_an_unclosed_think_without_a_length_stop_is_malformed(tmp_path: Path, judge_server) -> None:
    server = await judge_server([f"<think>Draft: {PASS}"])
    record, _ = await _one(tmp_path, server)
    assert (record.verdict, record.cause) == ("adjudicate", "malformed")
    assert record.reason == "malformed reply twice: empty reply"


async def test_vllm_reasoning_content_is_not_decoded(tmp_path: Path, judge_server) -> None:
    reply = openai_reply(FAIL, reasoning_content=f"Maybe {PASS}?", completion_tokens=80, reasoning_tokens=60)
    server = await judge_server([reply])
    record, _ = await _one(tmp_path, server)
    assert record.verdict == "fail" and record.attempts[0].tokens.reasoning == 60


async def test_anthropic_thinking_blocks_are_not_decoded(tmp_path: Path, judge_server) -> None:
    reply = anthropic_reply([thinking_block(f"Perhaps {PASS}"), text_block(FAIL)])
    server = await judge_server([reply])
    record, _ = await _one(tmp_path, server, anthropic=True)
    assert record.verdict == "fail" and record.attempts[0].raw == FAIL


# -- provenance ------------------------------------------------------------------------------------


async def test_each_attempt_records_who_answered(tmp_path: Path, judge_server) -> None:
    server = await judge_server(
        [openai_reply(PASS, model="gpt-x-2026-02-01", system_fingerprint="fp_9", response_id="chatcmpl-7")]
    )
    record, _ = await _one(tmp_path, server)
    assert record.attempts[0].served == Served("gpt-x-2026-02-01", "chatcmpl-7", "fp_9")
    server = await judge_server(
        [anthropic_reply([text_block(PASS)], model="claude-x-2026", response_id="msg_1")]
    )
    record, _ = await _one(tmp_path / "a", server, anthropic=True)
    assert record.attempts[0].served == Served("claude-x-2026", "msg_1", None)


async def test_a_cached_cut_off_reply_is_still_read_as_cut_off(tmp_path: Path, judge_server) -> None:
    from tabench_dsl.grading.cache import ReplyCache

    def reply(body: dict):
        if _budget(body) == 300:
            return openai_reply("", finish_reason="length", completion_tokens=300, reasoning_tokens=300)
        return openai_reply(PASS)

    server = await judge_server(reply)
    battery = compiled_battery(tmp_path)
    with ReplyCache(tmp_path / "cache.sqlite") as cache:
        (first,), _ = await grade(battery, server.url, [ANSWER], tmp_path / "r1.jsonl", cache=cache)
    with ReplyCache(tmp_path / "cache.sqlite") as cache:
        (again,), stats = await grade(battery, server.url, [ANSWER], tmp_path / "r2.jsonl", cache=cache)
    assert first.verdict == again.verdict == "pass" and server.calls == 2 and stats.cache_hits == 2
    assert [(a.stop, a.max_tokens, a.tokens.reasoning) for a in again.attempts] == [
        ("length", 300, 300),
        (None, 600, 0),
    ]


async def test_a_replay_grades_cut_off_and_refused_replies_as_they_were(tmp_path: Path, judge_server) -> None:
    def reply(body: dict):
        if "blue" in body["messages"][1]["content"]:
            return openai_reply(None, refusal="I won't.")
        if _budget(body) == 300:
            return openai_reply("{", finish_reason="length", completion_tokens=300)
        return openai_reply(PASS)

    server = await judge_server(reply)
    battery = compiled_battery(tmp_path)
    answers = [Answer("a", "h03", "azure"), Answer("b", "h03", "blue")]
    first, _ = await grade(battery, server.url, answers, tmp_path / "r1.jsonl", concurrency=1)
    replayed, stats = await grade(battery, f"replay:{tmp_path / 'r1.jsonl'}", answers, tmp_path / "r2.jsonl")
    assert server.calls == 4 and stats.calls == 4  # the replay's calls reach no server
    seen = {r.system: (r.verdict, r.cause, [(a.stop, a.max_tokens) for a in r.attempts]) for r in replayed}
    assert seen == {
        r.system: (r.verdict, r.cause, [(a.stop, a.max_tokens) for a in r.attempts]) for r in first
    }
    assert seen["a"] == ("pass", None, [("length", 300), (None, 600)])
    assert seen["b"] == ("adjudicate", "refusal", [("refusal", None), ("refusal", None)])


async def test_a_reply_nested_past_any_reply_is_a_transport_fault(tmp_path: Path, judge_server) -> None:
    from support.judge_server import Raw

    deep = b"[" * 100_000 + b"]" * 100_000
    body = b'{"choices": [{"message": {"content": "x", "tool_calls": [' + deep + b"]}}]}"
    server = await judge_server([Raw(200, body, {"content-type": "application/json"}), PASS])
    record, _ = await _one(tmp_path, server)
    assert record.verdict == "pass" and record.attempts[0].transport_retries == 1 and server.calls == 2
