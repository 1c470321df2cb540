"""A scorer's contradiction phrases as regular expressions with a time budget.

The phrase lists of `scorer.yaml` are regular expressions a battery's author wrote, searched in
every reason a judge gives. They need lookaround (the shipped lists use it, and the check wraps
each list in word-boundary lookarounds), which RE2 does not have, so they run on the `regex`
module, whose matching stops with `TimeoutError` once a budget is spent: `time_budget(seconds)`
sets one for a stretch of work (one reason), and every search inside it gets what is left. A
pattern that backtracks without end costs at most that budget per reason, never the grading.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import regex

_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar("regex_deadline", default=None)


@contextmanager
def time_budget(seconds: float) -> Iterator[None]:
    """Give the searches inside the block `seconds` in all; past that they raise `TimeoutError`."""
    token = _deadline.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _deadline.reset(token)


def _left() -> float | None:
    deadline = _deadline.get()
    return None if deadline is None else max(deadline - time.monotonic(), 1e-6)


class TimedPattern:
    """A compiled `regex` pattern whose searches take the time left in the current `time_budget`
    (none outside one). The methods are those of `re.Pattern` the contradiction check uses."""

    __slots__ = ("pattern",)

    def __init__(self, source: str, flags: int = 0) -> None:
        self.pattern = regex.compile(source, flags | regex.VERSION0)

    def search(self, text: str) -> Any:
        return self.pattern.search(text, timeout=_left())

    def match(self, text: str) -> Any:
        return self.pattern.match(text, timeout=_left())

    def finditer(self, text: str) -> Iterator[Any]:
        return self.pattern.finditer(text, timeout=_left())

    def sub(self, replacement: Any, text: str) -> str:
        return self.pattern.sub(replacement, text, timeout=_left())
