"""A scripted judge server for tests: a real aiohttp application on 127.0.0.1, port 0.

It speaks both wire protocols the judges use and checks requests the way the real APIs do, so a
wire mistake in a judge fails a test instead of passing quietly:

    POST /v1/chat/completions, /chat/completions   Chat Completions (OpenAI and compatibles)
    POST /v1/messages                               Anthropic Messages (x-api-key, anthropic-version)
    GET  /v1/models                                 the model list

What it answers comes from a script, the responder: a list of replies served in order (the last
one repeats), or a callable that gets each parsed request body (and may be async). A reply is the
judge's text content (a `str`), a `Fault`, or a `Raw` HTTP reply given byte for byte.

    server = await start_judge_server(['{"verdict": "pass", ...}', Fault.RATE_LIMIT])
    judge = OpenAIJudge(params, session=session, base_url=server.url)
    ...
    await server.close()

`server.requests` holds every request body received, in order, each with `_path` and `_headers`
added (header names lower-cased; the values of `authorization` and `x-api-key` are replaced by
"<redacted>"). Token usage is reported as word counts: the prompt's words (system included) and
the reply's words, so tests can assert exact numbers.

With `refuse_temperature=True` it plays a model that takes no `temperature`: a Chat Completions
request with one other than 1 gets OpenAI's 400 `unsupported_value` (gpt-5, the o-series), a
Messages request with any gets Anthropic's 400 that the parameter is deprecated (`TEMPERATURE_REFUSALS`).
Refused requests are not counted in `calls`. `tests/support/provider_replies.py` builds whole
replies and error bodies in the providers' shapes, to serve as `Raw`.

With `peer_port=True` each request also records `_peer_port`, the client's TCP port (to tell which
process sent it).

With `prefix_cache=N` it also plays a provider's prompt cache: the last N SYSTEM prompts a reply
was sent for (least recently used first out). OpenAI's caches any SYSTEM by itself and reports the
SYSTEM's words as `usage.prompt_tokens_details.cached_tokens` on a hit (`prompt_tokens` counts them
too); Anthropic's caches only a SYSTEM sent as a block marked `cache_control`, and reports the
SYSTEM's words as `cache_read_input_tokens` on a hit, or `cache_creation_input_tokens` when it
writes the entry, leaving them out of `input_tokens`, as the real API does.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import inspect
import json
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestServer


class Fault(enum.StrEnum):
    """A scripted failure, answered in the shape of the protocol the request came in on."""

    RATE_LIMIT = "rate_limit"  # 429 with Retry-After (the server's `retry_after`)
    ERROR_500 = "error_500"
    ERROR_503 = "error_503"
    OVERLOADED_529 = "overloaded_529"  # Anthropic's overloaded_error (any protocol)
    RESET = "reset"  # the connection is closed mid-request, before any response
    HANG = "hang"  # no answer until the client gives up (or the server closes)
    NON_JSON = "non_json"  # 200 text/html
    TRUNCATED = "truncated"  # 200 with a completion body cut in half
    EMPTY_CHOICES = "empty_choices"  # 200, `choices: []` (Anthropic: a message without `content`)
    UNAUTHORIZED = "unauthorized"  # 401 invalid key
    BAD_REQUEST = "bad_request"  # 400 invalid request
    ENDLESS = "endless"  # 200 with a body that never ends, until the client hangs up


@dataclass(frozen=True)
class Raw:
    """Any HTTP reply, as given: a dict or list body is sent as JSON."""

    status: int = 200
    body: bytes | str | dict[str, Any] | list[Any] = b""
    headers: dict[str, str] = field(default_factory=dict)


Reply = str | Fault | Raw
Responder = Callable[[dict[str, Any]], Reply | Awaitable[Reply]] | list[Reply]

_OPENAI_KEYS = {
    "model",
    "messages",
    "temperature",
    "max_tokens",
    "max_completion_tokens",
    "top_p",
    "n",
    "stop",
    "seed",
    "stream",
    "response_format",
    "presence_penalty",
    "frequency_penalty",
    "user",
    "logprobs",
    "prompt_cache_key",
    "reasoning_effort",
}
#: What a model that takes no `temperature` answers, per protocol: (status, error body).
TEMPERATURE_REFUSALS: dict[str, tuple[int, dict[str, Any]]] = {
    "openai": (
        400,
        {
            "error": {
                "message": "Unsupported value: 'temperature' does not support 0 with this model. "
                "Only the default (1) value is supported.",
                "type": "invalid_request_error",
                "param": "temperature",
                "code": "unsupported_value",
            }
        },
    ),
    "anthropic": (
        400,
        {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "message": "temperature is deprecated for this model.",
            },
        },
    ),
}
#: The longest `prompt_cache_key` OpenAI takes.
PROMPT_CACHE_KEY_MAX = 64
_ANTHROPIC_KEYS = {
    "model",
    "messages",
    "system",
    "max_tokens",
    "temperature",
    "top_p",
    "top_k",
    "stop_sequences",
    "stream",
    "metadata",
    "tools",
    "tool_choice",
    "thinking",
    "output_config",
}
_SECRET_HEADERS = {"authorization", "x-api-key"}
#: The keys the server adds to each request body it keeps (not part of the request).
_ADDED_KEYS = {"_path", "_headers", "_peer_port"}


class _Rejected(Exception):
    def __init__(self, status: int, kind: str, message: str) -> None:
        super().__init__(message)
        self.status, self.kind, self.message = status, kind, message


class JudgeServer:
    """A running scripted server. `url` is the Chat Completions base (`.../v1`); `anthropic_url`
    the Anthropic base (the judge adds `/v1/messages`)."""

    def __init__(
        self,
        responder: Responder,
        *,
        protocol_check: bool = True,
        api_key: str | None = None,
        retry_after: str | None = "0",
        hang_seconds: float = 30.0,
        prefix_cache: int = 0,
        peer_port: bool = False,
        refuse_temperature: bool = False,
    ) -> None:
        self.responder = responder
        self.refuse_temperature = refuse_temperature
        self.protocol_check = protocol_check
        self.api_key = api_key
        self.retry_after = retry_after
        self.hang_seconds = hang_seconds
        self.prefix_cache = prefix_cache
        self.peer_port = peer_port
        self._cached: OrderedDict[str, None] = OrderedDict()
        self.requests: list[dict[str, Any]] = []
        self.rejections: list[str] = []
        self.endless_bytes = 0
        self.url = ""
        self.anthropic_url = ""
        self._served = 0
        self._closing = asyncio.Event()
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/chat/completions", self._chat)
        app.router.add_post("/v1/messages", self._messages)
        app.router.add_get("/v1/models", self._models)
        self._server = TestServer(app, host="127.0.0.1", port=0)

    async def start(self) -> JudgeServer:
        await self._server.start_server()
        root = str(self._server.make_url("")).rstrip("/")
        self.url = f"{root}/v1"
        self.anthropic_url = root
        return self

    async def close(self) -> None:
        """Stop the server; hanging requests are released first."""
        self._closing.set()
        await self._server.close()

    @property
    def calls(self) -> int:
        """Requests that got a scripted reply (rejected requests are not counted)."""
        return self._served

    # -- the two protocols -------------------------------------------------------------------------

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        try:
            body = await self._receive(request)
            if self.protocol_check:
                _check_openai(request, body, self.api_key)
        except _Rejected as exc:
            return self._reject(exc, anthropic=False)
        if self.refuse_temperature and body.get("temperature", 1) != 1:
            return self._refuse_temperature("openai")
        reply = await self._next_reply(body)
        if isinstance(reply, Fault):
            return await self._fault(request, reply, anthropic=False)
        if isinstance(reply, Raw):
            return _raw(reply)
        whole = _chat_completion(body, reply)
        system = _system_of_chat(body)
        if self.prefix_cache and system is not None:
            cached = _words(system) if self._cache_hit(system) else 0
            whole["usage"]["prompt_tokens_details"] = {"cached_tokens": cached, "audio_tokens": 0}
        return web.json_response(whole)

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        try:
            body = await self._receive(request)
            if self.protocol_check:
                _check_anthropic(request, body, self.api_key)
        except _Rejected as exc:
            return self._reject(exc, anthropic=True)
        if self.refuse_temperature and "temperature" in body:
            return self._refuse_temperature("anthropic")
        reply = await self._next_reply(body)
        if isinstance(reply, Fault):
            return await self._fault(request, reply, anthropic=True)
        if isinstance(reply, Raw):
            return _raw(reply)
        whole = _anthropic_message(body, reply)
        system = body.get("system")
        if self.prefix_cache and isinstance(system, list) and any("cache_control" in b for b in system):
            usage, words = whole["usage"], _words(system)
            usage["input_tokens"] -= words
            key = json.dumps(system, sort_keys=True)
            usage["cache_read_input_tokens" if self._cache_hit(key) else "cache_creation_input_tokens"] = (
                words
            )
        return web.json_response(whole)

    def _cache_hit(self, system: str) -> bool:
        """Whether `system` is in the simulated prompt cache; it is (again) its newest entry after
        this reply, the oldest going when the cache is full."""
        hit = system in self._cached
        self._cached[system] = None
        self._cached.move_to_end(system)
        while len(self._cached) > self.prefix_cache:
            self._cached.popitem(last=False)
        return hit

    async def _models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "scripted", "object": "model"}]})

    # -- plumbing ----------------------------------------------------------------------------------

    async def _receive(self, request: web.Request) -> dict[str, Any]:
        headers = {k.lower(): v for k, v in request.headers.items()}
        headers.update({k: "<redacted>" for k in _SECRET_HEADERS & set(headers)})
        text = await request.text()
        try:
            body = json.loads(text)
        except ValueError:
            body = None
        entry = dict(body) if isinstance(body, dict) else {"_raw": text}
        entry["_path"] = request.path
        entry["_headers"] = headers
        if self.peer_port and request.transport is not None:
            entry["_peer_port"] = request.transport.get_extra_info("peername")[1]
        self.requests.append(entry)
        if not isinstance(body, dict):
            raise _Rejected(400, "invalid_request_error", "the body is not a JSON object")
        if "application/json" not in request.headers.get("content-type", ""):
            raise _Rejected(400, "invalid_request_error", "content-type must be application/json")
        return entry

    async def _next_reply(self, body: dict[str, Any]) -> Reply:
        self._served += 1
        if isinstance(self.responder, list):
            index = min(self._served - 1, len(self.responder) - 1)
            return self.responder[index]
        reply = self.responder(body)
        if inspect.isawaitable(reply):
            reply = await reply
        return reply

    def _refuse_temperature(self, protocol: str) -> web.Response:
        status, body = TEMPERATURE_REFUSALS[protocol]
        self.rejections.append(json.dumps(body))
        return web.json_response(body, status=status)

    def _reject(self, exc: _Rejected, *, anthropic: bool) -> web.Response:
        self.rejections.append(exc.message)
        return web.json_response(_error_body(exc.kind, exc.message, anthropic), status=exc.status)

    async def _fault(self, request: web.Request, fault: Fault, *, anthropic: bool) -> web.StreamResponse:
        if fault is Fault.RESET:
            assert request.transport is not None
            request.transport.close()
            return web.Response(status=500)  # never reaches the client
        if fault is Fault.HANG:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._closing.wait(), self.hang_seconds)
            return web.json_response(_error_body("timeout", "hung", anthropic), status=504)
        if fault is Fault.NON_JSON:
            page = "<html><body>Bad gateway</body></html>"
            return web.Response(status=200, text=page, content_type="text/html")
        if fault is Fault.TRUNCATED:
            whole = _anthropic_message({}, "cut") if anthropic else _chat_completion({}, "cut")
            text = json.dumps(whole)
            return web.Response(status=200, text=text[: len(text) // 2], content_type="application/json")
        if fault is Fault.ENDLESS:
            return await self._endless(request)
        if fault is Fault.EMPTY_CHOICES:
            whole = _anthropic_message({}, "") if anthropic else _chat_completion({}, "")
            if anthropic:  # `content: []` is a reply without text (the judge's), this none at all
                del whole["content"]
            else:
                whole["choices"] = []
            return web.json_response(whole)
        status, kind, message = _FAULT_ERRORS[fault]
        headers = {}
        if fault is Fault.RATE_LIMIT and self.retry_after is not None:
            headers["retry-after"] = self.retry_after
        return web.json_response(_error_body(kind, message, anthropic), status=status, headers=headers)

    async def _endless(self, request: web.Request) -> web.StreamResponse:
        """The start of a reply whose text goes on for ever: streamed until the client stops
        reading and hangs up (or the server closes). `endless_bytes` counts what was sent."""
        response = web.StreamResponse(status=200, headers={"content-type": "application/json"})
        await response.prepare(request)
        chunk = b"x" * 65536
        try:
            await response.write(b'{"choices": [{"message": {"role": "assistant", "content": "')
            while not self._closing.is_set():
                await response.write(chunk)
                self.endless_bytes += len(chunk)
        except (ConnectionError, RuntimeError):  # the client hung up
            pass
        return response


_FAULT_ERRORS: dict[Fault, tuple[int, str, str]] = {
    Fault.RATE_LIMIT: (429, "rate_limit_error", "Rate limit reached for requests"),
    Fault.ERROR_500: (500, "api_error", "The server had an error while processing your request"),
    Fault.ERROR_503: (503, "api_error", "The engine is currently overloaded"),
    Fault.OVERLOADED_529: (529, "overloaded_error", "Overloaded"),
    Fault.UNAUTHORIZED: (401, "authentication_error", "invalid x-api-key"),
    Fault.BAD_REQUEST: (400, "invalid_request_error", "scripted bad request"),
}


async def start_judge_server(responder: Responder, **options: Any) -> JudgeServer:
    """Start a `JudgeServer` on 127.0.0.1 and a free port; options as `JudgeServer`'s."""
    return await JudgeServer(responder, **options).start()


