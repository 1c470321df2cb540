"""A tabench judge that asks through Inspect AI's model API (`get_model`), for `battery_scorer(...,
judge="inspect")`: the grading still runs tabench's loop (T1, the exact compiled prompt, the format
re-ask, the stern retry, adjudicate); only the exchange goes through an Inspect `Model`, so the
providers, keys and model roles configured for Inspect serve as the judge.

Inspect retries a failed generation itself (its own `max_retries` and timeout); a generation that
still fails is one transport failure to tabench, which records the answer as `error`.
"""

from __future__ import annotations

import time
from typing import Any

from ..core.errors import TransportError
from ..core.records import JudgeInfo, Served, Tokens
from ..grading.judges.base import (
    STOP_CONTENT_FILTER,
    STOP_LENGTH,
    STOP_TOOL_CALLS,
    Completion,
    Judge,
    JudgeParams,
    Message,
)


class InspectModelJudge(Judge):
    """A judge whose exchange is `model.generate(...)` on an Inspect `Model`."""

    def __init__(
        self,
        model: Any,
        *,
        temperature: float | None,
        max_tokens: int,
        reasoning_effort: str | None = None,
        reasoning_tokens: int | None = None,
    ) -> None:
        self.model = model
        name = str(model)
        self.params = JudgeParams(
            model=name,
            temperature=temperature,
            max_tokens=max_tokens,
            reasoning_effort=reasoning_effort,
            thinking_budget=reasoning_tokens,
        )
        self.info = JudgeInfo(backend="inspect", model=name)

    async def complete(self, messages: list[Message]) -> Completion:
        from inspect_ai.model import ChatMessageSystem, ChatMessageUser, GenerateConfig

        chat = [
            ChatMessageSystem(content=m.content) if m.role == "system" else ChatMessageUser(content=m.content)
            for m in messages
        ]
        config = GenerateConfig(
            temperature=self.params.temperature,
            max_tokens=self.params.max_tokens,
            reasoning_effort=self.params.reasoning_effort,  # type: ignore[arg-type]  # checked by decoding
            reasoning_tokens=self.params.thinking_budget,
        )
        started = time.perf_counter()
        try:
            output = await self.model.generate(chat, config=config)
        except Exception as exc:  # Inspect has retried already; any failure is this exchange's
            raise TransportError(f"Inspect model {self.info.model}: {exc}", retryable=False) from None
        if output.error:
            raise TransportError(f"Inspect model {self.info.model}: {output.error}", retryable=False)
        usage = output.usage
        tokens = Tokens()
        if usage is not None:
            cached = usage.input_tokens_cache_read or 0
            written = usage.input_tokens_cache_write or 0
            # Inspect counts cached input apart from `input_tokens`; tabench's `prompt` is all input.
            tokens = Tokens(
                prompt=usage.input_tokens + cached + written,
                completion=usage.output_tokens,
                cached_prompt=cached,
                cache_write=written,
                reasoning=usage.reasoning_tokens or 0,
            )
        stop_reason = output.choices[0].stop_reason if output.choices else "stop"
        return Completion(
            output.completion,
            tokens,
            (time.perf_counter() - started) * 1000.0,
            stop=_STOPS.get(stop_reason, ""),
            served=Served(model=output.model or None, response_id=output.response_id or None)
            if output.model or output.response_id
            else None,
        )


#: Inspect's stop reasons that end a reply short of its own end, as `Completion.stop` names them.
_STOPS = {
    "max_tokens": STOP_LENGTH,
    "model_length": STOP_LENGTH,
    "content_filter": STOP_CONTENT_FILTER,
    "tool_calls": STOP_TOOL_CALLS,
}
