"""Files and servers written by someone else, round 2: a batch ledger, Inspect logs, redirects,
outputs over links, CSV cells, reply caches and a battery's own scorer.

Every server is a real aiohttp application on 127.0.0.1 (port 0); the CLI runs in-process through
`main(argv)`, in a worker thread while a server serves from the test's loop. Where memory is the
point, the command runs in a subprocess under RLIMIT_AS.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from tabench_dsl.cli import main
from tabench_dsl.grading.batch import Ended, Submitted, ledger_path
from tabench_dsl.grading.batch.ledger import Ledger

OPENAI_CANARY = "sk-canary-hostile-0a1b2c3d4e5f60718293"
ANTHROPIC_CANARY = "sk-ant-api03-canary-hostile-9f8e7d6c5b4a"


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for name in (
        "TABENCH_CACHE",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    return tmp_path


class Recorder:
    """A server that answers every request with `reply` (status, body, headers) and keeps what it got."""

    def __init__(self, status: int = 200, body: object = None, headers: dict[str, str] | None = None) -> None:
        self.status, self.body, self.headers = status, body, headers or {}
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self.server: TestServer | None = None

    async def _handle(self, request: web.Request) -> web.Response:
        await request.read()
        self.requests.append((request.method, request.path, dict(request.headers)))
        body = self.body if self.body is not None else {"id": "batch_x", "status": "in_progress"}
        return web.json_response(body, status=self.status, headers=self.headers)

    async def start(self) -> Recorder:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self.server = TestServer(app, host="127.0.0.1", port=0)
        await self.server.start_server()
        return self

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.port}"

    def keys_seen(self) -> list[str]:
        return [
            v
            for _, _, h in self.requests
            for k, v in h.items()
            if k.lower() in ("authorization", "x-api-key")
        ]


@pytest.fixture
async def recorder() -> AsyncIterator:
    started: list[Recorder] = []

    async def start(*args, **kwargs) -> Recorder:
        server = await Recorder(*args, **kwargs).start()
        started.append(server)
        return server

    yield start
    for server in started:
        assert server.server is not None
        await server.server.close()


async def run(argv: list[str]) -> int:
    return await asyncio.to_thread(main, argv)


def write_ledger(results: Path, *, service: str, endpoint: str, batch_id: str = "batch_x") -> Path:
    entry = Submitted(
        id=batch_id, service=service, endpoint=endpoint, model="m", round=1, time="t", requests=[]
    )
    path = ledger_path(results)
    with Ledger(path) as ledger:
        ledger.append(entry)
    return path


# 1. The ledger never chooses where a key goes ------------------------------------------------


@pytest.mark.parametrize("service", ["anthropic", "openai"])
@pytest.mark.parametrize("cancel", [False, True])
async def test_a_ledger_naming_another_host_is_refused_and_sent_nothing(
    work: Path, recorder, monkeypatch, capsys, service: str, cancel: bool
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_CANARY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_CANARY)
    thief = await recorder()
    endpoint = thief.url + ("/v1" if service == "openai" else "")
    write_ledger(work / "results.jsonl", service=service, endpoint=endpoint)
    argv = ["batches", "results.jsonl", *(["--cancel"] if cancel else [])]
    assert await run(argv) == 2
    err = capsys.readouterr().err
    assert thief.requests == []
    own = "https://api.anthropic.com" if service == "anthropic" else "https://api.openai.com/v1"
    assert endpoint in err and own in err and "nothing was sent" in err
    assert OPENAI_CANARY not in err and ANTHROPIC_CANARY not in err


async def test_the_batches_command_asks_the_endpoint_the_user_names(
    work: Path, recorder, monkeypatch, capsys
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_CANARY)
    mine = await recorder()
    write_ledger(work / "results.jsonl", service="openai", endpoint=mine.url + "/v1")
    assert await run(["batches", "results.jsonl", "--judge", mine.url]) == 0
    assert [p for _, p, _ in mine.requests] == ["/v1/batches/batch_x"]
    assert mine.keys_seen() == [f"Bearer {OPENAI_CANARY}"]
    # The environment names an endpoint the same way.
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_CANARY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", mine.url)
    mine.body = {"id": "batch_a", "processing_status": "in_progress"}
    write_ledger(work / "other.jsonl", service="anthropic", endpoint=mine.url, batch_id="batch_a")
    assert await run(["batches", "other.jsonl"]) == 0
    assert mine.keys_seen()[-1] == ANTHROPIC_CANARY


async def test_a_ledger_service_is_not_printed_raw(work: Path, capsys) -> None:
    path = write_ledger(work / "results.jsonl", service="\x1b]0;pwned\x07", endpoint="https://h/v1")
    with Ledger(path) as ledger:
        ledger.append(Ended(id="batch_x", state="ended\x1b[2J", time="t"))
    assert await run(["batches", "results.jsonl"]) == 0  # an ended batch is not asked about
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\\x1b]0;pwned" in out and "\\x1b[2J" in out