def _raw(reply: Raw) -> web.Response:
    body = reply.body
    headers = dict(reply.headers)
    if isinstance(body, dict | list):
        body = json.dumps(body)
        headers.setdefault("content-type", "application/json")
    data = body.encode("utf-8") if isinstance(body, str) else body
    return web.Response(status=reply.status, body=data, headers=headers)


def _error_body(kind: str, message: str, anthropic: bool) -> dict[str, Any]:
    if anthropic:
        return {"type": "error", "error": {"type": kind, "message": message}}
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


def _words(text: Any) -> int:
    if isinstance(text, list):
        return sum(_words(part.get("text", "")) for part in text if isinstance(part, dict))
    return len(str(text).split())


def _chat_completion(body: dict[str, Any], content: str) -> dict[str, Any]:
    prompt = sum(_words(m.get("content", "")) for m in body.get("messages", []))
    completion = _words(content)
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 1700000000,
        "model": body.get("model", "scripted"),
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


def _anthropic_message(body: dict[str, Any], content: str) -> dict[str, Any]:
    prompt = _words(body.get("system", ""))
    prompt += sum(_words(m.get("content", "")) for m in body.get("messages", []))
    return {
        "id": "msg_scripted",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "scripted"),
        "content": [{"type": "text", "text": content}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": prompt, "output_tokens": _words(content)},
    }


