"""The Anthropic Messages API judge.

POST `{base}/v1/messages` with headers `x-api-key`, `anthropic-version: 2023-06-01` and
`content-type: application/json`; the body has `model`, `max_tokens` (required by the API),
`temperature`, the SYSTEM prompt as the top-level `system` and the user turn in `messages`.
The reply's `content` is a list of blocks: the text of its `type == "text"` blocks, joined, is the
judge's reply (`thinking` blocks never are); tokens come from `usage`, `stop_reason` says whether
the reply was cut off (`max_tokens`) or refused (`refusal`). The session, headers, POST and error statuses are
`_http.HttpJudge`'s; this module keeps the wire format.

Prompt caching: Anthropic caches a prefix only where a block says so, so the SYSTEM goes as one
text block marked `cache_control: {"type": "ephemeral"}` (`[{"type": "text", "text": SYSTEM,
"cache_control": ...}]`); with `judge: {prompt_cache: false}` it goes as a plain string. The
prompt's text is the same either way, and the mark is not part of the reply cache's key. A server
that refuses the mark (HTTP 400 or 422 naming `cache_control`) is asked again at once with the string,
and from then on. Anthropic's `usage.input_tokens` counts only the input read neither from nor into
the cache: the prompt's tokens are `input_tokens + cache_read_input_tokens +
cache_creation_input_tokens`, the second of them `Tokens.cached_prompt`, the third
`Tokens.cache_write`.

Structured verdicts (`--structured on|auto`): the scorer's reply schema goes as `output_config:
{"format": {"type": "json_schema", "schema"}}`, Anthropic's structured outputs; a server or model that
refuses it (HTTP 400 naming the field) is asked again with a forced tool instead (`tools` holding one
tool whose `input_schema` is the schema, `tool_choice` naming it), and from then on. The reply of a
forced tool is its `tool_use` block's `input`, read as the reply's text (JSON).

Errors come as `{"type": "error", "error": {"type": ..., "message": ...}}`; 429
(`rate_limit_error`), 529 (`overloaded_error`) and other 5xx are retried, honouring `retry-after`.

It registers the kind `anthropic[:MODEL]` (`registry`): the Messages API at ANTHROPIC_BASE_URL,
else Anthropic's own, which needs ANTHROPIC_API_KEY.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import urlunsplit

import msgspec

from ...core.errors import TransportError, UsageError
from ...core.reply_schema import SCHEMA_NAME
from ..pacing.headers import anthropic_reading
from ._http import HttpJudge, http_identity, reported_tokens, served
from .base import (
    DEFAULT_TIMEOUT,
    STOP_LENGTH,
    STOP_REFUSAL,
    STOP_TOOL_CALLS,
    BatchEndpoint,
    Completion,
    JudgeIdentity,
    JudgeParams,
    Message,
)
from .registry import JudgeSetup, register_identity, register_judge
from .urls import ANTHROPIC_HOST, host_of, split_http_url
from .wire_errors import FORM_REFUSALS

if TYPE_CHECKING:
    from collections.abc import Mapping

    import aiohttp

    from ...core.ratelimit import RateReading

#: The Anthropic API's base URL (ANTHROPIC_BASE_URL overrides it).
ANTHROPIC_BASE_URL = "https://api.anthropic.com"
#: The API version every request names.
ANTHROPIC_VERSION = "2023-06-01"
#: The variable Anthropic's key is read from.
ANTHROPIC_KEY_ENV = "ANTHROPIC_API_KEY"


class _Block(msgspec.Struct):
    type: str
    text: str | None = None
    #: A `tool_use` block's tool and arguments (the forced tool of a structured verdict).
    name: str | None = None
    input: Any = None


class _Usage(msgspec.Struct):
    input_tokens: int | None = 0
    output_tokens: int | None = 0
    cache_read_input_tokens: int | None = 0
    cache_creation_input_tokens: int | None = 0


class _MessageReply(msgspec.Struct):
    content: list[_Block]
    usage: _Usage | None = None
    stop_reason: str | None = None
    model: str | None = None
    id: str | None = None


#: Anthropic's `stop_reason`s that end a reply short of its own end, as `Completion.stop` names them.
_STOPS = {"max_tokens": STOP_LENGTH, "refusal": STOP_REFUSAL, "tool_use": STOP_TOOL_CALLS}


_decoder = msgspec.json.Decoder(_MessageReply)
#: The mark that asks Anthropic to cache the prompt up to and including its block (shared: never
#: changed, only encoded).
_EPHEMERAL = {"type": "ephemeral"}
#: What the forced tool of a structured verdict says it is for.
_TOOL_DESCRIPTION = "Record the verdict on the candidate answer."


def normalize_anthropic_base(url: str) -> str:
    """The API root for `url`, accepting `https://host`, `https://host/v1` and `.../v1/messages`."""
    parts = split_http_url(url, ANTHROPIC_KEY_ENV)
    path = parts.path.rstrip("/")
    for suffix in ("/messages", "/v1"):
        if path.endswith(suffix):
            path = path[: -len(suffix)]
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


class AnthropicJudge(HttpJudge):
    """A Messages API judge. The key is sent as `x-api-key`."""

    PATH = "/v1/messages"
    normalize_base = staticmethod(normalize_anthropic_base)

    def batch_endpoint(self) -> BatchEndpoint | None:
        """Anthropic's Message Batches below the judge's base URL (`batch.anthropic_batches`)."""
        return BatchEndpoint("anthropic", self.base_url, chat_completions=False)

    def __init__(
        self,
        params: JudgeParams,
        *,
        session: aiohttp.ClientSession,
        api_key: str | None,
        base_url: str = ANTHROPIC_BASE_URL,
        timeout: float = DEFAULT_TIMEOUT,
        prompt_cache: bool = True,
    ) -> None:
        super().__init__(
            params,
            session=session,
            base_url=base_url,
            api_key=api_key,
            timeout=timeout,
            backend="anthropic",
            key_env=ANTHROPIC_KEY_ENV,
            prompt_cache=prompt_cache,
        )
        #: How a structured verdict is asked for: Anthropic's structured outputs, or a forced tool
        #: once a server or model refused those.
        self._structured_form = "output_config"

    def wire_headers(self, api_key: str | None) -> dict[str, str]:
        headers = {"anthropic-version": ANTHROPIC_VERSION}
        if api_key:  # the real API always needs one; a local stand-in may not
            headers["x-api-key"] = api_key
        return headers

    def request_body(self, messages: list[Message]) -> dict[str, object]:
        """The JSON body of one call: system messages joined into `system` (one text block marked
        for the prompt cache when prompt caching is on, else a string), the rest as turns."""
        system = "\n\n".join(m.content for m in messages if m.role == "system")
        body: dict[str, object] = {
            "model": self.params.model,
            "max_tokens": self.params.max_tokens,
            "messages": [{"role": m.role, "content": m.content} for m in messages if m.role != "system"],
        }
        if self.sent_temperature is not None:
            body["temperature"] = self.sent_temperature
        if self.params.thinking_budget is not None:
            body["thinking"] = {"type": "enabled", "budget_tokens": self.params.thinking_budget}
        if system and self.prompt_cache:
            body["system"] = [{"type": "text", "text": system, "cache_control": _EPHEMERAL}]
        elif system:
            body["system"] = system
        return body

    def structured_fields(self, schema: dict[str, Any]) -> dict[str, Any]:
        """Structured outputs asking for a reply in `schema`, or the forced tool taking it."""
        if self._structured_form == "tool":
            tool = {"name": SCHEMA_NAME, "description": _TOOL_DESCRIPTION, "input_schema": schema}
            return {"tools": [tool], "tool_choice": {"type": "tool", "name": SCHEMA_NAME}}
        return {"output_config": {"format": {"type": "json_schema", "schema": schema}}}

    def ask_again(self, status: int, payload: bytes) -> bool:
        """A server that refuses the `cache_control` mark (a stand-in that knows no prompt cache) is
        asked again at once with the SYSTEM as a plain string, and from then on; one that refuses
        structured outputs, with the forced tool, and from then on; a model that calls
        `temperature` deprecated is asked again without it, and from then on
        (`drop_refused_temperature`)."""
        if status in FORM_REFUSALS and self.prompt_cache and b"cache_control" in payload:
            self.prompt_cache = False
            return True
        refuses_format = b"output_config" in payload or b"output_format" in payload
        if status == 400 and self.shape.sending and self._structured_form != "tool" and refuses_format:
            self._structured_form = "tool"
            return True
        return self.drop_refused_temperature(status, payload)

    def rate_reading(self, headers: Mapping[str, str]) -> RateReading | None:
        return anthropic_reading(headers)

    def decode(self, payload: bytes, latency_ms: float) -> Completion:
        return decode_message(payload, latency_ms)


def decode_message(payload: bytes, latency_ms: float = 0.0) -> Completion:
    """A `Completion` from a Messages API body; `TransportError` (retryable) when it is not one.

    Only `text` blocks are the reply (`thinking` and `redacted_thinking` blocks never are); a
    reply with none is still the judge's reply, its tokens billed, with `stop` from `stop_reason`
    (`max_tokens` -> length, `refusal`, `tool_use` -> tool_calls). A refusal's text, if any, is
    `refusal`."""
    try:
        reply = _decoder.decode(payload)
    except (msgspec.DecodeError, RecursionError) as exc:  # nested past any reply
        raise TransportError(f"anthropic judge sent a body that is not a message ({exc})") from None
    texts = [block.text for block in reply.content if block.type == "text" and block.text is not None]
    if not texts:  # a forced tool's reply (a structured verdict): its arguments are the verdict
        texts = [
            msgspec.json.encode(b.input).decode()
            for b in reply.content
            if b.type == "tool_use" and b.name == SCHEMA_NAME
        ]
    content = "".join(texts)
    stop = _STOPS.get(reply.stop_reason or "", "")
    if stop == STOP_TOOL_CALLS and content.strip():
        stop = ""
    usage = reply.usage or _Usage()
    read = usage.cache_read_input_tokens or 0
    written = usage.cache_creation_input_tokens or 0
    return Completion(
        content=content,
        tokens=reported_tokens(
            (usage.input_tokens or 0) + read + written,
            usage.output_tokens,
            cached_prompt=read,
            cache_write=written,
        ),
        latency_ms=latency_ms,
        stop=stop,
        refusal=(content.strip() or "stop_reason: refusal") if stop == STOP_REFUSAL else None,
        served=served(reply.model, reply.id),
    )


@register_judge("anthropic")
def anthropic_judge(setup: JudgeSetup) -> AnthropicJudge:
    """`anthropic[:MODEL]`: the Messages API at ANTHROPIC_BASE_URL, else Anthropic's, which needs
    a key."""
    base = setup.env.get("ANTHROPIC_BASE_URL") or ANTHROPIC_BASE_URL
    key = setup.env.get(ANTHROPIC_KEY_ENV)
    if not key and host_of(base) == ANTHROPIC_HOST:
        raise UsageError("--judge anthropic: needs ANTHROPIC_API_KEY in the environment")
    try:
        return AnthropicJudge(
            setup.params("anthropic:MODEL", model=setup.argument or None),
            session=setup.http_session(),
            api_key=key,
            base_url=base,
            timeout=setup.timeout,
            prompt_cache=setup.prompt_cache,
        )
    except ValueError as exc:
        raise UsageError(f"ANTHROPIC_BASE_URL: {exc}") from None


@register_identity("anthropic")
def anthropic_identity(setup: JudgeSetup) -> JudgeIdentity:
    """The identity `anthropic_judge` gives its judge, for the dry run."""
    base = normalize_anthropic_base(setup.env.get("ANTHROPIC_BASE_URL") or ANTHROPIC_BASE_URL)
    return http_identity("anthropic", base, setup.params("anthropic:MODEL", model=setup.argument or None))
