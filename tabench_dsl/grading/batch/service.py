"""What the two providers' batch services have in common: one batch's status, one result line, the
HTTP exchanges (JSON calls and line-by-line downloads) and the `BatchService` protocol the round
engine (`rounds`) speaks.

A service turns one request body (the judge's own `request_body`, JSON-encoded) into an entry of its
input (`entry`), submits a list of entries as one batch (`submit`), tells a batch's status
(`status`), streams an ended batch's result lines (`results`) and cancels a batch (`cancel`).
Every call goes with the judge's own headers (its key among them), so keys travel exactly as in
live grading; a refused call is a `TransportError` built by `_http.status_error` (key scrubbed).
A redirect is never followed (the key would go with it): a 30x is such an error, naming the host
it pointed to. A control reply is read no further than `MAX_CONTROL_BYTES` and has every key cut
out before it is decoded (a batch id or state echoing a key reaches no ledger, record or
terminal); result lines are split as they come, in linear time, and a line over `MAX_LINE_BYTES`
is dropped unread (its request counts as unfinished and goes to the next round).
"""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator, Mapping
from typing import IO, Any, Literal, Protocol

import aiohttp
import msgspec

from ...core.errors import TransportError
from ...core.redact import scrub
from ..judges._http import MAX_BODY_BYTES, status_error
from ..judges.client_errors import map_client_errors

#: Seconds allowed to one control call (upload, create, status, cancel, a whole download).
CONTROL_TIMEOUT = 600.0
#: Bytes asked of the connection at a time while downloading results.
_CHUNK = 256 * 1024
#: The most bytes of a control reply (a batch, an uploaded file) read; a longer one is an error.
MAX_CONTROL_BYTES = MAX_BODY_BYTES
#: The longest result line kept: a live reply's limit, and room for the line around it.
MAX_LINE_BYTES = 2 * MAX_BODY_BYTES

ResultKind = Literal["reply", "refused", "error", "unfinished"]


class BatchStatus(msgspec.Struct, frozen=True):
    """One batch as its service last described it.

    `state` is the provider's own word (OpenAI: validating, failed, in_progress, finalizing,
    completed, expired, cancelling, cancelled; Anthropic: in_progress, canceling, ended); `ended`
    says no request of it will change any more. `done` of `total` requests have finished, `failed`
    of them without a reply. `problem` says why a batch gave nothing (a validation failure).
    `sources` are where its results are read from (file ids, or a results URL)."""

    id: str
    state: str
    ended: bool
    total: int = 0
    done: int = 0
    failed: int = 0
    problem: str = ""
    sources: tuple[str, ...] = ()


class LineResult(msgspec.Struct, frozen=True):
    """What a batch says of one request:

    reply       a successful call: `payload` is the body a live call would have received;
    refused     the provider answered the call with HTTP `status` and the error body `payload`;
    error       the call failed (`message`), retryable or not;
    unfinished  the batch ended (expired, cancelled, failed) before running it.
    """

    kind: ResultKind
    payload: bytes = b""
    status: int = 0
    message: str = ""
    retryable: bool = True


class BatchService(Protocol):
    """A provider's batch service, as the round engine uses it."""

    #: `openai`, `anthropic` or `files` (`file_batches`): which service the ledger names for
    #: `tabench batches`.
    service: str
    #: The most requests and bytes of input one batch may hold.
    max_requests: int
    max_bytes: int

    def entry(self, custom_id: str, body: bytes) -> bytes:
        """One request of a batch's input, from a request body (JSON)."""
        ...

    async def submit(self, entries: list[bytes]) -> BatchStatus:
        """Submit `entries` as one batch. The list is emptied once its entries are joined into the
        input, so the two are never held together longer than that."""
        ...

    async def status(self, batch_id: str) -> BatchStatus: ...

    def results(self, status: BatchStatus) -> AsyncIterator[tuple[str, LineResult]]: ...

    async def cancel(self, batch_id: str) -> BatchStatus: ...