def _system_of_chat(body: dict[str, Any]) -> str | None:
    for m in body.get("messages", []):
        if m.get("role") == "system" and isinstance(m.get("content"), str):
            return m["content"]
    return None


def _check_openai(request: web.Request, body: dict[str, Any], api_key: str | None) -> None:
    auth = request.headers.get("authorization")
    if api_key is not None and auth != f"Bearer {api_key}":
        raise _Rejected(401, "invalid_request_error", "Incorrect API key provided")
    if auth is not None and not auth.startswith("Bearer "):
        raise _Rejected(401, "invalid_request_error", "authorization must be 'Bearer KEY'")
    unknown = sorted(set(body) - _OPENAI_KEYS - _ADDED_KEYS)
    if unknown:
        raise _Rejected(400, "invalid_request_error", f"Unrecognized request argument supplied: {unknown[0]}")
    _check_model(body)
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise _Rejected(400, "invalid_request_error", "'messages' must be a non-empty array")
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or m.get("role") not in {"system", "developer", "user", "assistant"}:
            raise _Rejected(400, "invalid_request_error", f"messages[{i}].role is missing or invalid")
        if not isinstance(m.get("content"), str | list):
            raise _Rejected(400, "invalid_request_error", f"messages[{i}].content must be a string")
    _check_number(body, "temperature", 0.0, 2.0)
    _check_max_tokens(body, required=False)
    effort = body.get("reasoning_effort")
    if effort is not None and effort not in ("minimal", "low", "medium", "high"):
        raise _Rejected(400, "invalid_request_error", f"Invalid value for 'reasoning_effort': {effort!r}")
    key = body.get("prompt_cache_key")
    if key is not None and not isinstance(key, str):
        raise _Rejected(
            400, "invalid_request_error", "Invalid type for 'prompt_cache_key': expected a string"
        )
    if isinstance(key, str) and len(key) > PROMPT_CACHE_KEY_MAX:
        raise _Rejected(
            400,
            "invalid_request_error",
            f"Invalid 'prompt_cache_key': string too long. Expected a string with maximum length "
            f"{PROMPT_CACHE_KEY_MAX}, but got a string with length {len(key)} instead.",
        )


