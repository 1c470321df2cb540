"""The Chat Completions judge: OpenAI and every server that speaks its protocol.

POST `{base}/chat/completions` with `model`, `messages`, `temperature`, `max_tokens` and
`prompt_cache_key`; the reply is `choices[0].message.content`, tokens from `usage.prompt_tokens` /
`usage.completion_tokens`, and the part of the prompt served from the provider's cache from
`usage.prompt_tokens_details.cached_tokens` (already counted in `prompt_tokens`).
Works against OpenAI, vLLM, SGLang, llama.cpp's server, Ollama and LM Studio. The session, headers,
POST and error statuses are `_http.HttpJudge`'s; this module keeps the wire format.

Base URLs: `normalize_base_url` accepts `http://host:port`, `http://host:port/v1` and the full
`.../chat/completions` endpoint; a URL with no path gets `/v1` (the path every such server uses).
Any other path is kept as given (`https://example.org/api/v1`).

Prompt caching: OpenAI caches long prompt prefixes by itself and routes requests by
`prompt_cache_key`, so every request whose SYSTEM is the same carries the same key
(`prompt_cache_key`: a digest of the SYSTEM, within the API's 64 characters); it is a routing hint
only, so it is not part of the reply cache's key or the request's sha256, and the prompt is byte
for byte what it was. A server that refuses the field (HTTP 400 naming it) is asked again at once
without it, and from then on (`ask_again`), as for `max_completion_tokens`.

Structured verdicts (`--structured on|auto`): the scorer's reply schema goes as `response_format:
{"type": "json_schema", "json_schema": {"name", "strict": true, "schema"}}` (`structured_fields`),
the form OpenAI, vLLM, SGLang, llama.cpp's server, Ollama and LM Studio accept. A server that
refuses that form (a 400 or 422 naming `response_format` or `json_schema`, or the 500 that
llama-cpp-python's server answers its request checks with) is asked again with the older
`{"type": "json_object", "schema": ...}` (llama-cpp-python, Fireworks, Anyscale), and from then on.

It registers two kinds of judge (`registry`): `openai[:MODEL]`, at OPENAI_BASE_URL or OpenAI's
own API, and `url`, any Chat Completions server named by its base URL. Where OPENAI_API_KEY may
go is the factory's rule (`factory`): to `openai:` wherever OPENAI_BASE_URL points, and to a URL
judge only over https or to a loopback host (`urls.url_gets_key`).
"""

from __future__ import annotations

import functools
import hashlib
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import msgspec

