"""How late a request most likely reached a bucket one request deep, timed by its reply
(`ReplyLateness`, kept by the `pacer.Pacer`).

A reply slower than the fastest most likely left late, or reached the server late: a loaded event
loop sends late, and a bucket one request deep counts the next turn from when the last request
arrived. So the gap a request met, and the next turn, count from up to LATE_SHARE of a turn past
its send; later than that, the process most likely paused and the gap is unknown
(`pacer.Pacer._paused_about`).

That reading holds only while the judge answers in a steady time: a judge whose own time to answer
varies by tens of milliseconds (a language model's does, by far more) makes every reply look late.
Read as lateness, that spread would move every turn on by up to LATE_SHARE of it and leave every
outcome unread: at 10 a second behind replies of 0.5 s plus a spread of 0.2 s, the pace held 54% of
the limit. So while the median of the recent replies' delays past the fastest is over
REPLY_STEADY, a reply times nothing: every request is taken to have arrived as sent.
"""

from __future__ import annotations

import statistics

from .settings import LATE_KEPT, REPLY_STEADY


class ReplyLateness:
    """Per ticket of a bucket one request deep: seconds its request most likely arrived late (at
    most LATE_SHARE of a turn) and the most it may have (its reply's delay past the fastest round
    trip, uncapped), for the last LATE_KEPT answers (module docstring)."""

    def __init__(self) -> None:
        self._late: dict[float, tuple[float, float]] = {}
        #: True while replies time arrivals (module docstring); set when an answer is kept, as it
        #: is read several times an answer.
        self.steady = True

    def answered(self, ticket: float, most: float, cap: float) -> float:
        """The reply to `ticket` came `most` seconds past the fastest: how late its request most
        likely arrived (0 where replies time nothing)."""
        self._late[ticket] = (min(most, cap), most)
        if len(self._late) > LATE_KEPT:
            del self._late[next(iter(self._late))]
        if len(self._late) >= 2:
            self.steady = statistics.median(most for _, most in self._late.values()) <= REPLY_STEADY
        return self.late(ticket)

    def late(self, ticket: float) -> float:
        """Seconds the request on `ticket` most likely arrived late (0: unknown, or not timed)."""
        return self._late.get(ticket, (0.0, 0.0))[0] if self.steady else 0.0

    def most(self, ticket: float, unanswered: float) -> float:
        """The most the request on `ticket` may have arrived late (`unanswered` while its reply is
        not back); 0 where replies time nothing."""
        if not self.steady:
            return 0.0
        return self._late.get(ticket, (0.0, unanswered))[1]