def _check_anthropic(request: web.Request, body: dict[str, Any], api_key: str | None) -> None:
    key = request.headers.get("x-api-key")
    if not key or (api_key is not None and key != api_key):
        raise _Rejected(401, "authentication_error", "invalid x-api-key")
    if not request.headers.get("anthropic-version"):
        raise _Rejected(400, "invalid_request_error", "anthropic-version: header is required")
    unknown = sorted(set(body) - _ANTHROPIC_KEYS - _ADDED_KEYS)
    if unknown:
        raise _Rejected(400, "invalid_request_error", f"{unknown[0]}: Extra inputs are not permitted")
    _check_model(body)
    _check_max_tokens(body, required=True)
    system = body.get("system")
    if system is not None and not isinstance(system, str | list):
        raise _Rejected(400, "invalid_request_error", "system: must be a string or a list of blocks")
    if isinstance(system, list):
        _check_system_blocks(system)
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise _Rejected(400, "invalid_request_error", "messages: at least one message is required")
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or m.get("role") not in {"user", "assistant"}:
            message = f"messages.{i}.role: Input should be 'user' or 'assistant'"
            raise _Rejected(400, "invalid_request_error", message)
        if not isinstance(m.get("content"), str | list):
            raise _Rejected(400, "invalid_request_error", f"messages.{i}.content: must be a string or blocks")
    if messages[0]["role"] != "user":
        raise _Rejected(400, "invalid_request_error", "messages: first message must use the 'user' role")
    _check_number(body, "temperature", 0.0, 1.0)
    _check_thinking(body)


