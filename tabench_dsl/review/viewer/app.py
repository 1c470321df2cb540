"""The viewer's web app: one static page and a small JSON API over an `Index`, on 127.0.0.1 only.

    GET  /                                   the page (HTML, CSS and vanilla JS; no data of the run)
    GET  /api/meta                           filter choices, warnings, who is reviewing
    GET  /api/totals                         totals per system and question, with SVG charts
    GET  /api/records?verdict=..&offset=..&limit=50     one page of record summaries
    GET  /api/systems?q=..&offset=..&limit=50           one page of the totals table, searched
    GET  /api/record/<system>/<question>     one record in full, with its prompts
    POST /api/decision                       {system, question, verdict, note, prompt_sha256}
    GET  /api/audit?n=..&seed=..             answers to audit blind (`audit_api`)
    POST /api/audit                          {token, verdict, note}: one audit, and the reveal

The page builds every piece of record text as a text node, so answers that contain HTML stay
text. Requests must name a local host (no DNS rebinding), and every request that changes state (a
decision or an audit posted, an audit drawn: it hands out tokens) must come from the page's own
origin (`Origin`, and `Sec-Fetch-Site` where the browser sends it), posted as JSON, so another web
site cannot make decisions, or draw audits, through the browser.

A decision body is decoded straight into `DecisionRequest`: anything else (not JSON, not UTF-8, a
field of the wrong type, a field it does not know, JSON nested however deep, more than
`MAX_BODY` bytes) is answered 400 with a one-line JSON error, and nothing reaches the log.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Literal

import msgspec
from aiohttp import web

from ...core.errors import UsageError
from .audit_api import AuditDesk, audit_decoder
from .page import viewer_page
from .queries import Filters, Index

INDEX_KEY = web.AppKey("index", Index)
DESK_KEY = web.AppKey("audit_desk", AuditDesk)
#: The largest request body the viewer reads (a decision with a long note is well under 4 KiB).
MAX_BODY = 64 * 1024
_LOCAL_HOSTS = ("127.0.0.1", "localhost")
_encoder = msgspec.json.Encoder()


class DecisionRequest(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """What the page posts to decide one record: typed, so no other shape is ever decoded.

    Unknown fields are refused rather than skipped: skipping a value means walking it, and a value
    nested thousands deep would be walked by recursion.
    """

    system: str
    question: str
    verdict: Literal["pass", "fail"]
    note: str | None = None
    prompt_sha256: str | None = None


_decision_decoder = msgspec.json.Decoder(DecisionRequest)


def _json(data: object, status: int = 200) -> web.Response:
    return web.Response(
        body=_encoder.encode(data),
        status=status,
        content_type="application/json",
        headers={"Cache-Control": "no-store"},
    )


def _error(status: int, message: str) -> web.Response:
    return _json({"error": message}, status=status)


#: GET endpoints that change the viewer's state (an audit draw hands out tokens): checked like a POST.
STATE_CHANGING_GETS = frozenset({"/api/audit"})
#: `Sec-Fetch-Site` values of a request from the page itself (or typed in the address bar).
OWN_SITE = ("same-origin", "none")


def _host_name(value: str) -> str:
    if value.startswith("["):
        return value[: value.find("]") + 1]
    return value.rsplit(":", 1)[0] if ":" in value else value


@web.middleware
async def _guard(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]):
    if _host_name(request.host) not in _LOCAL_HOSTS:
        return _error(403, "the viewer answers only requests for 127.0.0.1 or localhost")
    if request.method == "POST" or request.path in STATE_CHANGING_GETS:
        origin = request.headers.get("Origin", f"{request.scheme}://{request.host}")
        site = request.headers.get("Sec-Fetch-Site", "same-origin")
        if origin != f"{request.scheme}://{request.host}" or site not in OWN_SITE:
            return _error(403, "decisions and audits are accepted only from the viewer's own page")
    if request.method == "POST" and request.content_type != "application/json":
        return _error(415, "send the decision as application/json")
    response = await handler(request)
    response.headers.setdefault("X-Content-Type-Options", "nosniff")
    response.headers.setdefault("Referrer-Policy", "no-referrer")
    return response


async def page(request: web.Request) -> web.Response:
    """The single page; it loads everything else through the API."""
    served = viewer_page()
    return web.Response(
        text=served.html,
        content_type="text/html",
        headers={"Content-Security-Policy": served.csp, "Cache-Control": "no-store"},
    )


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


async def systems(request: web.Request) -> web.Response:
    """A page of the totals table: `?q=` searches system names, `offset` and `limit` as for records."""
    try:
        offset = int(request.query.get("offset", "0"))
        limit = int(request.query.get("limit", "50"))
        return _json(request.app[INDEX_KEY].systems_page(request.query.get("q", ""), offset, limit))
    except (ValueError, UsageError) as exc:
        return _error(400, f"bad paging: {exc}")


async def record(request: web.Request) -> web.Response:
    system, question = request.match_info["system"], request.match_info["question"]
    try:
        return _json(request.app[INDEX_KEY].detail(system, question))
    except KeyError:
        return _error(404, f"no record for system {system!r}, question {question!r}")
    except UsageError as exc:  # its line in the results file changed under the viewer
        return _error(409, str(exc))


async def decision(request: web.Request) -> web.Response:
    index = request.app[INDEX_KEY]
    try:
        body = await request.read()
    except web.HTTPRequestEntityTooLarge:
        return _error(400, f"a decision is at most {MAX_BODY // 1024} KiB")
    try:
        wanted = _decision_decoder.decode(body)
    except (msgspec.DecodeError, RecursionError) as exc:  # ValidationError is a DecodeError
        return _error(
            400,
            f"a decision is a JSON object with system, question and verdict (pass or fail): "
            f"{_short(str(exc))}",
        )
    system, question, verdict = wanted.system, wanted.question, wanted.verdict
    try:
        updated = index.decide(
            system, question, verdict, note=wanted.note or "", prompt_sha256=wanted.prompt_sha256
        )
    except KeyError:
        return _error(404, f"no record for system {system!r}, question {question!r}")
    except UsageError as exc:
        return _error(409, str(exc))
    return _json({"record": index.summary(updated), "decision": msgspec.to_builtins(updated.decision)})


async def audit_draw(request: web.Request) -> web.Response:
    """Answers to audit, blind: `?n=` how many (default 10), `?seed=` the draw's seed (default 0)."""
    try:
        n = int(request.query.get("n", "10"))
        seed = int(request.query.get("seed", "0"))
        return _json(request.app[DESK_KEY].draw(n, seed))
    except ValueError as exc:
        return _error(400, f"bad audit request: {exc}")


