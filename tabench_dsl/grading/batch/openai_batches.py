"""The OpenAI Batch API (and any server offering the same endpoints), for Chat Completions requests.

    POST {base}/files                multipart: purpose=batch, file=<JSONL>     -> {id}
    POST {base}/batches              {input_file_id, endpoint, completion_window: "24h"} -> batch
    GET  {base}/batches/{id}         the batch: status, request_counts, output/error_file_id
    GET  {base}/files/{id}/content   the JSONL of results (output file) or of failures (error file)
    POST {base}/batches/{id}/cancel

Each input line is `{custom_id, method: "POST", url: "/v1/chat/completions", body}`; each result line
`{custom_id, response: {status_code, body} | null, error: {code, message} | null}`. A batch is over
once its status is `completed`, `failed` (validation: `errors.data` says why), `expired` or
`cancelled`; an expired or cancelled batch still lists what it ran, and its unrun requests come in
the error file as `batch_expired` / `batch_cancelled`. Limits: 50,000 requests and 200 MB a batch.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import msgspec

from .service import BatchStatus, LineResult, Wire, spool, undecodable

#: Statuses after which nothing in a batch changes.
ENDED = frozenset({"completed", "failed", "expired", "cancelled"})
#: Error codes of a result line that mean the request was never run.
UNRUN = frozenset({"batch_expired", "batch_cancelled"})
#: The endpoint every request of a tabench batch goes to.
ENDPOINT = "/v1/chat/completions"


class _Counts(msgspec.Struct):
    total: int = 0
    completed: int = 0
    failed: int = 0


class _Error(msgspec.Struct):
    code: str | int | None = None
    message: str | None = None
    line: int | None = None


class _Errors(msgspec.Struct):
    data: list[_Error] = []


class _Batch(msgspec.Struct):
    id: str
    status: str
    request_counts: _Counts | None = None
    output_file_id: str | None = None
    error_file_id: str | None = None
    errors: _Errors | None = None


class _File(msgspec.Struct):
    id: str


class _Response(msgspec.Struct):
    status_code: int
    body: msgspec.Raw = msgspec.Raw(b"null")


class _Line(msgspec.Struct):
    custom_id: str
    response: _Response | None = None
    # OpenAI: {code, message}; vLLM's run-batch: a string, or its ErrorResponse {error: {...}}.
    error: msgspec.Raw = msgspec.Raw(b"null")


class _Wrapped(msgspec.Struct):
    error: _Error | None = None


_batch = msgspec.json.Decoder(_Batch)
_file = msgspec.json.Decoder(_File)
_line = msgspec.json.Decoder(_Line)
_error_shapes = msgspec.json.Decoder(_Error | str | None)
_wrapped = msgspec.json.Decoder(_Wrapped)


class OpenAIBatches:
    """The Batch API below `base_url` (the judge's API base, `/v1` included)."""

    service = "openai"
    max_requests = 50_000
    max_bytes = 200 * 1024 * 1024
    #: The path every request line and the batch name (a service below another base may differ).
    endpoint = ENDPOINT

    def __init__(self, wire: Wire, base_url: str) -> None:
        self.wire = wire
        self.base = base_url.rstrip("/")

    def entry(self, custom_id: str, body: bytes) -> bytes:
        return request_line(custom_id, body, url=self.endpoint)

    async def submit(self, entries: list[bytes]) -> BatchStatus:
        with spool(entries) as data:  # the JSONL file, one request a line, uploaded from disk
            form = aiohttp.FormData()
            form.add_field("purpose", "batch")
            form.add_field(
                "file",
                data,
                filename="tabench-batch.jsonl",
                content_type="application/jsonl",
            )
            uploaded = await self.wire.call("POST", self.url("/files"), data=form)
        try:
            file_id = _file.decode(uploaded).id
        except (msgspec.DecodeError, RecursionError) as exc:  # nested too deep: bad input too
            raise undecodable("an uploaded file", exc) from None
        body = {"input_file_id": file_id, "endpoint": self.endpoint, "completion_window": "24h"}
        return _status(await self.wire.call("POST", self.url("/batches"), body=body))

    async def status(self, batch_id: str) -> BatchStatus:
        return _status(await self.wire.call("GET", self.url(f"/batches/{batch_id}")))

    async def cancel(self, batch_id: str) -> BatchStatus:
        return _status(await self.wire.call("POST", self.url(f"/batches/{batch_id}/cancel")))

    def url(self, path: str) -> str:
        """The URL of `path` below the API base."""
        return self.base + path

    async def results(self, status: BatchStatus) -> AsyncIterator[tuple[str, LineResult]]:
        """Every line of the output file, then of the error file."""
        for file_id in status.sources:
            async for raw in self.wire.lines(self.url(f"/files/{file_id}/content")):
                try:
                    yield result_line(raw)
                except (msgspec.DecodeError, RecursionError) as exc:  # nested too deep: bad input too
                    raise undecodable("a result line", exc) from None


def request_line(custom_id: str, body: bytes, *, url: str = ENDPOINT) -> bytes:
    """One line of a batch input file: `{custom_id, method: POST, url, body}` (`url` OpenAI's
    `/v1/chat/completions`; Azure's batches name `/chat/completions`)."""
    head = msgspec.json.encode({"custom_id": custom_id, "method": "POST", "url": url})
    return head[:-1] + b',"body":' + body + b"}"


def result_line(raw: bytes) -> tuple[str, LineResult]:
    """One line of a batch output (or error) file: its custom_id and what it says of the request;
    `msgspec.DecodeError` (a `ValidationError` for a wrong shape) when it is not such a line."""
    line = _line.decode(raw)
    return line.custom_id, _result(line)


def _status(payload: bytes) -> BatchStatus:
    try:
        batch = _batch.decode(payload)
    except (msgspec.DecodeError, RecursionError) as exc:  # nested too deep: bad input too
        raise undecodable("a batch", exc) from None
    counts = batch.request_counts or _Counts()
    problem = ""
    if batch.errors is not None and batch.errors.data:
        problem = "; ".join(
            f"{e.code or 'error'}: {e.message or ''}" + (f" (line {e.line})" if e.line else "")
            for e in batch.errors.data[:3]
        )
    sources = tuple(f for f in (batch.output_file_id, batch.error_file_id) if f)
    return BatchStatus(
        id=batch.id,
        state=batch.status,
        ended=batch.status in ENDED,
        total=counts.total,
        done=counts.completed + counts.failed,
        failed=counts.failed,
        problem=problem,
        sources=sources,
    )


def _result(line: _Line) -> LineResult:
    if line.response is not None:
        status = line.response.status_code
        body = bytes(line.response.body)
        if 200 <= status < 300:
            return LineResult("reply", payload=body)
        if body == b"null" and bytes(line.error) != b"null":  # vLLM puts the error beside the status
            body = bytes(line.error)
        return LineResult("refused", payload=body, status=status)
    error = _error(line.error)
    if error.code in UNRUN:
        return LineResult("unfinished", message=error.message or error.code or "")
    return LineResult("error", message=f"{error.code or 'error'}: {error.message or ''}")


def _error(raw: msgspec.Raw) -> _Error:
    """A result line's `error`, whichever shape it came in."""
    try:
        error = _error_shapes.decode(raw)
    except (msgspec.DecodeError, RecursionError):
        return _Error(message=bytes(raw).decode("utf-8", "replace")[:500])
    if isinstance(error, str):
        return _Error(message=error)
    if error is not None and error.code is None and error.message is None:
        try:
            inner = _wrapped.decode(raw).error  # vLLM's {error: {message, type, code}}
        except (msgspec.DecodeError, RecursionError):
            inner = None
        return inner or error
    return error or _Error()
