"""The viewer's web app: one static page and a small JSON API over an `Index`, on 127.0.0.1 only.

    GET  /                                   the page (HTML, CSS and vanilla JS; no data in it)
    GET  /api/meta                           filter choices, warnings, who is reviewing
    GET  /api/totals                         totals per system and question, with SVG charts
    GET  /api/records?verdict=..&offset=..&limit=50     one page of record summaries
    GET  /api/record/<system>/<question>     one record in full, with its prompts
    POST /api/decision                       {system, question, verdict, note, prompt_sha256}

The page builds every piece of record text with `textContent`, so answers that contain HTML stay
text. Requests must name a local host (no DNS rebinding), and a decision must be posted as JSON
from the page's own origin, so another web site cannot make decisions through the browser.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import msgspec
from aiohttp import web

from ..errors import UsageError
from .page import PAGE_CSP, PAGE_HTML
from .queries import Filters, Index

INDEX_KEY = web.AppKey("index", Index)
_LOCAL_HOSTS = ("127.0.0.1", "localhost")
_encoder = msgspec.json.Encoder()


def _json(data: object, status: int = 200) -> web.Response:
    return web.Response(body=_encoder.encode(data), status=status, content_type="application/json",
                        headers={"Cache-Control": "no-store"})


def _error(status: int, message: str) -> web.Response:
    return _json({"error": message}, status=status)


def _host_name(value: str) -> str:
    if value.startswith("["):
        return value[: value.find("]") + 1]
    return value.rsplit(":", 1)[0] if ":" in value else value


@web.middleware
async def _guard(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]):
    if _host_name(request.host) not in _LOCAL_HOSTS:
        return _error(403, "the viewer answers only requests for 127.0.0.1 or localhost")
    if request.method == "POST":
        origin = request.headers.get("Origin")
        if origin is not None and origin != f"{request.scheme}://{request.host}":
            return _error(403, "decisions are accepted only from the viewer's own page")
        if request.content_type != "application/json":
            return _error(415, "send the decision as application/json")
    response = await handler(request)
    response.headers.setdefault("X-Content-Type-Options", "nosniff")
    response.headers.setdefault("Referrer-Policy", "no-referrer")
    return response


async def page(request: web.Request) -> web.Response:
    """The single page; it loads everything else through the API."""
    return web.Response(text=PAGE_HTML, content_type="text/html",
                        headers={"Content-Security-Policy": PAGE_CSP, "Cache-Control": "no-store"})


async def meta(request: web.Request) -> web.Response:
    return _json(request.app[INDEX_KEY].meta())


async def totals(request: web.Request) -> web.Response:
    return _json(request.app[INDEX_KEY].totals_payload())


async def records(request: web.Request) -> web.Response:
    try:
        offset = int(request.query.get("offset", "0"))
        limit = int(request.query.get("limit", "50"))
        return _json(request.app[INDEX_KEY].page(Filters.from_query(request.query), offset, limit))
    except (ValueError, UsageError) as exc:
        return _error(400, f"bad paging: {exc}")


async def record(request: web.Request) -> web.Response:
    system, question = request.match_info["system"], request.match_info["question"]
    try:
        return _json(request.app[INDEX_KEY].detail(system, question))
    except KeyError:
        return _error(404, f"no record for system {system!r}, question {question!r}")


async def decision(request: web.Request) -> web.Response:
    index = request.app[INDEX_KEY]
    try:
        body = await request.json()
        if not isinstance(body, dict):
            raise ValueError("not an object")
        system, question = str(body["system"]), str(body["question"])
        verdict, note = str(body["verdict"]), str(body.get("note") or "")
        sha = body.get("prompt_sha256")
    except (ValueError, KeyError) as exc:
        return _error(400, f"a decision needs system, question and verdict: {exc}")
    if verdict not in ("pass", "fail"):
        return _error(400, "verdict must be pass or fail")
    try:
        updated = index.decide(system, question, verdict, note=note,
                               prompt_sha256=None if sha is None else str(sha))
    except KeyError:
        return _error(404, f"no record for system {system!r}, question {question!r}")
    except UsageError as exc:
        return _error(409, str(exc))
    return _json({"record": index.summary(updated), "decision": msgspec.to_builtins(updated.decision)})


def make_app(index: Index) -> web.Application:
    """The viewer as an aiohttp application over `index` (tests drive it with aiohttp's test client)."""
    app = web.Application(middlewares=[_guard], client_max_size=64 * 1024)
    app[INDEX_KEY] = index
    app.router.add_get("/", page)
    app.router.add_get("/api/meta", meta)
    app.router.add_get("/api/totals", totals)
    app.router.add_get("/api/records", records)
    # Question ids never contain '/', system names might: the last segment is the question.
    app.router.add_get("/api/record/{system:.+}/{question:[^/]+}", record)
    app.router.add_post("/api/decision", decision)
    return app


async def serve(index: Index, *, port: int = 0, on_ready: Callable[[str], None] | None = None) -> None:
    """Serve the viewer on 127.0.0.1:`port` (0 picks a free one) until cancelled.

    `on_ready` receives the URL once the socket is listening.
    """
    runner = web.AppRunner(make_app(index), access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host="127.0.0.1", port=port)
        await site.start()
        bound = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        if on_ready is not None:
            on_ready(f"http://127.0.0.1:{bound}/")
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()