class Wire:
    """The HTTP side of a service: one session, the provider's headers, errors as `TransportError`s
    naming `backend`, with `secrets` cut out of every message."""

    def __init__(
        self,
        session: aiohttp.ClientSession,
        headers: Mapping[str, str],
        *,
        backend: str,
        secrets: tuple[str, ...] = (),
        timeout: float = CONTROL_TIMEOUT,
    ) -> None:
        self.session = session
        # Each call sets its own content type (JSON, or multipart for an upload).
        self.headers = {k: v for k, v in headers.items() if k.lower() != "content-type"}
        self.backend = backend
        self.secrets = secrets
        self.timeout = aiohttp.ClientTimeout(total=timeout)
        self._seconds = timeout

    async def call(
        self, method: str, url: str, *, body: Any = None, data: Any = None, content_type: str | None = None
    ) -> bytes:
        """One control call; the whole reply body, or `TransportError` for a non-2xx status. `body`
        is sent as JSON; `data` as it is (a form, or a spooled file with its `content_type`)."""
        headers = dict(self.headers)
        if body is not None:
            data = body if isinstance(body, bytes) else msgspec.json.encode(body)
            content_type = "application/json"
        if content_type is not None:
            headers["content-type"] = content_type
        with map_client_errors(self._seconds):
            async with self.session.request(
                method, url, data=data, headers=headers, timeout=self.timeout, allow_redirects=False
            ) as response:
                payload = await self._read_capped(response)
                if not 200 <= response.status < 300:
                    raise self.refused(response.status, response.headers, payload)
                return scrub(payload.decode("utf-8", "replace"), self.secrets).encode("utf-8")

    async def _read_capped(self, response: aiohttp.ClientResponse) -> bytes:
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.content.iter_chunked(_CHUNK):
            chunks.append(chunk)
            size += len(chunk)
            if size > MAX_CONTROL_BYTES:
                if not 200 <= response.status < 300:  # an error body: its start says enough
                    break
                raise TransportError(
                    f"the {self.backend} batch service sent a reply over {MAX_CONTROL_BYTES:,} bytes",
                    retryable=False,
                )
        return b"".join(chunks)[:MAX_CONTROL_BYTES]

    async def lines(self, url: str) -> AsyncIterator[bytes]:
        """The non-empty lines of a downloaded JSONL body, as they come (never the whole body)."""
        with map_client_errors(self._seconds):
            async with self.session.get(
                url, headers=self.headers, timeout=self.timeout, allow_redirects=False
            ) as response:
                if not 200 <= response.status < 300:
                    raise self.refused(response.status, response.headers, await self._read_capped(response))
                splitter = LineSplitter(MAX_LINE_BYTES)
                async for chunk in response.content.iter_chunked(_CHUNK):
                    for line in splitter.feed(chunk):
                        yield line
                for line in splitter.end():
                    yield line

    def refused(self, status: int, headers: Mapping[str, str], payload: bytes) -> TransportError:
        return status_error(f"{self.backend} batch", status, headers, payload, secrets=self.secrets)


class LineSplitter:
    """Non-empty lines from chunks, each byte looked at once (a line split across many chunks is
    joined once, at its end); a line over `limit` bytes is dropped as it comes, never held."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._pieces: list[bytes] = []
        self._size = 0
        self._dropping = False

    def feed(self, chunk: bytes) -> list[bytes]:
        """The lines that `chunk` ends."""
        lines: list[bytes] = []
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            self._add(chunk[start:end])
            lines.extend(self._take())
            start = end + 1
        self._add(chunk[start:])
        return lines

    def end(self) -> list[bytes]:
        """The last line, when the body does not end with a line break."""
        return self._take()

    def _add(self, piece: bytes) -> None:
        if self._dropping or not piece:
            return
        self._size += len(piece)
        if self._size > self.limit:
            self._pieces, self._size, self._dropping = [], 0, True
        else:
            self._pieces.append(piece)

    def _take(self) -> list[bytes]:
        line = b"".join(self._pieces)
        self._pieces, self._size, self._dropping = [], 0, False
        return [line] if line.strip() else []


def spool(
    entries: list[bytes], *, head: bytes = b"", between: bytes = b"\n", tail: bytes = b"\n"
) -> IO[bytes]:
    """`entries` written to a temporary file (head, the entries with `between` them, tail), rewound
    for upload; each entry is let go as it is written and the list is left empty. A batch of tens of
    thousands of requests is tens of megabytes: uploaded from disk, it is never held twice in memory
    (the entries and their joined copy). The caller closes the file (it is deleted then)."""
    file = tempfile.TemporaryFile()  # noqa: SIM115 - handed to the caller, who closes it
    try:
        file.write(head)
        for index in range(len(entries)):
            if index:
                file.write(between)
            file.write(entries[index])
            entries[index] = b""
        file.write(tail)
        entries.clear()
        file.seek(0)
    except BaseException:
        file.close()
        raise
    return file


def undecodable(what: str, exc: Exception) -> TransportError:
    """A reply of a batch service that is not what its documentation says (retryable)."""
    return TransportError(f"the batch service sent {what} that cannot be read ({exc})")
