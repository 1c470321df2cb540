"""The rate-limit headers providers send, read into a `RateReading`, and what a reading tells of
the server's bucket (`header_limit`, `exhausted`):

OpenAI      x-ratelimit-{limit,remaining,reset}-{requests,tokens}   reset: "1s", "6m0s", "20ms"
Anthropic   anthropic-ratelimit-{requests,tokens}-{limit,remaining,reset}
            (input-tokens when tokens is absent)                     reset: RFC 3339 time
"""

from __future__ import annotations

import re
import time
from collections import deque
from collections.abc import Mapping
from datetime import UTC, datetime

from ...core.ratelimit import RateReading
from .settings import HORIZON, MAX_PAUSE, ONE_DEEP_MARGIN

_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(h|ms|m|s|us|µs|ns)")
_UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}


def parse_duration(text: str | None) -> float | None:
    """Seconds in a duration as OpenAI writes its resets ("1s", "6m0s", "20ms", "1h2m3.5s"), or a
    bare number of seconds; None when absent or unreadable."""
    if text is None:
        return None
    text = text.strip()
    try:
        value = float(text)
    except ValueError:
        parts = _DURATION_PART.findall(text)
        if not parts or "".join(number + unit for number, unit in parts) != text:
            return None
        value = sum(float(number) * _UNIT_SECONDS[unit] for number, unit in parts)
    return value if value >= 0 else None


def seconds_until(text: str | None, *, now: float | None = None) -> float | None:
    """Seconds from `now` (default: the wall clock) until an RFC 3339 time such as
    "2026-01-01T00:00:01Z" (Anthropic's resets), 0 when it is past; None when unreadable."""
    if text is None:
        return None
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)


def _count(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        return max(0, int(float(text)))
    except ValueError:
        return None


def openai_reading(headers: Mapping[str, str]) -> RateReading | None:
    """The rate-limit state in a Chat Completions reply's headers; None when it sent none."""
    requests = headers.get("x-ratelimit-remaining-requests")
    tokens = headers.get("x-ratelimit-remaining-tokens")
    if requests is None and tokens is None:
        return None
    return RateReading(
        requests_limit=_count(headers.get("x-ratelimit-limit-requests")),
        requests_remaining=_count(requests),
        requests_reset=parse_duration(headers.get("x-ratelimit-reset-requests")),
        tokens_limit=_count(headers.get("x-ratelimit-limit-tokens")),
        tokens_remaining=_count(tokens),
        tokens_reset=parse_duration(headers.get("x-ratelimit-reset-tokens")),
    )


def anthropic_reading(headers: Mapping[str, str], *, now: float | None = None) -> RateReading | None:
    """The rate-limit state in a Messages API reply's headers; None when it sent none. The tokens
    pair is `anthropic-ratelimit-tokens-*`, else the input-tokens one."""
    requests = headers.get("anthropic-ratelimit-requests-remaining")
    kind = "tokens"
    tokens = headers.get("anthropic-ratelimit-tokens-remaining")
    if tokens is None:
        kind = "input-tokens"
        tokens = headers.get("anthropic-ratelimit-input-tokens-remaining")
    if requests is None and tokens is None:
        return None
    return RateReading(
        requests_limit=_count(headers.get("anthropic-ratelimit-requests-limit")),
        requests_remaining=_count(requests),
        requests_reset=seconds_until(headers.get("anthropic-ratelimit-requests-reset"), now=now),
        tokens_limit=_count(headers.get(f"anthropic-ratelimit-{kind}-limit")),
        tokens_remaining=_count(tokens),
        tokens_reset=seconds_until(headers.get(f"anthropic-ratelimit-{kind}-reset"), now=now),
    )


def exhausted(reading: RateReading, tokens_needed: int = 0) -> float | None:
    """Seconds until the server has room again when `reading` says none is left (no request, or
    fewer tokens than the next request needs), else None."""
    waits: list[float] = []
    if reading.requests_remaining is not None and reading.requests_remaining <= 0:
        waits.append(reading.requests_reset or 0.0)
    if (
        reading.tokens_remaining is not None
        and tokens_needed > 0
        and reading.tokens_remaining < min(tokens_needed, reading.tokens_limit or tokens_needed)
    ):
        waits.append(reading.tokens_reset or 0.0)
    return min(max(waits), MAX_PAUSE) if waits else None


def header_limit(
    reading: RateReading, tokens_needed: int = 0, *, taken: bool = True
) -> tuple[float, float, float] | None:
    """(rate, capacity, level) of the server's bucket in requests, from its headers: for requests,
    and for tokens at `tokens_needed` a request, whichever binds. The rate is a lower bound (the
    reading's whole counts hide up to one request of what was used), save for a bucket one request
    deep read after a request it `taken` (not a push-back's): that one is empty after each request
    and whole again `reset` later, which is its rate itself. None when neither tells."""
    found: list[tuple[float, float, float]] = []
    pairs = [(reading.requests_limit, reading.requests_remaining, reading.requests_reset, 1)]
    if tokens_needed > 0:
        pairs.append((reading.tokens_limit, reading.tokens_remaining, reading.tokens_reset, tokens_needed))
    for limit, remaining, reset, unit in pairs:
        if limit is None or remaining is None or not reset:
            continue
        used = (limit - remaining) / unit
        if used - 1 >= 1:
            found.append(((used - 1) / reset, limit / unit, remaining / unit))
        elif taken and used >= 1 and limit / unit < 2:
            found.append((used / reset * (1 - ONE_DEEP_MARGIN), limit / unit, remaining / unit))
    return min(found, key=lambda bucket: bucket[2]) if found else None


def one_deep_wait(reading: RateReading) -> float | None:
    """Seconds from a request's arrival until a requests bucket one request deep holds its one
    request again, when `reading` is of such a bucket with none left (a push-back's reading too:
    its reset is the rest of the refill); None otherwise."""
    if reading.requests_limit != 1 or reading.requests_remaining != 0 or reading.requests_reset is None:
        return None
    return reading.requests_reset / (1 - ONE_DEEP_MARGIN)


class HeaderRates:
    """The rates the headers proved over the last HORIZON seconds. Each is a lower bound (a
    reading's whole counts hide up to one request): the highest for the same bucket (requests or
    tokens, whichever binds now, told apart by its capacity) is the closest, and a server that
    lowers its limit is followed (at once when 429s come close together: `forget`)."""

    def __init__(self) -> None:
        self._seen: deque[tuple[float, float, float]] = deque(maxlen=1024)

    def forget(self) -> None:
        """Drop the rates proved so far: the server refused more than once at them."""
        self._seen.clear()

    def highest(self, now: float, rate: float, capacity: float) -> float:
        """The highest rate proved for a bucket `capacity` deep, this reading's `rate` included."""
        self._seen.append((now, rate, capacity))
        while self._seen[0][0] < now - HORIZON:
            self._seen.popleft()
        return max(bound for _, bound, deep in self._seen if deep == capacity)
