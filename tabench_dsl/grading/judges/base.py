"""The protocol every judge backend speaks.

A judge turns chat messages into one reply. It does not retry, decode or count: transport retries
live in `transport`, decoding in `verdict`, the retry/adjudicate logic in `runner`, totals in
`totals`. A failed exchange raises `TransportError` (see `errors`), never returns junk.
"""

from __future__ import annotations

from typing import Protocol

import msgspec

from ...core.records import JudgeInfo, Tokens


class Message(msgspec.Struct, frozen=True):
    """One chat message: role is "system" or "user"."""

    role: str
    content: str


class JudgeParams(msgspec.Struct, frozen=True):
    """Decoding parameters sent with every call (and part of the cache key)."""

    model: str
    temperature: float = 0.0
    max_tokens: int = 300


class Completion(msgspec.Struct, frozen=True):
    """A judge's reply: its text content and the tokens the server reported."""

    content: str
    tokens: Tokens = Tokens()
    latency_ms: float = 0.0


class Judge(Protocol):
    """A judge backend. `info` labels it in every record; `complete` makes one exchange."""

    info: JudgeInfo
    params: JudgeParams

    async def complete(self, messages: list[Message]) -> Completion:
        """One exchange. Raises `TransportError` for anything that is not a usable reply."""
        ...

    async def aclose(self) -> None:
        """Release the HTTP session or files the judge holds."""
        ...
