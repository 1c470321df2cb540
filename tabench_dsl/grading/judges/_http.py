"""What the HTTP judge backends share: one POST, and HTTP errors turned into `TransportError`s.

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

import functools
import time
from collections.abc import Iterable, Mapping
from typing import Any

import aiohttp
import msgspec

from ...core.errors import TransportError
from ...core.redact import scrub
from ..transport import parse_retry_after
from ..verdict import MAX_REPLY_BYTES
from .base import Completion

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
    """POST `body` as JSON; returns status, headers, the body and the latency in ms. The body is
    whole unless it is over MAX_BODY_BYTES: then only its first MAX_BODY_BYTES + 1 bytes were read
    (`body_cut` tells).

    Timeouts, resets and refused connections raise a retryable `TransportError`; the message names
    the kind of failure only (aiohttp's own messages may carry the URL)."""
    started = time.perf_counter()
    try:
        async with session.post(
            url,
            data=msgspec.json.encode(body),
            headers={"content-type": "application/json", **headers},
            timeout=_client_timeout(timeout),
        ) as response:
            payload = await _read_capped(response, MAX_BODY_BYTES)
            latency_ms = (time.perf_counter() - started) * 1000.0
            return response.status, response.headers, payload, latency_ms
    except TimeoutError:
        raise TransportError(f"no reply within {timeout:g} s") from None
    except (aiohttp.ClientError, ConnectionError) as exc:
        raise TransportError(f"connection to the judge failed ({type(exc).__name__})") from None


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
) -> TransportError:
    """The `TransportError` for a non-2xx reply, retryable or not by its status. `key_env` names
    the variable the key comes from, for the hint of a 401/403."""
    detail = _error_detail(payload)
    said = f": {scrub_line(detail, secrets)}" if detail else ""
    retry_after = parse_retry_after(headers)
    if is_retryable(status):
        kind = "rate limited" if status == 429 else "server busy or failing"
        return TransportError(
            f"{backend} judge {kind} (HTTP {status}){said}", status=status, retry_after=retry_after
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
    return TransportError(message, status=status, retry_after=retry_after, retryable=False)


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
