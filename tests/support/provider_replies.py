"""Replies and error bodies in the providers' own shapes, to serve from the scripted judge server as
`Raw` (tests/support/judge_server.py).

Replies and provider error bodies are checked against the official SDKs' types before they are
served: `openai.types.chat.ChatCompletion` and `openai.types.ErrorObject`,
`anthropic.types.Message` and `anthropic.types.ErrorResponse` (validated; the Chat Completions
reply is then dumped from the model), so a field tabench reads that the API does not have, or a
stop reason it never sends, fails here rather than passing quietly. FastAPI's 422 `detail` list and
Mistral's 422 (the `detail` list inside `message`) have no SDK type: they are written as those
servers send them.
"""

from __future__ import annotations

from typing import Any

from anthropic.types import ErrorResponse, Message
from openai.types import ErrorObject
from openai.types.chat import ChatCompletion

from .judge_server import Raw


def openai_reply(
    content: str | None,
    *,
    finish_reason: str = "stop",
    refusal: str | None = None,
    tool_calls: list[dict[str, Any]] | None = None,
    reasoning_content: str | None = None,
    prompt_tokens: int = 10,
    completion_tokens: int = 5,
    reasoning_tokens: int | None = None,
    model: str = "gpt-x-2026-01-01",
    system_fingerprint: str | None = "fp_scripted",
    response_id: str = "chatcmpl-scripted",
) -> Raw:
    """A 200 Chat Completions reply, checked against the `openai` SDK's `ChatCompletion`. vLLM and
    SGLang add `reasoning_content` to the message (not an OpenAI field: added after validation)."""
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": refusal}
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    usage: dict[str, Any] = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
    if reasoning_tokens is not None:
        usage["completion_tokens_details"] = {"reasoning_tokens": reasoning_tokens}
    body = {
        "id": response_id,
        "object": "chat.completion",
        "created": 1700000000,
        "model": model,
        "system_fingerprint": system_fingerprint,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason, "logprobs": None}],
        "usage": usage,
    }
    dumped = ChatCompletion.model_validate(body).model_dump(mode="json", exclude_none=True)
    dumped["choices"][0]["message"].setdefault("content", None)
    if reasoning_content is not None:
        dumped["choices"][0]["message"]["reasoning_content"] = reasoning_content
    return Raw(200, dumped)


def anthropic_reply(
    blocks: list[dict[str, Any]],
    *,
    stop_reason: str = "end_turn",
    input_tokens: int = 10,
    output_tokens: int = 5,
    model: str = "claude-x-2026-01-01",
    response_id: str = "msg_scripted",
) -> Raw:
    """A 200 Messages API reply, checked against the `anthropic` SDK's `Message`."""
    body = {
        "id": response_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": blocks,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
    }
    Message.model_validate(body)
    return Raw(200, body)


def text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text, "citations": None}


def thinking_block(thinking: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": thinking, "signature": "EqQBCgIYAhIM"}


def openai_error(
    status: int, message: str, *, kind: str, code: str | None = None, param: str | None = None
) -> Raw:
    """An OpenAI error reply, its object checked against the `openai` SDK's `ErrorObject`."""
    error = {"message": message, "type": kind, "param": param, "code": code}
    ErrorObject.model_validate(error)
    return Raw(status, {"error": error})


def anthropic_error(status: int, message: str, *, kind: str) -> Raw:
    """An Anthropic error reply (`request_id` as the API adds it), checked against the `anthropic`
    SDK's `ErrorResponse` (whose error `type` must be one of the API's kinds)."""
    body = {"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_011"}
    ErrorResponse.model_validate(body)
    return Raw(status, body)


#: OpenAI's reply when the account has no quota left (a 429, but no rate limit).
OPENAI_NO_QUOTA = openai_error(
    429,
    "You exceeded your current quota, please check your plan and billing details. For more "
    "information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.",
    kind="insufficient_quota",
    code="insufficient_quota",
)
#: Anthropic's reply when the credit balance is spent.
ANTHROPIC_NO_CREDIT = anthropic_error(
    400,
    "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to "
    "upgrade or purchase credits.",
    kind="invalid_request_error",
)
#: Mistral's 422 for a field it does not take (its `message` holds a FastAPI `detail` list).
MISTRAL_EXTRA_FORBIDDEN = Raw(
    422,
    {
        "object": "error",
        "message": {
            "detail": [
                {
                    "type": "extra_forbidden",
                    "loc": ["body", "prompt_cache_key"],
                    "msg": "Extra inputs are not permitted",
                    "input": "tabench-0123",
                }
            ]
        },
        "type": "invalid_request_message_error",
        "param": None,
        "code": None,
    },
)
#: A FastAPI server's 422 (pydantic's validation error list).
FASTAPI_422 = Raw(
    422,
    {"detail": [{"type": "missing", "loc": ["body", "model"], "msg": "Field required", "input": {}}]},
)
