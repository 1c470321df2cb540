"""The Inspect model judge (`judge="inspect"`) reads a cut-off reply, the reasoning tokens and the
model that answered from Inspect's `ModelOutput`, as the HTTP judges read them from the wire: its
exchange is Inspect's OpenAI provider against the scripted judge server."""

from __future__ import annotations

import pytest
from support.helpers_grading import PASS
from support.provider_replies import openai_reply

from tabench_dsl.core.records import Served
from tabench_dsl.grading.judges.base import Message

pytest.importorskip("inspect_ai", reason="the inspect extra is not installed (pip install -e '.[inspect]')")

MESSAGES = [Message("system", "Grade."), Message("user", "-- CANDIDATE ANSWER --\nblue")]


async def test_inspect_judge_reads_the_stop_reason_reasoning_tokens_and_served_model(
    judge_server, monkeypatch: pytest.MonkeyPatch
) -> None:
    from inspect_ai.model import get_model

    from tabench_dsl.inspect.judge import InspectModelJudge

    cut = openai_reply(
        "{", finish_reason="length", completion_tokens=300, reasoning_tokens=250, model="gpt-x-1"
    )
    server = await judge_server([cut, openai_reply(PASS, model="gpt-x-1")])
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    model = get_model("openai/judge-m", base_url=server.url, responses_api=False, memoize=False)
    judge = InspectModelJudge(model, temperature=None, max_tokens=300)
    first = await judge.complete(MESSAGES)
    assert (first.stop, first.tokens.reasoning) == ("length", 250)
    assert first.served is not None and first.served.model == "gpt-x-1"
    again = await judge.with_max_tokens(600).complete(MESSAGES)
    assert (again.content, again.stop) == (PASS, "")
    assert [r.get("max_tokens") or r.get("max_completion_tokens") for r in server.requests] == [300, 600]
    assert "temperature" not in server.requests[0]
    assert isinstance(again.served, Served)
