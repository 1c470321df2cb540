"""A batch service for tests: a real aiohttp application on 127.0.0.1, port 0, speaking OpenAI's Batch
API and Anthropic's Message Batches as they are documented, with scripted fates.

    OpenAI (below `url`, the `/v1` base):
      POST /v1/files                  multipart/form-data: purpose=batch, file=<JSONL>
      POST /v1/batches                {input_file_id, endpoint: /v1/chat/completions, completion_window: 24h}
      GET  /v1/batches/{id}           status validating -> in_progress -> completed (or failed, expired, ...)
      GET  /v1/files/{id}/content     output file / error file JSONL
      POST /v1/batches/{id}/cancel
    Anthropic (below `anthropic_url`):
      POST /v1/messages/batches       {requests: [{custom_id, params}]}
      GET  /v1/messages/batches/{id}  processing_status in_progress -> ended, results_url
      GET  /v1/messages/batches/{id}/results
      POST /v1/messages/batches/{id}/cancel

Every request body in a batch is checked as the live endpoints check it (`judge_server`'s checks);
keys are checked per call (`Authorization: Bearer`; `x-api-key` and `anthropic-version`).

`responder(body) -> str | ERRORED | (status, error dict)` gives each request's reply text, an
`errored` line, or a refusal. `fates` (a list, by submission order; the last repeats) decides each
batch: `complete`; `expire` (the first half of its requests run, the rest expire); `fail` (OpenAI:
validation fails; Anthropic: the create call is refused); `hold` (stays in progress until
`release()`). A batch ends after `polls_to_end` status calls (each earlier one shows progress).
`submitted` lists each batch's custom_ids in order, `polls` counts status calls. A live
`POST /v1/chat/completions` is answered by the responder too (`live_calls` counts them).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestServer

from support.judge_server import (
    _anthropic_message,
    _chat_completion,
    _check_anthropic,
    _check_openai,
    _Rejected,
)

#: A responder's word for "this request failed inside the batch".
ERRORED = "__errored__"

Responder = Callable[[dict[str, Any]], Any]


@dataclass
class _Batch:
    id: str
    protocol: str  # openai | anthropic
    fate: str
    requests: list[tuple[str, dict[str, Any]]]
    polls: int = 0
    state: str = ""
    problem: list[dict[str, Any]] = field(default_factory=list)
    output: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)
    input_file: str = ""
    output_file: str | None = None
    error_file: str | None = None


class BatchServer:
    """A running batch service (module docstring)."""

    def __init__(
        self,
        responder: Responder,
        *,
        fates: list[str] | None = None,
        polls_to_end: int = 1,
        api_key: str | None = None,
    ) -> None:
        self.responder = responder
        self.fates = fates or ["complete"]
        self.polls_to_end = polls_to_end
        self.api_key = api_key
        self.batches: dict[str, _Batch] = {}
        self.files: dict[str, bytes] = {}
        self.submitted: list[list[str]] = []
        self.polls = 0
        self.live_calls = 0
        self.uploads: list[dict[str, Any]] = []
        self.headers_seen: list[dict[str, str]] = []
        self._held = asyncio.Event()
        app = web.Application(client_max_size=64 * 1024 * 1024)
        r = app.router
        r.add_post("/v1/files", self._upload)
        r.add_post("/v1/batches", self._create_openai)
        r.add_get("/v1/batches/{id}", self._get_openai)
        r.add_get("/v1/files/{id}/content", self._file_content)
        r.add_post("/v1/batches/{id}/cancel", self._cancel_openai)
        r.add_post("/v1/chat/completions", self._live)
        r.add_post("/v1/messages/batches", self._create_anthropic)
        r.add_get("/v1/messages/batches/{id}", self._get_anthropic)
        r.add_get("/v1/messages/batches/{id}/results", self._results_anthropic)
        r.add_post("/v1/messages/batches/{id}/cancel", self._cancel_anthropic)
        self._server = TestServer(app, host="127.0.0.1", port=0)
        self.url = self.anthropic_url = ""

    async def start(self) -> BatchServer:
        await self._server.start_server()
        root = str(self._server.make_url("")).rstrip("/")
        self.url, self.anthropic_url = f"{root}/v1", root
        return self

    async def close(self) -> None:
        await self._server.close()

    def release(self) -> None:
        """Let `hold` batches end."""
        self._held.set()

    @property
    def requests_submitted(self) -> list[str]:
        return [name for batch in self.submitted for name in batch]

    # -- keys ----------------------------------------------------------------------------------

    def _auth_openai(self, request: web.Request) -> web.Response | None:
        self.headers_seen.append(dict(request.headers))
        auth = request.headers.get("authorization")
        if self.api_key is not None and auth != f"Bearer {self.api_key}":
            return _error(401, "invalid_request_error", "Incorrect API key provided", anthropic=False)
        return None

    def _auth_anthropic(self, request: web.Request) -> web.Response | None:
        self.headers_seen.append(dict(request.headers))
        key = request.headers.get("x-api-key")
        if not key or (self.api_key is not None and key != self.api_key):
            return _error(401, "authentication_error", "invalid x-api-key", anthropic=True)
        if request.headers.get("anthropic-version") != "2023-06-01":
            return _error(
                400, "invalid_request_error", "anthropic-version: header is required", anthropic=True
            )
        return None

    # -- OpenAI --------------------------------------------------------------------------------

    async def _upload(self, request: web.Request) -> web.Response:
        if (refused := self._auth_openai(request)) is not None:
            return refused
        if request.content_type != "multipart/form-data":
            return _error(400, "invalid_request_error", "expected multipart/form-data", anthropic=False)
        form = await request.post()
        upload = form.get("file")
        if form.get("purpose") != "batch" or not isinstance(upload, web.FileField):
            return _error(
                400, "invalid_request_error", "purpose=batch and a file are required", anthropic=False
            )
        data = upload.file.read()
        file_id = f"file-{len(self.files) + 1}"
        self.files[file_id] = data
        self.uploads.append(
            {"filename": upload.filename, "content_type": upload.content_type, "bytes": len(data)}
        )
        return web.json_response(
            {
                "id": file_id,
                "object": "file",
                "bytes": len(data),
                "purpose": "batch",
                "filename": upload.filename,
            }
        )

    async def _create_openai(self, request: web.Request) -> web.Response:
        if (refused := self._auth_openai(request)) is not None:
            return refused
        body = await request.json()
        if body.get("endpoint") != "/v1/chat/completions" or body.get("completion_window") != "24h":
            return _error(400, "invalid_request_error", "bad endpoint or completion_window", anthropic=False)
        data = self.files.get(body.get("input_file_id", ""))
        if data is None:
            return _error(404, "invalid_request_error", "No such File object", anthropic=False)
        batch = _Batch(id=f"batch_{len(self.batches) + 1}", protocol="openai", fate=self._fate(), requests=[])
        batch.input_file = body["input_file_id"]
        batch.state = "validating"
        seen = set()
        for number, line in enumerate(data.decode().splitlines(), start=1):
            entry = json.loads(line)
            problem = None
            if entry.get("method") != "POST" or entry.get("url") != "/v1/chat/completions":
                problem = "method must be POST and url /v1/chat/completions"
            elif entry.get("custom_id") in seen:
                problem = "duplicate custom_id"
            else:
                try:
                    _check_openai(request, entry["body"], None)
                except _Rejected as exc:
                    problem = exc.message
            if problem is not None:
                batch.problem.append({"code": "invalid_request", "message": problem, "line": number})
            seen.add(entry.get("custom_id"))
            batch.requests.append((entry["custom_id"], entry["body"]))
        if batch.fate == "fail":
            batch.problem.append(
                {"code": "invalid_file", "message": "the input file is not valid", "line": None}
            )
        self._register(batch)
        return web.json_response(self._openai_object(batch))

    async def _get_openai(self, request: web.Request) -> web.Response:
        if (refused := self._auth_openai(request)) is not None:
            return refused
        batch = self.batches.get(request.match_info["id"])
        if batch is None or batch.protocol != "openai":
            return _error(404, "invalid_request_error", "No batch found", anthropic=False)
        self._poll(batch)
        return web.json_response(self._openai_object(batch))

    async def _file_content(self, request: web.Request) -> web.Response:
        if (refused := self._auth_openai(request)) is not None:
            return refused
        data = self.files.get(request.match_info["id"])
        if data is None:
            return _error(404, "invalid_request_error", "No such File object", anthropic=False)
        return web.Response(body=data, content_type="application/octet-stream")

    async def _cancel_openai(self, request: web.Request) -> web.Response:
        if (refused := self._auth_openai(request)) is not None:
            return refused
        batch = self.batches.get(request.match_info["id"])
        if batch is None:
            return _error(404, "invalid_request_error", "No batch found", anthropic=False)
        if batch.state in ("validating", "in_progress"):
            batch.fate = "cancel"
            batch.state = "cancelling"
        return web.json_response(self._openai_object(batch))

    def _openai_object(self, batch: _Batch) -> dict[str, Any]:
        total = len(batch.requests) if batch.state != "failed" else 0
        if self._ended(batch):
            completed, failed = len(batch.output), len(batch.errors)
        else:
            completed, failed = min(batch.polls, total), 0
        return {
            "id": batch.id,
            "object": "batch",
            "endpoint": "/v1/chat/completions",
            "errors": {"object": "list", "data": batch.problem} if batch.state == "failed" else None,
            "input_file_id": batch.input_file,
            "completion_window": "24h",
            "status": batch.state,
            "output_file_id": batch.output_file,
            "error_file_id": batch.error_file,
            "created_at": 1700000000,
            "request_counts": {"total": total, "completed": completed, "failed": failed},
            "metadata": None,
        }

    async def _live(self, request: web.Request) -> web.Response:
        """A live Chat Completions call (for `--batch-live-fallback`), answered by the responder."""
        if (refused := self._auth_openai(request)) is not None:
            return refused
        body = await request.json()
        self.live_calls += 1
        return web.json_response(_chat_completion(body, self.responder(body)))

    # -- Anthropic -----------------------------------------------------------------------------

    async def _create_anthropic(self, request: web.Request) -> web.Response:
        if (refused := self._auth_anthropic(request)) is not None:
            return refused
        body = await request.json()
        fate = self._fate()
        requests = body.get("requests")
        if fate == "fail" or not isinstance(requests, list) or not requests:
            return _error(400, "invalid_request_error", "requests: invalid batch", anthropic=True)
        names = [r.get("custom_id", "") for r in requests]
        if len(set(names)) != len(names) or not all(_good_id(n) for n in names):
            return _error(
                400,
                "invalid_request_error",
                "custom_id: must be unique, 1-64 of [a-zA-Z0-9_-]",
                anthropic=True,
            )
        for r in requests:
            try:
                _check_anthropic(request, r["params"], None)
            except _Rejected as exc:
                return _error(exc.status, exc.kind, exc.message, anthropic=True)
        batch = _Batch(
            id=f"msgbatch_{len(self.batches) + 1}",
            protocol="anthropic",
            fate=fate,
            requests=[(r["custom_id"], r["params"]) for r in requests],
        )
        batch.state = "in_progress"
        self._register(batch)
        return web.json_response(self._anthropic_object(batch))

    async def _get_anthropic(self, request: web.Request) -> web.Response:
        if (refused := self._auth_anthropic(request)) is not None:
            return refused
        batch = self.batches.get(request.match_info["id"])
        if batch is None or batch.protocol != "anthropic":
            return _error(404, "not_found_error", "batch not found", anthropic=True)
        self._poll(batch)
        return web.json_response(self._anthropic_object(batch))

    async def _results_anthropic(self, request: web.Request) -> web.Response:
        if (refused := self._auth_anthropic(request)) is not None:
            return refused
        batch = self.batches.get(request.match_info["id"])
        if batch is None or batch.state != "ended":
            return _error(404, "not_found_error", "no results", anthropic=True)
        return web.Response(body=_jsonl(batch.output), content_type="application/binary")

    async def _cancel_anthropic(self, request: web.Request) -> web.Response:
        if (refused := self._auth_anthropic(request)) is not None:
            return refused
        batch = self.batches.get(request.match_info["id"])
        if batch is None:
            return _error(404, "not_found_error", "batch not found", anthropic=True)
        if batch.state == "in_progress":
            batch.fate, batch.state = "cancel", "canceling"
        return web.json_response(self._anthropic_object(batch))

    def _anthropic_object(self, batch: _Batch) -> dict[str, Any]:
        counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        if batch.state == "ended":
            for line in batch.output:
                counts[line["result"]["type"]] += 1
        else:
            counts["processing"] = len(batch.requests)
        ended = batch.state == "ended"
        return {
            "id": batch.id,
            "type": "message_batch",
            "processing_status": batch.state,
            "request_counts": counts,
            "ended_at": "2024-08-20T18:37:24.100435Z" if ended else None,
            "created_at": "2024-08-20T18:37:24.100435Z",
            "expires_at": "2024-08-21T18:37:24.100435Z",
            "cancel_initiated_at": None,
            "results_url": f"{self.anthropic_url}/v1/messages/batches/{batch.id}/results" if ended else None,
        }

    # -- running batches -------------------------------------------------------------------------

    def _fate(self) -> str:
        index = min(len(self.submitted), len(self.fates) - 1)
        return self.fates[index]

    def _register(self, batch: _Batch) -> None:
        self.batches[batch.id] = batch
        self.submitted.append([name for name, _ in batch.requests])

    def _ended(self, batch: _Batch) -> bool:
        return batch.state in ("completed", "failed", "expired", "cancelled", "ended")

    def _poll(self, batch: _Batch) -> None:
        self.polls += 1
        if self._ended(batch):
            return
        batch.polls += 1
        if batch.protocol == "openai" and batch.problem:
            batch.state = "failed"
            return
        if batch.fate == "hold" and not self._held.is_set():
            batch.state = "in_progress"
            return
        if batch.fate != "cancel" and batch.polls < self.polls_to_end:
            batch.state = "in_progress"
            return
        self._finish(batch)

    def _finish(self, batch: _Batch) -> None:
        run = len(batch.requests)
        if batch.fate == "expire":
            run = len(batch.requests) // 2
        elif batch.fate == "cancel":
            run = 0
        anthropic = batch.protocol == "anthropic"
        for index, (name, body) in enumerate(batch.requests):
            if index >= run:
                if anthropic:
                    kind = "canceled" if batch.fate == "cancel" else "expired"
                    batch.output.append({"custom_id": name, "result": {"type": kind}})
                else:
                    code = "batch_cancelled" if batch.fate == "cancel" else "batch_expired"
                    batch.errors.append(_openai_error_line(name, code, "This request could not be executed"))
                continue
            batch.output.append(self._run(name, body, anthropic))
        if anthropic:
            batch.state = "ended"
            return
        batch.state = {"expire": "expired", "cancel": "cancelled"}.get(batch.fate, "completed")
        # The output file holds the requests that succeeded; the error file every other one.
        failed = [line for line in batch.output if (line["response"] or {}).get("status_code") != 200]
        batch.output = [line for line in batch.output if line not in failed]
        batch.errors = failed + batch.errors
        if batch.output:
            batch.output_file = f"file-{len(self.files) + 1}"
            self.files[batch.output_file] = _jsonl(batch.output)
        if batch.errors:
            batch.error_file = f"file-{len(self.files) + 1}"
            self.files[batch.error_file] = _jsonl(batch.errors)

    def _run(self, name: str, body: dict[str, Any], anthropic: bool) -> dict[str, Any]:
        reply = self.responder(body)
        if reply == ERRORED:
            if anthropic:
                error = {"type": "error", "error": {"type": "api_error", "message": "Internal server error"}}
                return {"custom_id": name, "result": {"type": "errored", "error": error}}
            return _openai_error_line(name, "server_error", "The server had an error processing the request")
        if isinstance(reply, tuple):
            status, error = reply
            if anthropic:
                return {
                    "custom_id": name,
                    "result": {"type": "errored", "error": {"type": "error", "error": error}},
                }
            response = {"status_code": status, "request_id": f"req_{name}", "body": {"error": error}}
            return {"id": f"batch_req_{name}", "custom_id": name, "response": response, "error": None}
        if anthropic:
            return {
                "custom_id": name,
                "result": {"type": "succeeded", "message": _anthropic_message(body, reply)},
            }
        response = {"status_code": 200, "request_id": f"req_{name}", "body": _chat_completion(body, reply)}
        return {"id": f"batch_req_{name}", "custom_id": name, "response": response, "error": None}


def _openai_error_line(name: str, code: str, message: str) -> dict[str, Any]:
    return {
        "id": f"batch_req_{name}",
        "custom_id": name,
        "response": None,
        "error": {"code": code, "message": message},
    }


def _good_id(name: Any) -> bool:
    return (
        isinstance(name, str)
        and 1 <= len(name) <= 64
        and all(c.isascii() and (c.isalnum() or c in "_-") for c in name)
    )


def _jsonl(lines: list[dict[str, Any]]) -> bytes:
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


def _error(status: int, kind: str, message: str, *, anthropic: bool) -> web.Response:
    body: dict[str, Any] = {"error": {"type": kind, "message": message}}
    if anthropic:
        body["type"] = "error"
    return web.json_response(body, status=status)


async def start_batch_server(responder: Responder, **options: Any) -> BatchServer:
    return await BatchServer(responder, **options).start()
