"""The rate-limit headers providers send, read into a `RateReading`:

OpenAI      x-ratelimit-{limit,remaining,reset}-{requests,tokens}   reset: "1s", "6m0s", "20ms"
Anthropic   anthropic-ratelimit-{requests,tokens}-{limit,remaining,reset}
            (input-tokens when tokens is absent)                     reset: RFC 3339 time
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from datetime import UTC, datetime

from ..core.ratelimit import RateReading

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
