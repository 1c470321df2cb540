"""The HTTP session a grading sends its judge requests through, made when the first one is sent.

Importing aiohttp, with the TLS contexts it builds as it loads, is a fifth of a second here: more
than everything else a `grade --resume` with nothing left to grade does once the index holds its
outcome. So `open_grader` hands the judges a `FirstUseSession`: it stands for the session, makes the
real `aiohttp.ClientSession` (with a connection pool sized to the grading's concurrency) the first
time anything of it is used, and closes it at the end when it was made. A grading that sends
requests sees the same session as before, from its first request on.
"""

from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    import aiohttp


class FirstUseSession:
    """An `aiohttp.ClientSession` of `limit` connections (per host too), made on first use; an
    async context manager that closes it, when it was made, on the way out."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._session: aiohttp.ClientSession | None = None

    def made(self) -> aiohttp.ClientSession:
        """The session, made now if it was not yet."""
        if self._session is None:
            import aiohttp

            connector = aiohttp.TCPConnector(limit=self._limit, limit_per_host=self._limit)
            self._session = aiohttp.ClientSession(connector=connector)
        return self._session

    def __getattr__(self, name: str) -> Any:
        # Only names this class lacks: the session's own (`post`, `get`, `closed`, ...).
        return getattr(self.made(), name)

    def as_session(self) -> aiohttp.ClientSession:
        """This, typed as the session it stands for (what the judges are given)."""
        return cast("aiohttp.ClientSession", self)

    async def __aenter__(self) -> FirstUseSession:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._session is not None:
            await self._session.close()
