"""Pacing the request rate to a judge's rate limit: one state machine, its turns, its arithmetic.

The `Pacer` (`pacer`, its phases named by `schedule.Phase`) hands out the send times (`schedule`)
and learns from each reply and 429; the rate arithmetic lives in small parts tested on their own:
the rate-limit headers (`headers`), what the sends proved of the server's bucket (`evidence`), the
climb to a guessed rate (`climb`), and the gap bracket of a bucket one request deep (`one_deep`).
Every tuning constant is in `settings`. Its modules and how they fit: docs/architecture.md.

Limiting concurrency alone cannot respect a rate limit: against a fast server even one request in
flight can exceed 20 requests a second. So the senders also take turns on a clock: before each
exchange `Pacer.turn()` hands out a send time, and each outcome tells the pacer what came back.
"""

from .pacer import Pacer, Pacing
from .schedule import Phase

__all__ = ["Pacer", "Pacing", "Phase"]
