"""What the HTTP judge backends share: the `HttpJudge` base class, one POST, and HTTP errors
turned into `TransportError`s.

`HttpJudge` holds the common plumbing: the caller's session, the base URL (checked and shortened for
labels, `urls.safe_url`), the headers (its key among them, kept only in the object), one POST per
exchange (`post_json`, its client errors mapped by `transport.map_client_errors`), the statuses
that are not a reply (`status_error`), and the body too long to be a verdict. A subclass keeps only
its wire format:

    normalize_base(url)       the API base a user's URL stands for
    PATH                      the endpoint below that base
    wire_headers(api_key)     the protocol's headers, the key in its place
    request_body(messages)    the JSON body of one call (with the prompt-cache hint when
                              `prompt_cache` is on)
    decode(payload, ms)       a `Completion` from a successful body
    ask_again(status, body)   whether a refusal asked for another request form (default: never)
    rate_reading(headers)     the reply's rate-limit headers as a `RateReading` (default: none)

The rate-limit reading goes with every reply, a success (`Completion.rate`) or an error
(`TransportError.rate`), so the pacer (`pacing.Pacer`) can slow down before the server says no.

Both wire protocols report errors as `{"error": {"type": ..., "message": ...}}` (Anthropic adds a
top-level `"type": "error"`). Statuses 408, 409, 429 and 5xx (including Anthropic's 529) are
retryable; any other status is a configuration problem and is not. Server messages are echoed,
shortened, with the key and anything key-shaped cut out.

A body is read up to `MAX_BODY_BYTES` and no further, whatever its Content-Length or compression
says, so a judge cannot fill memory. That is room for a reply of `verdict.MAX_REPLY_BYTES` in its
JSON envelope even with every character escaped; a successful body that does not fit
(`body_cut`) stands for a reply too long to be a verdict (`cut_body_completion`): malformed, like
any reply over the limit, and asked again as the runner asks again after a malformed reply.
"""

from __future__ import annotations

import abc
import functools
import time
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar
from urllib.parse import urlsplit

import aiohttp
import msgspec

from ...core.errors import TransportError
from ...core.ratelimit import RateReading
from ...core.records import JudgeInfo, Tokens
from ...core.redact import scrub
from ..transport import map_client_errors, parse_retry_after
from ..verdict import MAX_REPLY_BYTES
from .base import DEFAULT_TIMEOUT, Completion, Judge, JudgeParams, Message
from .urls import safe_url

#: Statuses below 500 that are worth retrying: timeout, conflict, rate limit.
RETRYABLE_STATUSES = frozenset({408, 409, 429})
#: The most of a reply body read: a reply of MAX_REPLY_BYTES escaped character by character
#: (`\u00e9`, six bytes for each of up to MAX_REPLY_BYTES characters) plus its envelope.
MAX_BODY_BYTES = 8 * MAX_REPLY_BYTES
#: Bytes asked of the connection at a time while reading a body.
_READ_CHUNK = 64 * 1024

_MESSAGE_LIMIT = 300


class _ErrorDetail(msgspec.Struct):
    message: str = ""
    type: str = ""


class _ErrorBody(msgspec.Struct):
    error: _ErrorDetail | str | None = None


_error_decoder = msgspec.json.Decoder(_ErrorBody)


def is_retryable(status: int) -> bool:
    """True for statuses a later attempt may get past."""
    return status in RETRYABLE_STATUSES or status >= 500


def scrub_line(text: str, secrets: Iterable[str | None] = ()) -> str:
    """`text` without any of `secrets` or key-shaped words (`redact.scrub`), shortened to one
    readable line."""
    text = " ".join(scrub(text, secrets).split())
    return text if len(text) <= _MESSAGE_LIMIT else text[: _MESSAGE_LIMIT - 3] + "..."


@functools.lru_cache(maxsize=16)
def _client_timeout(total: float) -> aiohttp.ClientTimeout:
    """One (immutable) `ClientTimeout` per distinct timeout, not one per call."""
    return aiohttp.ClientTimeout(total=total)


