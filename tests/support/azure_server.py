"""A scripted Azure OpenAI resource for tests: a real aiohttp application on 127.0.0.1, port 0.

It answers as Azure's data plane is documented (and as the openai package's `AzureOpenAI` client
addresses it), so a wrong path, query or header fails a test:

    POST /openai/deployments/{deployment}/chat/completions?api-version=V   the classic path
    POST /openai/v1/chat/completions                                       the v1 path (no api-version)
    POST /openai/files?api-version=V            multipart purpose=batch, file=<JSONL>   (v1: /openai/v1/files)
    POST /openai/batches?api-version=V          {input_file_id, endpoint: /chat/completions, ...}
    GET  /openai/batches/{id}?api-version=V     completed at the first poll
    GET  /openai/files/{id}/content?api-version=V

Every call needs the `api-key` header (Azure's key header; a bearer token is refused here, as no
Entra ID token is in play), and the classic paths need `api-version`. Errors come in Azure's shape
`{"error": {"code": ..., "message": ...}}`; an unknown deployment is 404 `DeploymentNotFound`.
Replies are the `replies` list in order (the last repeats). `calls` records (method, path, query,
headers, body) of every call.
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestServer

from support.judge_server import _chat_completion


class AzureServer:
    def __init__(self, replies: list[str], *, key: str, deployments: tuple[str, ...] = ("judge-d",)) -> None:
        self.replies = replies
        self.key = key
        self.deployments = deployments
        self.calls: list[dict[str, Any]] = []
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self._served = 0
        app = web.Application()
        for root in ("/openai", "/openai/v1"):
            app.router.add_post(root + "/files", self._upload)
            app.router.add_post(root + "/batches", self._create)
            app.router.add_get(root + "/batches/{id}", self._get)
            app.router.add_get(root + "/files/{id}/content", self._content)
        app.router.add_post("/openai/deployments/{deployment}/chat/completions", self._chat)
        app.router.add_post("/openai/v1/chat/completions", self._chat)
        self._server = TestServer(app, host="127.0.0.1", port=0)

    async def start(self) -> AzureServer:
        await self._server.start_server()
        self.endpoint = f"http://127.0.0.1:{self._server.port}"
        return self

    async def close(self) -> None:
        await self._server.close()

    def _refused(self, request: web.Request, body: Any = None) -> web.Response | None:
        v1 = request.path.startswith("/openai/v1/")
        self.calls.append(
            {
                "method": request.method,
                "path": request.path,
                "query": dict(request.query),
                "headers": dict(request.headers),
                "body": body,
            }
        )
        if request.headers.get("api-key") != self.key:
            message = "Access denied due to invalid subscription key or wrong API endpoint."
            return _error(401, "401", message)
        if "authorization" in request.headers:
            return _error(400, "InvalidAuthenticationHeader", "use api-key, not a bearer token, here")
        if not v1 and not request.query.get("api-version"):
            return _error(404, "404", "Resource not found")
        return None

    def _next(self) -> str:
        reply = self.replies[min(self._served, len(self.replies) - 1)]
        self._served += 1
        return reply

    async def _chat(self, request: web.Request) -> web.Response:
        body = await request.json()
        if (refused := self._refused(request, body)) is not None:
            return refused
        deployment = request.match_info.get("deployment") or body.get("model")
        if deployment not in self.deployments:
            message = "The API deployment for this resource does not exist."
            return _error(404, "DeploymentNotFound", message)
        return web.json_response(_chat_completion(body, self._next()))

    async def _upload(self, request: web.Request) -> web.Response:
        if (refused := self._refused(request)) is not None:
            return refused
        form = await request.post()
        upload = form.get("file")
        if form.get("purpose") != "batch" or not isinstance(upload, web.FileField):
            return _error(400, "invalidPayload", "purpose=batch and a file are required")
        file_id = f"file-{len(self.files) + 1}"
        self.files[file_id] = upload.file.read()
        return web.json_response({"id": file_id, "object": "file", "purpose": "batch", "status": "processed"})

    async def _create(self, request: web.Request) -> web.Response:
        body = await request.json()
        if (refused := self._refused(request, body)) is not None:
            return refused
        if body.get("endpoint") != "/chat/completions" or body.get("completion_window") != "24h":
            return _error(400, "invalidPayload", "endpoint must be /chat/completions, completion_window 24h")
        data = self.files.get(body.get("input_file_id", ""))
        if data is None:
            return _error(404, "fileNotFound", "The input file does not exist")
        lines = []
        for raw in data.decode().splitlines():
            entry = json.loads(raw)
            if entry.get("url") != "/chat/completions" or entry["body"].get("model") not in self.deployments:
                return _error(
                    400, "invalidPayload", "every line needs url /chat/completions and a deployment"
                )
            reply = {
                "status_code": 200,
                "request_id": "r",
                "body": _chat_completion(entry["body"], self._next()),
            }
            lines.append({"custom_id": entry["custom_id"], "response": reply, "error": None})
        out = f"file-{len(self.files) + 1}"
        self.files[out] = "".join(json.dumps(line) + "\n" for line in lines).encode()
        batch = {
            "id": f"batch_{len(self.batches) + 1}",
            "object": "batch",
            "endpoint": "/chat/completions",
            "input_file_id": body["input_file_id"],
            "completion_window": "24h",
            "status": "validating",
            "output_file_id": None,
            "error_file_id": None,
            "errors": None,
            "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
            "_output": out,
        }
        self.batches[batch["id"]] = batch
        return web.json_response({k: v for k, v in batch.items() if not k.startswith("_")})

    async def _get(self, request: web.Request) -> web.Response:
        if (refused := self._refused(request)) is not None:
            return refused
        batch = self.batches.get(request.match_info["id"])
        if batch is None:
            return _error(404, "batchNotFound", "The batch does not exist")
        total = batch["request_counts"]["total"]
        batch.update(status="completed", output_file_id=batch["_output"])
        batch["request_counts"] = {"total": total, "completed": total, "failed": 0}
        return web.json_response({k: v for k, v in batch.items() if not k.startswith("_")})

    async def _content(self, request: web.Request) -> web.Response:
        if (refused := self._refused(request)) is not None:
            return refused
        data = self.files.get(request.match_info["id"])
        if data is None:
            return _error(404, "fileNotFound", "The file does not exist")
        return web.Response(body=data, content_type="application/octet-stream")


def _error(status: int, code: str, message: str) -> web.Response:
    return web.json_response({"error": {"code": code, "message": message}}, status=status)


async def start_azure_server(replies: list[str], **options: Any) -> AzureServer:
    return await AzureServer(replies, **options).start()
