"""A Chat Completions server at any path, for the gateway recipes (docs/judges.md): a real aiohttp
application on 127.0.0.1, port 0, that serves `POST {path}` the way the judge server checks a Chat
Completions request (tests/support/judge_server.py), with a bearer key and any headers it requires.

`replies` are served in order (the last repeats): a reply text, or `(status, body)` for an error in
the provider's own shape (a dict, or a list as Gemini sends). `requests` keeps every body received,
with `_headers` (names lower-cased).
"""

from __future__ import annotations

from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestServer

from support.judge_server import _chat_completion, _check_openai, _Rejected

Reply = str | tuple[int, Any]


class CompatServer:
    def __init__(
        self, path: str, replies: list[Reply], *, key: str, allow: frozenset[str] = frozenset()
    ) -> None:
        self.path = path
        self.replies = replies
        self.key = key
        #: Body fields this provider takes beyond the judge server's list of OpenAI's.
        self.allow = allow
        self.requests: list[dict[str, Any]] = []
        app = web.Application()
        app.router.add_post(path, self._chat)
        self._server = TestServer(app, host="127.0.0.1", port=0)

    async def start(self) -> CompatServer:
        await self._server.start_server()
        self.root = f"http://127.0.0.1:{self._server.port}"
        return self

    async def close(self) -> None:
        await self._server.close()

    async def _chat(self, request: web.Request) -> web.Response:
        body = await request.json()
        body["_headers"] = {k.lower(): v for k, v in request.headers.items()}
        self.requests.append(body)
        reply = self.replies[min(len(self.requests) - 1, len(self.replies) - 1)]
        if isinstance(reply, tuple):
            status, error = reply
            return web.json_response(error, status=status)
        checked = {k: v for k, v in body.items() if k not in self.allow}
        try:
            _check_openai(request, checked, self.key)
        except _Rejected as exc:
            return web.json_response({"error": {"message": exc.message, "type": exc.kind}}, status=exc.status)
        return web.json_response(_chat_completion(body, reply))


async def start_compat_server(path: str, replies: list[Reply], **options: Any) -> CompatServer:
    return await CompatServer(path, replies, **options).start()
