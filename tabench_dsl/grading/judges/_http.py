"""What the HTTP judge backends share: the `HttpJudge` base class, one POST, and HTTP errors
turned into `TransportError`s.

`HttpJudge` holds the common plumbing: the caller's session, the base URL (checked and shortened for
labels, `urls.safe_url`), the headers (its key among them, kept only in the object), one POST per
exchange (`post_json`, its client errors mapped by `client_errors.map_client_errors`), the statuses
that are not a reply (`status_error`), and the body too long to be a verdict. A subclass keeps only
its wire format:

    normalize_base(url)       the API base a user's URL stands for
    PATH                      the endpoint below that base
    wire_headers(api_key)     the protocol's headers, the key in its place
    request_body(messages)    the JSON body of one call (with the prompt-cache hint when
                              `prompt_cache` is on)
    decode(payload, ms)       a `Completion` from a successful body
    ask_again(status, body)   whether a refusal asked for another request form (default: never)
    structured_fields(schema) the protocol's fields asking for a reply in the scorer's schema
    rate_reading(headers)     the reply's rate-limit headers as a `RateReading` (default: none)

What the user adds to every request (the structured-verdict schema, `--judge-param` fields,
`--judge-header` headers) is the judge's `shape` (`request_shape.RequestShape`), set by the factory
through `shape_requests`: `full_body` is `request_body` with those additions, the one body both a
live call and a batch line send.

The rate-limit reading goes with every reply, a success (`Completion.rate`) or an error
(`TransportError.rate`), so the pacer (`pacing.Pacer`) can slow down before the server says no.

Both wire protocols report errors as `{"error": {"type": ..., "message": ...}}` (Anthropic adds a
top-level `"type": "error"`). Statuses 408, 409, 429 and 5xx (including Anthropic's 529) are
retryable; any other status is a configuration problem and is not, and a refusal for want of credit
(`wire_errors.money_error`, a 429 `insufficient_quota` too) stops the run. Server messages, read
from any common body shape (`wire_errors.error_message`), are echoed, shortened, with the key and
anything key-shaped cut out.

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
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import urlsplit

import msgspec

from ...core.errors import TransportError
from ...core.ratelimit import RateReading
from ...core.records import JudgeInfo, Served, Tokens
from ...core.redact import scrub
from ..verdict import MAX_REPLY_BYTES
from .base import DEFAULT_TIMEOUT, Completion, Judge, JudgeIdentity, JudgeParams, Message
from .client_errors import map_client_errors, parse_retry_after
from .request_shape import RequestShape
from .urls import safe_url
from .wire_errors import error_message, money_error, refused_field

if TYPE_CHECKING:
    import aiohttp

#: Statuses below 500 that are worth retrying: timeout, conflict, rate limit.
RETRYABLE_STATUSES = frozenset({408, 409, 429})
#: The most of a reply body read: a reply of MAX_REPLY_BYTES escaped character by character
#: (`\u00e9`, six bytes for each of up to MAX_REPLY_BYTES characters) plus its envelope.
MAX_BODY_BYTES = 8 * MAX_REPLY_BYTES
#: The most request forms one call tries after refusals naming a field (`HttpJudge.ask_again`).
MAX_FORM_CHANGES = 4
#: Bytes asked of the connection at a time while reading a body.
_READ_CHUNK = 64 * 1024

_MESSAGE_LIMIT = 300


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
    import aiohttp  # at the first request: building a judge that sends nothing never imports it

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
    (`client_errors.map_client_errors`)."""
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
    length = response.content_length
    if length is not None and length <= limit and "Content-Encoding" not in response.headers:
        # Its length is declared and within the limit, and nothing unpacks it: the HTTP parser
        # ends the body there, so it is read whole at once (no chunk loop for a verdict's bytes).
        return await response.read()
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
    key_withheld: str | None = None,
) -> TransportError:
    """The `TransportError` for a non-2xx reply, retryable or not by its status. `key_env` names
    the variable the key comes from, for the hint of a 401/403; `key_withheld` says why a key in
    the environment was not sent (a plain-http URL); `rate` is the reply's rate-limit reading,
    carried along for the pacer. A refusal for want of credit (`wire_errors.money_error`) is not
    retried and stops the run (`TransportError.stops_run`), whatever its status."""
    detail = error_message(payload)
    said = f": {scrub_line(detail, secrets)}" if detail else ""
    retry_after = parse_retry_after(headers)
    if money_error(status, payload):
        return TransportError(
            f"{backend} judge refused the request for want of credit or quota (HTTP {status}){said}; "
            "add credit or raise the quota, then --resume",
            status=status,
            retryable=False,
            rate=rate,
            stops_run=True,
        )
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
        if not key_sent and key_withheld:
            hint = f"; {key_withheld}"
        elif not key_sent:
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
        key_withheld: str | None = None,
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
        #: Why a key in the environment was not sent (for the hint of a 401/403), or None.
        self._key_withheld = key_withheld
        self._headers = {"content-type": "application/json", **self.wire_headers(self._api_key)}
        self.shape = RequestShape()
        #: Whether the server refused `temperature` (`drop_refused_temperature`): none is sent then.
        self.temperature_refused = False

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

    def shape_requests(self, shape: RequestShape) -> None:
        """Send `shape`'s additions with every request from now on: its headers (over the
        protocol's own, the user asked for them) and its body fields (`full_body`)."""
        self.shape = shape
        self.request_shape = shape.digest
        overridden = {name.lower() for name in shape.headers}
        kept = {name: value for name, value in self._headers.items() if name.lower() not in overridden}
        self._headers = {**kept, **shape.headers}

    def reply_tokens(self) -> int:
        return self.shape.reply_tokens(self.params.max_tokens)

    @property
    def secrets(self) -> tuple[str, ...]:
        """The key and the header values: never in a message, a reply or a record."""
        return tuple(s for s in (self._api_key, *self.shape.secrets) if s)

    def structured_fields(self, schema: dict[str, Any]) -> dict[str, Any]:
        """The body fields asking for a reply in `schema`; by default the protocol has none."""
        return {}

    def full_body(self, messages: list[Message]) -> dict[str, object]:
        """The body one call sends: `request_body` with the user's additions (`shape`)."""
        body = self.request_body(messages)
        self.shape.extend(body, self.structured_fields)
        return body

    def adapt_to_refusal(self, status: int, payload: bytes) -> bool:
        """Whether a refusal made this judge change its request form, so the call is made again:
        the protocol's own forms first (`ask_again`), then dropping an `auto` structured schema."""
        if self.ask_again(status, payload):
            return True
        said = self.shape.refused(status, payload, self.info.backend)
        if said is not None and self.notice is not None:
            self.notice(said)
        return said is not None

    def connection(self) -> tuple[aiohttp.ClientSession, Mapping[str, str]]:
        """The session and the headers (the key among them) of this judge's calls: the provider's
        batch service (grading/batch/) is called with the same ones."""
        return self._session, self._headers

    def ask_again(self, status: int, payload: bytes) -> bool:
        """Whether a refusal named another form of the request, now adopted, so the call is made
        again at once; by default no refusal does."""
        return False

    def drop_refused_temperature(self, status: int, payload: bytes) -> bool:
        """Whether the server refused `temperature` itself (`wire_errors.refused_field`: gpt-5 and
        the o-series take only their default, newer Claude models call it deprecated): then this
        judge sends none for the rest of the run (`sent_temperature`), `notice` is told once, and the
        call is made again at once. A call in flight when another made the change is asked again
        too. Like the other forms a refusal adopts, this is how the request is sent, not what was
        asked: `params` (and so the reply cache's key) stay as the judge was built, so a rerun finds
        the replies this run stored."""
        if not refused_field(status, payload, "temperature"):
            return False
        dropped = self.sent_temperature
        if dropped is not None:
            self.temperature_refused = True
            if self.notice is not None:
                self.notice(
                    f"{self.info.backend} judge ({self.params.model}) refused temperature {dropped:g}: "
                    "asking without it (the model's own default) for the rest of the run"
                )
        return True

    @property
    def sent_temperature(self) -> float | None:
        """The temperature requests carry: the judge's, unless the server refused it (None)."""
        return None if self.temperature_refused else self.params.temperature

    def rate_reading(self, headers: Mapping[str, str]) -> RateReading | None:
        """What the reply's rate-limit headers say (`pacing` has each provider's parser); by
        default the protocol sends none."""
        return None

    async def complete(self, messages: list[Message]) -> Completion:
        """One exchange; raises `TransportError` for anything that is not a usable reply. A body too
        long to read whole stands for a reply too long to be a verdict (`cut_body_completion`).
        A refusal that names another request form (`ask_again`) is asked again at once, at most
        `MAX_FORM_CHANGES` times, so a server that refuses every form cannot loop it."""
        for _ in range(MAX_FORM_CHANGES + 1):
            status, reply_headers, payload, latency_ms = await post_json(
                self._session,
                self.endpoint,
                self.full_body(messages),
                self._headers,
                self.exchange_timeout,
            )
            if 200 <= status < 300 or not self.adapt_to_refusal(status, payload):
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
                secrets=self.secrets,
                rate=rate,
                key_withheld=self._key_withheld,
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
    reasoning: int | None = None,
) -> Tokens:
    """The tokens a server reported, 0 for a count it left out or sent as null. `prompt` counts
    every input token, cached ones included (`records.Tokens`): a backend whose protocol reports
    them apart adds them up before it calls this. A negative count is no count: the reply is not
    one (a `TransportError`, asked again like any unreadable reply), never a figure that would
    take spend off the totals or the `--max-cost` cap."""
    counts = {
        "prompt": prompt,
        "completion": completion,
        "cached_prompt": cached_prompt,
        "cache_write": cache_write,
        "reasoning": reasoning,
    }
    for name, value in counts.items():
        if value is not None and value < 0:
            raise TransportError(f"the judge's reply reports {value} {name} tokens; a count is never below 0")
    return Tokens(
        prompt=prompt or 0,
        completion=completion or 0,
        cached_prompt=cached_prompt or 0,
        cache_write=cache_write or 0,
        reasoning=reasoning or 0,
    )


def served(model: str | None, response_id: str | None, fingerprint: str | None = None) -> Served | None:
    """Who answered, as a reply names it (None when it names nothing)."""
    if not (model or response_id or fingerprint):
        return None
    return Served(
        model=model or None, response_id=response_id or None, system_fingerprint=fingerprint or None
    )


def http_identity(backend: str, base_url: str, params: JudgeParams) -> JudgeIdentity:
    """How an HTTP judge at `base_url` names itself in records and cache keys (`HttpJudge.info`):
    the backend, the model, and the base URL without its credentials as label and endpoint."""
    shown = safe_url(base_url)
    return JudgeIdentity(JudgeInfo(backend=backend, model=params.model, label=shown, endpoint=shown), params)
