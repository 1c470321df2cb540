"""The Chat Completions judge: OpenAI and every server that speaks its protocol.

POST `{base}/chat/completions` with `model`, `messages`, `temperature`, `max_tokens`; the reply is
`choices[0].message.content`, tokens from `usage.prompt_tokens` / `usage.completion_tokens`.
Works against OpenAI, vLLM, SGLang, llama.cpp's server, Ollama and LM Studio.

Base URLs: `normalize_base_url` accepts `http://host:port`, `http://host:port/v1` and the full
`.../chat/completions` endpoint; a URL with no path gets `/v1` (the path every such server uses).
Any other path is kept as given (`https://example.org/api/v1`).
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

import aiohttp
import msgspec

from ...core.errors import TransportError
from ...core.records import JudgeInfo, Tokens
from ._http import body_cut, cut_body_completion, post_json, status_error
from .base import Completion, JudgeParams, Message

#: The OpenAI API's base URL, used when neither a URL nor OPENAI_BASE_URL is given.
OPENAI_BASE_URL = "https://api.openai.com/v1"


class _ChatMessage(msgspec.Struct):
    content: str | None = None


class _Choice(msgspec.Struct):
    message: _ChatMessage


class _Usage(msgspec.Struct):
    prompt_tokens: int | None = 0
    completion_tokens: int | None = 0


class _ChatCompletion(msgspec.Struct):
    choices: list[_Choice]
    usage: _Usage | None = None


_decoder = msgspec.json.Decoder(_ChatCompletion)


def normalize_base_url(url: str) -> str:
    """The API base for `url`: without a trailing slash or `/chat/completions`, `/v1` added to a
    URL that has no path. Credentials in the URL are refused (they would end up in labels)."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http(s) URL: {safe_url(url)!r}")
    if parts.username or parts.password:
        raise ValueError("put the key in OPENAI_API_KEY, not in the URL")
    path = parts.path.rstrip("/")
    if path.endswith("/chat/completions"):
        path = path[: -len("/chat/completions")]
    if not path:
        path = "/v1"
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def safe_url(url: str) -> str:
    """`url` without user info, query or fragment: fit for a label or an error message."""
    parts = urlsplit(url.strip())
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


class OpenAIJudge:
    """A Chat Completions judge. The key, when given, is sent as `Authorization: Bearer` and kept
    only in this object (never in `info`, `repr` or any message)."""

    def __init__(
        self,
        params: JudgeParams,
        *,
        session: aiohttp.ClientSession,
        base_url: str = OPENAI_BASE_URL,
        api_key: str | None = None,
        timeout: float = 120.0,
        backend: str = "openai",
        key_env: str | None = "OPENAI_API_KEY",
    ) -> None:
        self.params = params
        self.base_url = normalize_base_url(base_url)
        self.endpoint = f"{self.base_url}/chat/completions"
        self.timeout = timeout
        endpoint = safe_url(self.base_url)
        self.info = JudgeInfo(backend=backend, model=params.model, label=endpoint, endpoint=endpoint)
        self._session = session
        self._api_key = api_key or None
        self._key_env = key_env
        # OpenAI's reasoning models refuse `max_tokens` and ask for `max_completion_tokens`.
        self._token_field = "max_tokens"

    def __repr__(self) -> str:
        key = "set" if self._api_key else "none"
        return f"OpenAIJudge(model={self.params.model!r}, base_url={self.base_url!r}, key={key})"

    def request_body(self, messages: list[Message]) -> dict[str, object]:
        """The JSON body of one call."""
        return {
            "model": self.params.model,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "temperature": self.params.temperature,
            self._token_field: self.params.max_tokens,
        }

    async def complete(self, messages: list[Message]) -> Completion:
        """One exchange; raises `TransportError` for anything that is not a chat completion.

        A server that rejects `max_tokens` and names `max_completion_tokens` (OpenAI's reasoning
        models) is asked again at once with that field, and from then on. A body too long to read
        whole stands for a reply too long to be a verdict (`_http.cut_body_completion`)."""
        headers = {"accept": "application/json"}
        if self._api_key:
            headers["authorization"] = f"Bearer {self._api_key}"
        while True:
            status, reply_headers, payload, latency_ms = await post_json(
                self._session, self.endpoint, self.request_body(messages), headers, self.timeout
            )
            if status == 400 and self._token_field == "max_tokens" and b"max_completion_tokens" in payload:
                self._token_field = "max_completion_tokens"
                continue
            break
        if not 200 <= status < 300:
            raise status_error(
                self.info.backend, status, reply_headers, payload,
                key_env=self._key_env, key_sent=bool(self._api_key), secrets=[self._api_key],
            )
        if body_cut(payload):
            return cut_body_completion(payload, latency_ms)
        return decode_chat_completion(payload, self.info.backend, latency_ms)

    @property
    def exchange_timeout(self) -> float:
        """Each HTTP exchange of `complete` gives up after this many seconds with a retryable
        `TransportError` ("no reply within ..."): `call_with_retries` needs no timer of its own
        when its policy allows as long or longer."""
        return self.timeout

    async def aclose(self) -> None:
        """Nothing to release: the HTTP session belongs to the caller."""


def decode_chat_completion(payload: bytes, backend: str = "openai", latency_ms: float = 0.0) -> Completion:
    """A `Completion` from a Chat Completions body; `TransportError` (retryable) when it is not one."""
    try:
        body = _decoder.decode(payload)
    except msgspec.DecodeError as exc:
        raise TransportError(f"{backend} judge sent a body that is not a chat completion ({exc})") from None
    if not body.choices:
        raise TransportError(f"{backend} judge sent a chat completion without choices")
    content = body.choices[0].message.content
    if content is None:
        raise TransportError(f"{backend} judge sent a chat completion with no text content")
    usage = body.usage or _Usage()
    tokens = Tokens(prompt=usage.prompt_tokens or 0, completion=usage.completion_tokens or 0)
    return Completion(content=content, tokens=tokens, latency_ms=latency_ms)