from ...core.errors import TransportError, UsageError
from ...core.reply_schema import SCHEMA_NAME
from ..pacing.headers import openai_reading
from ._http import HttpJudge, http_identity, reported_tokens, served
from .base import (
    DEFAULT_TIMEOUT,
    STOP_CONTENT_FILTER,
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
from .urls import OPENAI_HOST, host_of, safe_url, split_http_url, url_gets_key
from .wire_errors import FORM_REFUSALS

if TYPE_CHECKING:
    from collections.abc import Mapping

    import aiohttp

    from ...core.ratelimit import RateReading

#: The OpenAI API's base URL, used when neither a URL nor OPENAI_BASE_URL is given.
OPENAI_BASE_URL = "https://api.openai.com/v1"
#: The variable OpenAI's key is read from.
OPENAI_KEY_ENV = "OPENAI_API_KEY"


class _ChatMessage(msgspec.Struct):
    content: str | None = None
    refusal: str | None = None
    tool_calls: list[object] | None = None


class _Choice(msgspec.Struct):
    message: _ChatMessage
    finish_reason: str | None = None


class _PromptDetails(msgspec.Struct):
    cached_tokens: int | None = 0


class _CompletionDetails(msgspec.Struct):
    reasoning_tokens: int | None = 0


class _Usage(msgspec.Struct):
    prompt_tokens: int | None = 0
    completion_tokens: int | None = 0
    prompt_tokens_details: _PromptDetails | None = None
    completion_tokens_details: _CompletionDetails | None = None


class _ChatCompletion(msgspec.Struct):
    choices: list[_Choice]
    usage: _Usage | None = None
    model: str | None = None
    id: str | None = None
    system_fingerprint: str | None = None


_decoder = msgspec.json.Decoder(_ChatCompletion)

#: Why OPENAI_API_KEY, although set, did not go to a `--judge` URL (the hint of a 401/403).
KEY_WITHHELD = f"{OPENAI_KEY_ENV} was not sent: the URL is not https (nor a loopback host)"
#: What starts every `prompt_cache_key`, so a provider's logs show whose key it is.
PROMPT_CACHE_KEY_PREFIX = "tabench-"


@functools.lru_cache(maxsize=1024)
def prompt_cache_key(system: str) -> str:
    """The `prompt_cache_key` of requests whose SYSTEM is `system`: the prefix and the first 40
    hex digits of the SYSTEM's sha256 (48 characters, under the API's limit of 64). Kept per
    SYSTEM (a battery has one per question), so it is hashed once, not once per call."""
    return PROMPT_CACHE_KEY_PREFIX + hashlib.sha256(system.encode("utf-8", "surrogatepass")).hexdigest()[:40]


def normalize_base_url(url: str) -> str:
    """The API base for `url`: without a trailing slash or `/chat/completions`, `/v1` added to a
    URL that has no path. Credentials in the URL are refused (they would end up in labels)."""
    parts = split_http_url(url, OPENAI_KEY_ENV)
    path = parts.path.rstrip("/")
    if path.endswith("/chat/completions"):
        path = path[: -len("/chat/completions")]
    if not path:
        path = "/v1"
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


class OpenAIJudge(HttpJudge):
    """A Chat Completions judge. The key, when given, is sent as `Authorization: Bearer`."""

    PATH = "/chat/completions"
    normalize_base = staticmethod(normalize_base_url)

    def batch_endpoint(self) -> BatchEndpoint | None:
        """OpenAI's Batch API below the judge's base URL (`batch.openai_batches`)."""
        return BatchEndpoint("openai", self.base_url)

    def __init__(
        self,
        params: JudgeParams,
        *,
        session: aiohttp.ClientSession,
        base_url: str = OPENAI_BASE_URL,
        api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        backend: str = "openai",
        key_env: str | None = OPENAI_KEY_ENV,
        prompt_cache: bool = True,
        key_withheld: str | None = None,
    ) -> None:
        # OpenAI's reasoning models refuse `max_tokens` and ask for `max_completion_tokens`.
        self._token_field = "max_tokens"
        #: How a structured verdict is asked for: `json_schema`, or `json_object` with a `schema`
        #: once a server refused the first.
        self._structured_form = "json_schema"
        super().__init__(
            params,
            session=session,
            base_url=base_url,
            api_key=api_key,
            timeout=timeout,
            backend=backend,
            key_env=key_env,
            prompt_cache=prompt_cache,
            key_withheld=key_withheld,
        )

    def wire_headers(self, api_key: str | None) -> dict[str, str]:
        headers = {"accept": "application/json"}
        if api_key:
            headers["authorization"] = f"Bearer {api_key}"
        return headers

    def request_body(self, messages: list[Message]) -> dict[str, object]:
        """The JSON body of one call, with `prompt_cache_key` when prompt caching is on and there is
        a SYSTEM."""
        body: dict[str, object] = {
            "model": self.params.model,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
        }
        if self.sent_temperature is not None:
            body["temperature"] = self.sent_temperature
        body[self._token_field] = self.params.max_tokens
        if self.params.reasoning_effort is not None:
            body["reasoning_effort"] = self.params.reasoning_effort
        if self.prompt_cache:
            for m in messages:
                if m.role == "system":
                    body["prompt_cache_key"] = prompt_cache_key(m.content)
                    break
        return body

    def structured_fields(self, schema: dict[str, Any]) -> dict[str, Any]:
        """`response_format` asking for a reply in `schema`, strictly (or in the older form)."""
        if self._structured_form == "json_object":
            return {"response_format": {"type": "json_object", "schema": schema}}
        return {"response_format": {"type": "json_schema", "json_schema": structured_schema(schema)}}

    def _refuses_schema_form(self, status: int, payload: bytes) -> bool:
        """Whether this refusal names the `json_schema` form of `response_format` while it is sent."""
        if not self.shape.sending or self._structured_form != "json_schema":
            return False
        named = b"response_format" in payload or b"json_schema" in payload
        return named and (status in (400, 422) or (status == 500 and b"response_format" in payload))

    def ask_again(self, status: int, payload: bytes) -> bool:
        """A server that rejects `max_tokens` and names `max_completion_tokens` (OpenAI's reasoning
        models) is asked again at once with that field, and from then on; one that refuses
        `prompt_cache_key` (a compatible server that knows no such field, a 400 or Mistral's 422) or
        `temperature` (gpt-5, the o-series: `drop_refused_temperature`) is asked again without it,
        and from then on; one that refuses the `json_schema` form of a structured verdict, with the
        `json_object` form, and from then on."""
        if self._refuses_schema_form(status, payload):
            self._structured_form = "json_object"
            return True
        if status not in FORM_REFUSALS:
            return False
        if self._token_field == "max_tokens" and b"max_completion_tokens" in payload:
            self._token_field = "max_completion_tokens"
            return True
        if self.prompt_cache and b"prompt_cache_key" in payload:
            self.prompt_cache = False
            return True
        return self.drop_refused_temperature(status, payload)

    def rate_reading(self, headers: Mapping[str, str]) -> RateReading | None:
        return openai_reading(headers)

    def decode(self, payload: bytes, latency_ms: float) -> Completion:
        return decode_chat_completion(payload, self.info.backend, latency_ms)


def structured_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The `json_schema` object of a strict `response_format` for `schema` (also the shape of Azure's
    and every compatible server's)."""
    return {"name": SCHEMA_NAME, "strict": True, "schema": schema}


def decode_chat_completion(payload: bytes, backend: str = "openai", latency_ms: float = 0.0) -> Completion:
    """A `Completion` from a Chat Completions body; `TransportError` (retryable) when it is not one.

    A reply without text is still the judge's reply, its tokens billed: `stop` says what it was
    (`message.refusal`, `finish_reason: length` or `content_filter`, `tool_calls` with no text, or
    no text at all with reasoning tokens spent: the budget went on reasoning). vLLM's and SGLang's
    `reasoning_content` is never read as the reply."""
    try:
        body = _decoder.decode(payload)
    except (msgspec.DecodeError, RecursionError) as exc:  # nested past any reply
        raise TransportError(f"{backend} judge sent a body that is not a chat completion ({exc})") from None
    if not body.choices:
        raise TransportError(f"{backend} judge sent a chat completion without choices")
    choice = body.choices[0]
    message = choice.message
    content = message.content or ""
    usage = body.usage or _Usage()
    details = usage.prompt_tokens_details
    reasoning = (usage.completion_tokens_details or _CompletionDetails()).reasoning_tokens or 0
    return Completion(
        content=content,
        tokens=reported_tokens(
            usage.prompt_tokens,
            usage.completion_tokens,
            cached_prompt=details.cached_tokens if details is not None else 0,
            reasoning=reasoning,
        ),
        latency_ms=latency_ms,
        stop=_stop(choice, content, reasoning),
        refusal=message.refusal or None,
        served=served(body.model, body.id, body.system_fingerprint),
    )


def _stop(choice: _Choice, content: str, reasoning: int) -> str:
    """Why the reply ended short of its own end ("" when it did not)."""
    if choice.message.refusal:
        return STOP_REFUSAL
    if choice.finish_reason in (STOP_LENGTH, STOP_CONTENT_FILTER):
        return choice.finish_reason
    if not content.strip() and choice.message.tool_calls:
        return STOP_TOOL_CALLS
    if not content.strip() and reasoning > 0:
        return STOP_LENGTH
    return ""


@register_judge("openai")
def openai_judge(setup: JudgeSetup) -> OpenAIJudge:
    """`openai[:MODEL]`: Chat Completions at OPENAI_BASE_URL, else OpenAI's API, which needs a key."""
    base = setup.env.get("OPENAI_BASE_URL") or OPENAI_BASE_URL
    key = setup.env.get(OPENAI_KEY_ENV)
    if not key and host_of(base) == OPENAI_HOST:
        raise UsageError(
            "--judge openai: needs OPENAI_API_KEY in the environment (or OPENAI_BASE_URL for a local server)"
        )
    try:
        return OpenAIJudge(
            setup.params("openai:MODEL", model=setup.argument or None),
            session=setup.http_session(),
            base_url=base,
            api_key=key,
            timeout=setup.timeout,
            prompt_cache=setup.prompt_cache,
        )
    except ValueError as exc:
        raise UsageError(f"OPENAI_BASE_URL: {exc}") from None


@register_judge("url", heads=("http", "https"), argument="whole")
def url_judge(setup: JudgeSetup) -> OpenAIJudge:
    """`http(s)://HOST[/v1]`: any Chat Completions server, labelled by its host; OPENAI_API_KEY
    goes with the calls only where `url_gets_key` allows."""
    url = setup.argument
    try:
        params = setup.params(safe_url(url))
        backend = urlsplit(url).netloc.rpartition("@")[2] or "url"
        key = setup.env.get(OPENAI_KEY_ENV)
        sent = url_gets_key(url)
        return OpenAIJudge(
            params,
            session=setup.http_session(),
            base_url=url,
            api_key=key if sent else None,
            timeout=setup.timeout,
            backend=backend,
            prompt_cache=setup.prompt_cache,
            key_withheld=None if sent or not key else KEY_WITHHELD,
        )
    except ValueError as exc:
        raise UsageError(f"--judge: {exc}") from None


@register_identity("openai")
def openai_identity(setup: JudgeSetup) -> JudgeIdentity:
    """The identity `openai_judge` gives its judge, for the dry run."""
    base = normalize_base_url(setup.env.get("OPENAI_BASE_URL") or OPENAI_BASE_URL)
    return http_identity("openai", base, setup.params("openai:MODEL", model=setup.argument or None))


@register_identity("url")
def url_identity(setup: JudgeSetup) -> JudgeIdentity:
    """The identity `url_judge` gives its judge, for the dry run."""
    url = setup.argument
    backend = urlsplit(url).netloc.rpartition("@")[2] or "url"
    return http_identity(backend, normalize_base_url(url), setup.params(safe_url(url)))
