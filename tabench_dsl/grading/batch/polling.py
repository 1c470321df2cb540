"""How often a running batch is asked about: backing off from a few seconds to about a minute.

A batch takes minutes to hours; asking every few seconds at first catches a small batch that ends
quickly, and backing off to once a minute keeps a long one from costing a call every few seconds.
TABENCH_BATCH_POLL=START[,CAP] (seconds; CAP defaults to START) sets both, for a mock service in
tests and benchmarks.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping

import msgspec

from ...core.errors import UsageError

#: The variable that sets the polling delays: START[,CAP] in seconds.
POLL_ENV = "TABENCH_BATCH_POLL"


class PollPlan(msgspec.Struct, frozen=True):
    """The first delay between two polls, the longest, and the growth from one to the next."""

    start: float = 5.0
    cap: float = 60.0
    factor: float = 1.5

    def delays(self) -> Iterator[float]:
        delay = self.start
        while True:
            yield delay
            delay = min(self.cap, delay * self.factor)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> PollPlan:
        """The plan TABENCH_BATCH_POLL gives, else the default one."""
        text = (os.environ if env is None else env).get(POLL_ENV, "").strip()
        if not text:
            return cls()
        try:
            values = [float(part) for part in text.split(",")]
        except ValueError:
            values = []
        if len(values) not in (1, 2) or not all(v > 0 for v in values):
            raise UsageError(f"{POLL_ENV} must be START[,CAP] in seconds, both positive (got {text!r})")
        return cls(start=values[0], cap=max(values))