async def audit_decide(request: web.Request) -> web.Response:
    """One person's verdict on an answer drawn for audit; the reply reveals the judge's."""
    try:
        wanted = audit_decoder.decode(await request.read())
    except web.HTTPRequestEntityTooLarge:
        return _error(400, f"an audit is at most {MAX_BODY // 1024} KiB")
    except (msgspec.DecodeError, RecursionError) as exc:  # ValidationError is a DecodeError
        return _error(
            400, f"an audit is a JSON object with token and verdict (pass or fail): {_short(str(exc))}"
        )
    try:
        return _json(request.app[DESK_KEY].decide(wanted))
    except KeyError:
        return _error(404, "no answer was drawn for audit under that token")
    except UsageError as exc:
        return _error(409, str(exc))


def _short(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def make_app(index: Index) -> web.Application:
    """The viewer as an aiohttp application over `index` (tests drive it with aiohttp's test client)."""
    viewer_page()  # rendered now, so a broken template fails here and not on the first request
    app = web.Application(middlewares=[_guard], client_max_size=MAX_BODY)
    app[INDEX_KEY] = index
    app[DESK_KEY] = AuditDesk(index)
    app.router.add_get("/", page)
    app.router.add_get("/api/meta", meta)
    app.router.add_get("/api/totals", totals)
    app.router.add_get("/api/records", records)
    app.router.add_get("/api/systems", systems)
    # Question ids never contain '/', system names might: the last segment is the question.
    app.router.add_get("/api/record/{system:.+}/{question:[^/]+}", record)
    app.router.add_post("/api/decision", decision)
    app.router.add_get("/api/audit", audit_draw)
    app.router.add_post("/api/audit", audit_decide)
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
