"""Shared fixtures: the scripted judge server and an aiohttp client session."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import pytest
from support.judge_server import JudgeServer, Responder, start_judge_server

StartServer = Callable[..., Awaitable[JudgeServer]]


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