def _check_thinking(body: dict[str, Any]) -> None:
    """Extended thinking as the Messages API takes it: `{type: enabled, budget_tokens: N >= 1024}`,
    `max_tokens` above the budget, and no temperature but 1."""
    thinking = body.get("thinking")
    if thinking is None:
        return
    budget = thinking.get("budget_tokens") if isinstance(thinking, dict) else None
    if thinking.get("type") != "enabled" or not isinstance(budget, int) or budget < 1024:
        raise _Rejected(
            400, "invalid_request_error", "thinking.enabled.budget_tokens: Input should be >= 1024"
        )
    if body["max_tokens"] <= budget:
        raise _Rejected(
            400, "invalid_request_error", "`max_tokens` must be greater than `thinking.budget_tokens`"
        )
    if body.get("temperature", 1) != 1:
        raise _Rejected(
            400,
            "invalid_request_error",
            "`temperature` may only be set to 1 when thinking is enabled or in interleaved thinking mode.",
        )


def _check_system_blocks(blocks: list[Any]) -> None:
    """A `system` list as the Messages API takes it: text blocks, each with an optional
    `cache_control` of type `ephemeral` (and an optional `ttl` of 5m or 1h)."""
    for i, block in enumerate(blocks):
        if (
            not isinstance(block, dict)
            or block.get("type") != "text"
            or not isinstance(block.get("text"), str)
        ):
            raise _Rejected(400, "invalid_request_error", f"system.{i}: Input should be a text block")
        if not block["text"]:
            raise _Rejected(
                400, "invalid_request_error", f"system.{i}.text: text content blocks must be non-empty"
            )
        extra = sorted(set(block) - {"type", "text", "cache_control"})
        if extra:
            raise _Rejected(
                400, "invalid_request_error", f"system.{i}.{extra[0]}: Extra inputs are not permitted"
            )
        control = block.get("cache_control")
        if control is None:
            continue
        if (
            not isinstance(control, dict)
            or control.get("type") != "ephemeral"
            or set(control) - {"type", "ttl"}
            or control.get("ttl", "5m") not in ("5m", "1h")
        ):
            message = f"system.{i}.cache_control: Input tag does not match the expected tag 'ephemeral'"
            raise _Rejected(400, "invalid_request_error", message)


def _check_model(body: dict[str, Any]) -> None:
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise _Rejected(400, "invalid_request_error", "model: field required")


def _check_number(body: dict[str, Any], name: str, low: float, high: float) -> None:
    value = body.get(name)
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise _Rejected(400, "invalid_request_error", f"{name}: must be a number from {low:g} to {high:g}")


def _check_max_tokens(body: dict[str, Any], *, required: bool) -> None:
    value = body.get("max_tokens")
    if value is None and not required:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise _Rejected(400, "invalid_request_error", "max_tokens: must be a positive integer")
