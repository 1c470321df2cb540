"""What the HTTP judge backends share: one POST, and HTTP errors turned into `TransportError`s.

Both wire protocols report errors as `{"error": {"type": ..., "message": ...}}` (Anthropic adds a
top-level `"type": "error"`). Statuses 408, 409, 429 and 5xx (including Anthropic's 529) are
retryable; any other status is a configuration problem and is not. Server messages are echoed,
shortened, with the key and anything key-shaped cut out.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterable, Mapping
from typing import Any

import aiohttp
import msgspec

from ..errors import TransportError
from ..redact import scrub
from ..transport import parse_retry_after

#: Statuses below 500 that are worth retrying: timeout, conflict, rate limit.
RETRYABLE_STATUSES = frozenset({408, 409, 429})

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
    """POST `body` as JSON; returns status, headers, the whole body and the latency in ms.

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
            payload = await response.read()
            latency_ms = (time.perf_counter() - started) * 1000.0
            return response.status, response.headers, payload, latency_ms
    except TimeoutError:
        raise TransportError(f"no reply within {timeout:g} s") from None
    except (aiohttp.ClientError, ConnectionError) as exc:
        raise TransportError(f"connection to the judge failed ({type(exc).__name__})") from None


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
