"""The Anthropic Messages API judge.

POST `{base}/v1/messages` with headers `x-api-key`, `anthropic-version: 2023-06-01` and
`content-type: application/json`; the body has `model`, `max_tokens` (required by the API),
`temperature`, the SYSTEM prompt as the top-level `system` string and the user turn in `messages`.
The reply's `content` is a list of blocks: the text of its `type == "text"` blocks, joined, is the
judge's reply; tokens come from `usage.input_tokens` / `usage.output_tokens`.

Errors come as `{"type": "error", "error": {"type": ..., "message": ...}}`; 429
(`rate_limit_error`), 529 (`overloaded_error`) and other 5xx are retried, honouring `retry-after`.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

import aiohttp
import msgspec

from ...core.errors import TransportError
from ...core.records import JudgeInfo, Tokens
from ._http import body_cut, cut_body_completion, post_json, status_error
from .base import Completion, JudgeParams, Message
from .openai import safe_url

#: The Anthropic API's base URL (ANTHROPIC_BASE_URL overrides it).
ANTHROPIC_BASE_URL = "https://api.anthropic.com"
#: The API version every request names.
ANTHROPIC_VERSION = "2023-06-01"


class _Block(msgspec.Struct):
    type: str
    text: str | None = None


class _Usage(msgspec.Struct):
    input_tokens: int | None = 0
    output_tokens: int | None = 0


class _MessageReply(msgspec.Struct):
    content: list[_Block]
    usage: _Usage | None = None


_decoder = msgspec.json.Decoder(_MessageReply)


def normalize_anthropic_base(url: str) -> str:
    """The API root for `url`, accepting `https://host`, `https://host/v1` and `.../v1/messages`."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http(s) URL: {safe_url(url)!r}")
    if parts.username or parts.password:
        raise ValueError("put the key in ANTHROPIC_API_KEY, not in the URL")
    path = parts.path.rstrip("/")
    for suffix in ("/messages", "/v1"):
        if path.endswith(suffix):
            path = path[: -len(suffix)]
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


class AnthropicJudge:
    """A Messages API judge. The key is sent as `x-api-key` and kept only in this object (never in
    `info`, `repr` or any message)."""

    def __init__(
        self,
        params: JudgeParams,
        *,
        session: aiohttp.ClientSession,
        api_key: str | None,
        base_url: str = ANTHROPIC_BASE_URL,
        timeout: float = 120.0,
    ) -> None:
        self.params = params
        self.base_url = normalize_anthropic_base(base_url)
        self.endpoint = f"{self.base_url}/v1/messages"
        self.timeout = timeout
        endpoint = safe_url(self.base_url)
        self.info = JudgeInfo(backend="anthropic", model=params.model, label=endpoint, endpoint=endpoint)
        self._session = session
        self._api_key = api_key or None

    def __repr__(self) -> str:
        key = "set" if self._api_key else "none"
        return f"AnthropicJudge(model={self.params.model!r}, base_url={self.base_url!r}, key={key})"

    def request_body(self, messages: list[Message]) -> dict[str, object]:
        """The JSON body of one call: system messages joined into `system`, the rest as turns."""
        system = "\n\n".join(m.content for m in messages if m.role == "system")
        body: dict[str, object] = {
            "model": self.params.model,
            "max_tokens": self.params.max_tokens,
            "temperature": self.params.temperature,
            "messages": [{"role": m.role, "content": m.content} for m in messages if m.role != "system"],
        }
        if system:
            body["system"] = system
        return body

    async def complete(self, messages: list[Message]) -> Completion:
        """One exchange; raises `TransportError` for anything that is not a message with text. A
        body too long to read whole stands for a reply too long to be a verdict
        (`_http.cut_body_completion`)."""
        headers = {"anthropic-version": ANTHROPIC_VERSION}
        if self._api_key:  # the real API always needs one; a local stand-in may not
            headers["x-api-key"] = self._api_key
        status, reply_headers, payload, latency_ms = await post_json(
            self._session, self.endpoint, self.request_body(messages), headers, self.timeout
        )
        if not 200 <= status < 300:
            raise status_error(
                "anthropic", status, reply_headers, payload,
                key_env="ANTHROPIC_API_KEY", key_sent=bool(self._api_key), secrets=[self._api_key],
            )
        if body_cut(payload):
            return cut_body_completion(payload, latency_ms)
        return decode_message(payload, latency_ms)

    @property
    def exchange_timeout(self) -> float:
        """Each HTTP exchange of `complete` gives up after this many seconds with a retryable
        `TransportError` ("no reply within ..."): `call_with_retries` needs no timer of its own
        when its policy allows as long or longer."""
        return self.timeout

    async def aclose(self) -> None:
        """Nothing to release: the HTTP session belongs to the caller."""


def decode_message(payload: bytes, latency_ms: float = 0.0) -> Completion:
    """A `Completion` from a Messages API body; `TransportError` (retryable) when it is not one."""
    try:
        reply = _decoder.decode(payload)
    except msgspec.DecodeError as exc:
        raise TransportError(f"anthropic judge sent a body that is not a message ({exc})") from None
    texts = [block.text for block in reply.content if block.type == "text" and block.text is not None]
    if not texts:
        raise TransportError("anthropic judge sent a message without a text block")
    usage = reply.usage or _Usage()
    tokens = Tokens(prompt=usage.input_tokens or 0, completion=usage.output_tokens or 0)
    return Completion(content="".join(texts), tokens=tokens, latency_ms=latency_ms)
