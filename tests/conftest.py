"""Shared fixtures: the scripted judge server and an aiohttp client session."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from support.judge_server import JudgeServer, Responder, start_judge_server

StartServer = Callable[..., Awaitable[JudgeServer]]


@pytest.fixture(autouse=True)
def private_cache_folder(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test gets a cache folder of its own (`XDG_CACHE_HOME`, inherited by the processes it
    starts): the default reply cache lives there, so no test reads or writes the real
    `~/.cache/tabench` nor another test's replies."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))


@pytest.fixture(autouse=True)
def no_terminal_width(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test sees a COLUMNS it did not set: output goes to a pipe, as tabench's tables assume
    (`totals` draws 160 wide for one), whatever the terminal pytest runs in, and pytest-xdist's
    workers (which set COLUMNS=80) read the same tables as a single process."""
    monkeypatch.delenv("COLUMNS", raising=False)


#: What the environment may hold that would choose a test's judge key, endpoint or reply cache.
JUDGE_ENVIRONMENT = (
    "TABENCH_CACHE",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_API_VERSION",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
)


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder of the test's own as the working directory, with none of `JUDGE_ENVIRONMENT` set:
    a command run there finds no key, endpoint or cache but what the test gives it."""
    monkeypatch.chdir(tmp_path)
    for name in JUDGE_ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)
    return tmp_path


@pytest.fixture
async def judge_server() -> AsyncIterator[StartServer]:
    """A factory: `server = await judge_server(responder, **options)`; every server it started is
    closed when the test ends. Options are those of `tests/support/judge_server.JudgeServer`."""
    servers: list[JudgeServer] = []

    async def start(responder: Responder, **options: Any) -> JudgeServer:
        server = await start_judge_server(responder, **options)
        servers.append(server)
        return server

    yield start
    for server in servers:
        await server.close()


@pytest.fixture
async def http_session() -> AsyncIterator[aiohttp.ClientSession]:
    """One aiohttp client session for the test, closed afterwards."""
    async with aiohttp.ClientSession() as session:
        yield session
