"""Anthropic's Message Batches API.

    POST {base}/v1/messages/batches               {requests: [{custom_id, params}]} -> batch
    GET  {base}/v1/messages/batches/{id}          the batch: processing_status, request_counts,
                                                  results_url once it has ended
    GET  {results_url}                            JSONL: {custom_id, result: {type, ...}}
    POST {base}/v1/messages/batches/{id}/cancel

A batch is over once `processing_status` is `ended`; each result's `type` is `succeeded` (with the
`message` a live call would have received), `errored` (with the API's error body), `canceled` or
`expired`. Every call carries `x-api-key` and `anthropic-version`, the judge's own headers; the
results URL gets them too, so it must lie below the API base this judge was given (a batch naming
any other host is refused rather than sent the key). Limits: 100,000 requests and 256 MB a batch.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import msgspec

from ...core.errors import TransportError
from .service import BatchStatus, LineResult, Wire, spool, undecodable

#: Error types of an `errored` result that a second try would meet again.
FINAL_ERRORS = frozenset(
    {"invalid_request_error", "authentication_error", "permission_error", "not_found_error"}
)


class _Counts(msgspec.Struct):
    processing: int = 0
    succeeded: int = 0
    errored: int = 0
    canceled: int = 0
    expired: int = 0


class _Batch(msgspec.Struct):
    id: str
    processing_status: str
    request_counts: _Counts | None = None
    results_url: str | None = None


class _Detail(msgspec.Struct):
    type: str = ""
    message: str = ""


class _ErrorBody(msgspec.Struct):
    error: _Detail | None = None


class _Result(msgspec.Struct):
    type: str
    message: msgspec.Raw = msgspec.Raw(b"null")
    error: _ErrorBody | None = None


class _Line(msgspec.Struct):
    custom_id: str
    result: _Result


_batch = msgspec.json.Decoder(_Batch)
_line = msgspec.json.Decoder(_Line)


class AnthropicBatches:
    """The Message Batches API below `base_url` (the judge's API root, without `/v1`)."""

    service = "anthropic"
    max_requests = 100_000
    max_bytes = 256 * 1024 * 1024

    def __init__(self, wire: Wire, base_url: str) -> None:
        self.wire = wire
        self.base = base_url.rstrip("/")
        self.batches = f"{self.base}/v1/messages/batches"

    def entry(self, custom_id: str, body: bytes) -> bytes:
        head = msgspec.json.encode({"custom_id": custom_id})
        return head[:-1] + b',"params":' + body + b"}"

    async def submit(self, entries: list[bytes]) -> BatchStatus:
        # `{"requests": [entry, ...]}`, written to disk as the entries are let go, sent from there.
        with spool(entries, head=b'{"requests":[', between=b",", tail=b"]}") as body:
            return _status(
                await self.wire.call("POST", self.batches, data=body, content_type="application/json")
            )

    async def status(self, batch_id: str) -> BatchStatus:
        return _status(await self.wire.call("GET", f"{self.batches}/{batch_id}"))

    async def cancel(self, batch_id: str) -> BatchStatus:
        return _status(await self.wire.call("POST", f"{self.batches}/{batch_id}/cancel"))

    async def results(self, status: BatchStatus) -> AsyncIterator[tuple[str, LineResult]]:
        for url in status.sources:
            if not url.startswith(self.base + "/"):
                raise TransportError(
                    f"batch {status.id}: its results URL is not below {self.base}; not sent the key",
                    retryable=False,
                )
            async for raw in self.wire.lines(url):
                try:
                    line = _line.decode(raw)
                except (msgspec.DecodeError, RecursionError) as exc:  # nested too deep: bad input too
                    raise undecodable("a result line", exc) from None
                yield line.custom_id, _result(line.result)


def _status(payload: bytes) -> BatchStatus:
    try:
        batch = _batch.decode(payload)
    except (msgspec.DecodeError, RecursionError) as exc:  # nested too deep: bad input too
        raise undecodable("a message batch", exc) from None
    c = batch.request_counts or _Counts()
    ended = batch.processing_status == "ended"
    failed = c.errored + c.canceled + c.expired
    return BatchStatus(
        id=batch.id,
        state=batch.processing_status,
        ended=ended,
        total=c.processing + c.succeeded + failed,
        done=c.succeeded + failed,
        failed=failed,
        sources=(batch.results_url,) if ended and batch.results_url else (),
    )


def _result(result: _Result) -> LineResult:
    if result.type == "succeeded":
        return LineResult("reply", payload=bytes(result.message))
    if result.type == "errored":
        detail = (result.error.error if result.error is not None else None) or _Detail()
        return LineResult(
            "error",
            message=f"{detail.type or 'error'}: {detail.message}",
            retryable=detail.type not in FINAL_ERRORS,
        )
    return LineResult("unfinished", message=result.type)  # canceled, expired
