"""A stand-in OpenAI batch service for the batch bench: the Files and Batches endpoints on 127.0.0.1.

    POST /v1/files                 multipart (purpose=batch, file=<JSONL>)
    POST /v1/batches               -> status validating; in_progress once polled; completed once
                                      `--delay` seconds have passed since it was created
    GET  /v1/batches/{id}          the batch object (status, request_counts, output_file_id)
    GET  /v1/files/{id}/content    the output JSONL
    GET  /stats                    {"submitted": N, "unique": N, "batches": N}: for the bench

Each request is answered from its answer's number `answer N` in the user message: N % 10 == 0 is
malformed on its first ask (then a verdict), N % 20 == 5 a contradiction on its first ask (then a
consistent fail), every other one a verdict at once. Usage is reported as the words of the prompt
and of the reply, so the bench can price what was asked.

    python bench/mock_batch_service.py [--port 0] [--delay 2]

prints `port N` once it listens, then serves until SIGTERM or SIGINT.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import signal
import time

from aiohttp import web

PASS = json.dumps({"verdict": "pass", "reason": "names all four stages", "facets": {"missing_minor": False}})
FAIL = json.dumps({"verdict": "fail", "reason": "omits the Compact stage", "facets": {"missing_minor": True}})
CONTRADICTION = json.dumps({"verdict": "fail", "reason": "The answer matches the gold.", "facets": {}})
MALFORMED = "I think it is probably fine."
_NUMBER = re.compile(r"answer (\d+)")


class Service:
    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict] = {}
        self.seen: set[str] = set()
        self.submitted = 0
        self.asked: dict[int, int] = {}

    def reply(self, body: dict) -> str:
        user = body["messages"][-1]["content"]
        found = _NUMBER.search(user)
        number = int(found[1]) if found else 1
        ask = self.asked.get(number, 0)
        self.asked[number] = ask + 1
        if ask == 0 and number % 10 == 0:
            return MALFORMED
        if ask == 0 and number % 20 == 5:
            return CONTRADICTION
        return FAIL if number % 20 == 5 else PASS

    async def upload(self, request: web.Request) -> web.Response:
        form = await request.post()
        upload = form["file"]
        assert form["purpose"] == "batch" and isinstance(upload, web.FileField)
        file_id = f"file-{len(self.files) + 1}"
        self.files[file_id] = upload.file.read()
        return web.json_response({"id": file_id, "object": "file", "purpose": "batch"})

    async def create(self, request: web.Request) -> web.Response:
        body = await request.json()
        lines = self.files[body["input_file_id"]].splitlines()
        batch_id = f"batch_{len(self.batches) + 1}"
        names = []
        for line in lines:
            entry = json.loads(line)
            names.append(entry["custom_id"])
        self.submitted += len(names)
        self.seen.update(names)
        self.batches[batch_id] = {
            "id": batch_id,
            "file": body["input_file_id"],
            "created": time.monotonic(),
            "status": "validating",
            "total": len(names),
            "output": None,
        }
        return web.json_response(self._object(self.batches[batch_id]))

    async def get(self, request: web.Request) -> web.Response:
        batch = self.batches[request.match_info["id"]]
        if batch["status"] != "completed":
            if time.monotonic() - batch["created"] >= self.delay:
                self._finish(batch)
            else:
                batch["status"] = "in_progress"
        return web.json_response(self._object(batch))

    def _finish(self, batch: dict) -> None:
        out = []
        for line in self.files[batch["file"]].splitlines():
            entry = json.loads(line)
            body = entry["body"]
            content = self.reply(body)
            prompt = sum(len(m["content"].split()) for m in body["messages"])
            completion = {
                "id": "chatcmpl-mock",
                "object": "chat.completion",
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {
                    "prompt_tokens": prompt,
                    "completion_tokens": len(content.split()),
                    "total_tokens": prompt + len(content.split()),
                },
            }
            out.append(
                json.dumps(
                    {
                        "id": "r",
                        "custom_id": entry["custom_id"],
                        "response": {"status_code": 200, "body": completion},
                        "error": None,
                    }
                )
            )
        file_id = f"file-{len(self.files) + 1}"
        self.files[file_id] = ("\n".join(out) + "\n").encode()
        batch["output"], batch["status"] = file_id, "completed"

    def _object(self, batch: dict) -> dict:
        done = batch["total"] if batch["status"] == "completed" else 0
        return {
            "id": batch["id"],
            "object": "batch",
            "endpoint": "/v1/chat/completions",
            "input_file_id": batch["file"],
            "completion_window": "24h",
            "status": batch["status"],
            "output_file_id": batch["output"],
            "error_file_id": None,
            "request_counts": {"total": batch["total"], "completed": done, "failed": 0},
        }

    async def content(self, request: web.Request) -> web.Response:
        return web.Response(body=self.files[request.match_info["id"]])

    async def stats(self, request: web.Request) -> web.Response:
        return web.json_response(
            {"submitted": self.submitted, "unique": len(self.seen), "batches": len(self.batches)}
        )


async def serve(port: int, delay: float) -> None:
    service = Service(delay)
    app = web.Application(client_max_size=512 * 1024 * 1024)
    app.router.add_post("/v1/files", service.upload)
    app.router.add_post("/v1/batches", service.create)
    app.router.add_get("/v1/batches/{id}", service.get)
    app.router.add_get("/v1/files/{id}/content", service.content)
    app.router.add_get("/stats", service.stats)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", port)
    await site.start()
    print(f"port {site._server.sockets[0].getsockname()[1]}", flush=True)  # type: ignore[union-attr]
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await runner.cleanup()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--delay", type=float, default=2.0, help="seconds before a batch completes")
    args = parser.parse_args()
    asyncio.run(serve(args.port, args.delay))