async def post_json(
    session: aiohttp.ClientSession,
    url: str,
    body: dict[str, Any],
    headers: Mapping[str, str],
    timeout: float,
) -> tuple[int, Mapping[str, str], bytes, float]:
    """POST `body` as JSON with `headers` (the content type among them); returns status, headers,
    the body and the latency in ms. The body is whole unless it is over MAX_BODY_BYTES: then only
    its first MAX_BODY_BYTES + 1 bytes were read (`body_cut` tells).

    Timeouts, resets and refused connections raise a retryable `TransportError`
    (`transport.map_client_errors`)."""
    started = time.perf_counter()
    with map_client_errors(timeout):
        async with session.post(  # a redirect is never followed: the key would go with it
            url,
            data=msgspec.json.encode(body),
            headers=headers,
            timeout=_client_timeout(timeout),
            allow_redirects=False,
        ) as response:
            payload = await _read_capped(response, MAX_BODY_BYTES)
            latency_ms = (time.perf_counter() - started) * 1000.0
            return response.status, response.headers, payload, latency_ms


async def _read_capped(response: aiohttp.ClientResponse, limit: int) -> bytes:
    """The body of `response`, or its first `limit` + 1 bytes when it is longer: read as it comes
    (decompressed, so a small compressed body cannot unpack into a large one), and the reading
    stops there; leaving the response unread to its end closes that connection."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_chunked(_READ_CHUNK):
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            return b"".join(chunks)[: limit + 1]
    return b"".join(chunks)


def body_cut(payload: bytes) -> bool:
    """Whether `payload` (from `post_json`) is the beginning of a body over MAX_BODY_BYTES."""
    return len(payload) > MAX_BODY_BYTES


def cut_body_completion(payload: bytes, latency_ms: float) -> Completion:
    """The reply a successful body over MAX_BODY_BYTES stands for: its beginning as text. That is
    far over `verdict.MAX_REPLY_BYTES`, so it is malformed, and the grading loop keeps only its first
    MAX_REPLY_BYTES, for a person to see what the server sent. No tokens are known."""
    return Completion(content=payload.decode("utf-8", "replace"), latency_ms=latency_ms)


def status_error(
    backend: str,
    status: int,
    headers: Mapping[str, str],
    payload: bytes,
    *,
    key_env: str | None = None,
    key_sent: bool = True,
    secrets: Iterable[str | None] = (),
    rate: RateReading | None = None,
) -> TransportError:
    """The `TransportError` for a non-2xx reply, retryable or not by its status. `key_env` names
    the variable the key comes from, for the hint of a 401/403; `rate` is the reply's rate-limit
    reading, carried along for the pacer."""
    detail = _error_detail(payload)
    said = f": {scrub_line(detail, secrets)}" if detail else ""
    retry_after = parse_retry_after(headers)
    if 300 <= status < 400:
        return TransportError(
            redirect_message(backend, status, headers, secrets), status=status, retryable=False
        )
    if is_retryable(status):
        kind = "rate limited" if status == 429 else "server busy or failing"
        return TransportError(
            f"{backend} judge {kind} (HTTP {status}){said}", status=status, retry_after=retry_after, rate=rate
        )
    if status in (401, 403):
        what = "authentication failed" if status == 401 else "permission denied"
        if not key_sent:
            hint = f"; no key was sent (set {key_env})" if key_env else "; no key was sent"
        else:
            hint = f"; check {key_env}" if key_env else "; check the key"
        message = f"{backend} judge {what} (HTTP {status}){said}{hint}"
    elif status == 404:
        message = f"{backend} judge not found (HTTP 404){said}; check the model name and the base URL"
    else:
        message = f"{backend} judge rejected the request (HTTP {status}){said}"
    return TransportError(message, status=status, retry_after=retry_after, retryable=False, rate=rate)


def redirect_message(
    backend: str, status: int, headers: Mapping[str, str], secrets: Iterable[str | None]
) -> str:
    """Why a 30x reply ends a call: it is not followed, since the key would go with it."""
    location = headers.get("Location", "")
    host = urlsplit(location).hostname or ("the same host" if location else "nowhere")
    return (
        f"{backend} judge answered HTTP {status}, a redirect to {scrub_line(host[:200], secrets)}; "
        "not followed and nothing re-sent (name the endpoint it should be with --judge or the base URL)"
    )


def _error_detail(payload: bytes) -> str:
    try:
        body = _error_decoder.decode(payload)
    except msgspec.DecodeError:
        text = payload[:200].decode("utf-8", "replace").strip()
        return text if text and not text.startswith("<") else ""
    error = body.error
    if isinstance(error, _ErrorDetail):
        return f"{error.type}: {error.message}" if error.type else error.message
    return error or ""


class HttpJudge(Judge):
    """A judge behind an HTTP JSON API: the plumbing of the module docstring. The key, when given,
    is kept only in this object (never in `info`, `repr` or any message); the session belongs to
    the caller, so `aclose` has nothing to release. Each exchange gives up
    after `exchange_timeout` seconds by itself, so `call_with_retries` needs no timer of its own
    when its policy allows as long or longer."""

    #: The endpoint below the API base.
    PATH: ClassVar[str]
    exchange_timeout: float

    def __init__(
        self,
        params: JudgeParams,
        *,
        session: aiohttp.ClientSession,
        base_url: str,
        api_key: str | None,
        timeout: float = DEFAULT_TIMEOUT,
        backend: str,
        key_env: str | None,
        prompt_cache: bool = True,
    ) -> None:
        self.params = params
        #: Whether requests carry the protocol's prompt-cache hint (the manifest's
        #: `judge: {prompt_cache: false}` turns it off); `request_body` reads it.
        self.prompt_cache = prompt_cache
        self.base_url = self.normalize_base(base_url)
        self.endpoint = self.base_url + self.PATH
        self.exchange_timeout = timeout
        shown = safe_url(self.base_url)
        self.info = JudgeInfo(backend=backend, model=params.model, label=shown, endpoint=shown)
        self._session = session
        self._api_key = api_key or None
        self._key_env = key_env
        self._headers = {"content-type": "application/json", **self.wire_headers(self._api_key)}

    def __repr__(self) -> str:
        key = "set" if self._api_key else "none"
        return f"{type(self).__name__}(model={self.params.model!r}, base_url={self.base_url!r}, key={key})"

    @staticmethod
    @abc.abstractmethod
    def normalize_base(url: str) -> str:
        """The API base `url` stands for; `ValueError` when it is not an http(s) URL."""

    @abc.abstractmethod
    def wire_headers(self, api_key: str | None) -> dict[str, str]:
        """The protocol's headers for every call, with the key (when there is one)."""

    @abc.abstractmethod
    def request_body(self, messages: list[Message]) -> dict[str, object]:
        """The JSON body of one call."""

    @abc.abstractmethod
    def decode(self, payload: bytes, latency_ms: float) -> Completion:
        """A `Completion` from a successful body; `TransportError` (retryable) when it is none."""

    def connection(self) -> tuple[aiohttp.ClientSession, Mapping[str, str]]:
        """The session and the headers (the key among them) of this judge's calls: the provider's
        batch service (grading/batch/) is called with the same ones."""
        return self._session, self._headers

    def ask_again(self, status: int, payload: bytes) -> bool:
        """Whether a refusal named another form of the request, now adopted, so the call is made
        again at once; by default no refusal does."""
        return False

    def rate_reading(self, headers: Mapping[str, str]) -> RateReading | None:
        """What the reply's rate-limit headers say (`pacing` has each provider's parser); by
        default the protocol sends none."""
        return None

    async def complete(self, messages: list[Message]) -> Completion:
        """One exchange; raises `TransportError` for anything that is not a usable reply. A body too
        long to read whole stands for a reply too long to be a verdict (`cut_body_completion`)."""
        while True:
            status, reply_headers, payload, latency_ms = await post_json(
                self._session,
                self.endpoint,
                self.request_body(messages),
                self._headers,
                self.exchange_timeout,
            )
            if 200 <= status < 300 or not self.ask_again(status, payload):
                break
        rate = self.rate_reading(reply_headers)
        if not 200 <= status < 300:
            raise status_error(
                self.info.backend,
                status,
                reply_headers,
                payload,
                key_env=self._key_env,
                key_sent=bool(self._api_key),
                secrets=[self._api_key],
                rate=rate,
            )
        completion = (
            cut_body_completion(payload, latency_ms)
            if body_cut(payload)
            else self.decode(payload, latency_ms)
        )
        return completion if rate is None else msgspec.structs.replace(completion, rate=rate)


def reported_tokens(
    prompt: int | None,
    completion: int | None,
    *,
    cached_prompt: int | None = None,
    cache_write: int | None = None,
) -> Tokens:
    """The tokens a server reported, 0 for a count it left out or sent as null. `prompt` counts
    every input token, cached ones included (`records.Tokens`): a backend whose protocol reports
    them apart adds them up before it calls this."""
    return Tokens(
        prompt=prompt or 0,
        completion=completion or 0,
        cached_prompt=cached_prompt or 0,
        cache_write=cache_write or 0,
    )
