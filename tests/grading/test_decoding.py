"""The decoding settings: one precedence (flag over manifest over scorer over default) for the judge
built, the dry run's identity and the Inspect judge; the reasoning controls on the wire, against
the scripted server (OpenAI's `reasoning_effort`, Anthropic's `thinking`), and in the cache key."""

from __future__ import annotations

from pathlib import Path

import aiohttp
import pytest
from support.helpers_grading import PASS, compiled_battery, fast_policy

from tabench_dsl.core.errors import UsageError
from tabench_dsl.core.nodes import JudgeDefaults, JudgeReasoning
from tabench_dsl.core.records import Answer
from tabench_dsl.core.scorer import JudgeSettings
from tabench_dsl.grading.cache_keys import cache_key
from tabench_dsl.grading.judges.base import JudgeParams, Message
from tabench_dsl.grading.judges.decoding import Decoding, DecodingFlags, decoding_params
from tabench_dsl.grading.judges.factory import make_judge
from tabench_dsl.grading.judges.identity import judge_identity
from tabench_dsl.grading.runner import Grader
from tabench_dsl.store.results import ResultsWriter

SCORER = JudgeSettings(temperature=0.2, max_tokens=400)


def test_flag_over_manifest_over_scorer_over_default() -> None:
    assert decoding_params() == Decoding(0.0, 300)
    assert decoding_params(None, None, SCORER) == Decoding(0.2, 400)
    manifest = JudgeDefaults(temperature=0.5, max_tokens=500, reasoning=JudgeReasoning(effort="low"))
    assert decoding_params(None, manifest, SCORER) == Decoding(0.5, 500, "low")
    flags = DecodingFlags(temperature=1.0, max_tokens=700, reasoning_effort="high")
    assert decoding_params(flags, manifest, SCORER) == Decoding(1.0, 700, "high")


def test_a_thinking_budget_sends_no_temperature_and_makes_room_for_the_reply() -> None:
    manifest = JudgeDefaults(temperature=0.5, reasoning=JudgeReasoning(budget_tokens=2000))
    # The manifest's own temperature beside its budget is a lint error; a flag's budget drops it.
    assert decoding_params(
        DecodingFlags(thinking_budget=3000), JudgeDefaults(temperature=0.5), SCORER
    ) == Decoding(None, 3400, None, 3000)
    assert decoding_params(None, JudgeDefaults(reasoning=JudgeReasoning(budget_tokens=2000))) == Decoding(
        None, 2300, None, 2000
    )
    assert decoding_params(DecodingFlags(max_tokens=5000), manifest) == Decoding(None, 5000, None, 2000)
    with pytest.raises(UsageError, match=r"^--max-tokens 1500 must be above the thinking budget 2000 "):
        decoding_params(DecodingFlags(max_tokens=1500), manifest)
    with pytest.raises(UsageError, match=r"^--temperature cannot go with a thinking budget"):
        decoding_params(DecodingFlags(temperature=0.0), manifest)


def test_the_dry_run_names_the_judge_the_grading_builds() -> None:
    flags = DecodingFlags(temperature=0.7, max_tokens=900, reasoning_effort="minimal")
    env = {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    identity = judge_identity("openai:gpt-x", env=env, decoding=flags)
    judge = make_judge("openai:gpt-x", env=env, session=object(), decoding=flags)  # type: ignore[arg-type]
    assert identity.params == judge.params == JudgeParams("gpt-x", 0.7, 900, "minimal")


def test_the_reasoning_controls_are_in_the_cache_key_only_when_set() -> None:
    messages = [Message("system", "S"), Message("user", "U")]
    plain = cache_key("openai", JudgeParams("m"), messages, "first")
    assert cache_key("openai", JudgeParams("m", reasoning_effort="low"), messages, "first") != plain
    assert cache_key("openai", JudgeParams("m", thinking_budget=2000), messages, "first") != plain
    # A key from before the reasoning controls existed is still this one.
    assert plain == cache_key("openai", JudgeParams("m", 0.0, 300), messages, "first")


async def _grade_one(tmp_path: Path, name: str, env: dict, flags: DecodingFlags) -> None:
    async with aiohttp.ClientSession() as session:
        judge = make_judge(name, model="judge-m", session=session, env=env, timeout=5.0, decoding=flags)
        with ResultsWriter(tmp_path / "r.jsonl") as writer:
            grader = Grader(compiled_battery(tmp_path), judge, writer=writer, policy=fast_policy(), env=env)
            stats = await grader.run([Answer("a", "h03", "azure")])
    assert stats.passed == 1


async def test_openai_reasoning_effort_on_the_wire(tmp_path: Path, judge_server) -> None:
    server = await judge_server([PASS])
    await _grade_one(
        tmp_path, server.url, {}, DecodingFlags(temperature=1.0, max_tokens=800, reasoning_effort="low")
    )
    (request,) = server.requests
    assert (request["temperature"], request["max_tokens"], request["reasoning_effort"]) == (1.0, 800, "low")


async def test_anthropic_thinking_on_the_wire(tmp_path: Path, judge_server) -> None:
    server = await judge_server([PASS])
    env = {"ANTHROPIC_BASE_URL": server.anthropic_url, "ANTHROPIC_API_KEY": "k"}
    await _grade_one(tmp_path, "anthropic", env, DecodingFlags(thinking_budget=2000))
    (request,) = server.requests
    assert request["thinking"] == {"type": "enabled", "budget_tokens": 2000}
    assert "temperature" not in request and request["max_tokens"] == 2300
    assert server.rejections == []
