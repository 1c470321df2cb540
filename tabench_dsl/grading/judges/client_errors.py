"""The HTTP client's errors and a server's Retry-After, as tabench reads them: one place for both,
used around each HTTP exchange by the HTTP judges and the batch services, and by `transport`.

    TimeoutError (asyncio's, aiohttp's)      -> TransportError "no reply within T s"
    aiohttp.ClientError, ConnectionError     -> TransportError "connection to the judge failed (Kind)"

both retryable, and naming the kind of failure only: aiohttp's own messages may carry the URL.
"""

from __future__ import annotations

import email.utils
import functools
from collections.abc import Mapping
from datetime import UTC, datetime

from ...core.errors import TransportError


class ClientErrorMap:
    """A context manager that turns the HTTP client's errors raised inside it into retryable
    `TransportError`s (the table of the module docstring); anything else passes through. It holds
    no state but the timeout it names, so one serves any number of exchanges, nested or at once."""

    __slots__ = ("timeout",)

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        # Returning None lets any other exception through; aiohttp's timeouts are ClientErrors
        # too, and are named as timeouts.
        if kind is None:
            return
        if issubclass(kind, TimeoutError):
            raise TransportError(f"no reply within {self.timeout:g} s") from None
        import aiohttp  # here, not at the top: a grading that sends nothing never imports it

        if issubclass(kind, (aiohttp.ClientError, ConnectionError)):
            # Refused or no such host (ClientConnectorDNSError is a ClientConnectorError): the
            # judge was never reached, which `grading.reachability` watches for.
            unreachable = issubclass(kind, (aiohttp.ClientConnectorError, ConnectionRefusedError))
            raise TransportError(
                f"connection to the judge failed ({kind.__name__})", unreachable=unreachable
            ) from None


@functools.lru_cache(maxsize=16)
def map_client_errors(timeout: float) -> ClientErrorMap:
    """The one place HTTP-client errors become `TransportError`s: `with map_client_errors(t): ...`
    around an exchange allowed `t` seconds. One (stateless) map per distinct timeout."""
    return ClientErrorMap(timeout)


def parse_retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """The wait a server asked for, in seconds: `retry-after-ms`, else `Retry-After` given as
    seconds or as an HTTP date. None when absent or unreadable."""
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            value = float(ms) / 1000.0
        except ValueError:
            value = None
        if value is not None and value >= 0:
            return value
    raw = headers.get("retry-after")
    if raw is None:
        return None
    raw = raw.strip()
    try:
        value = float(raw)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(raw)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        current = datetime.now(UTC).timestamp() if now is None else now
        return max(0.0, when.timestamp() - current)
    return value if value >= 0 else None
