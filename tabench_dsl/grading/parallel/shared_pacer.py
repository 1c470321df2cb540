"""One pacer for every worker of `--workers N`: the parent's `pacing.Pacer` hands out the send
times and learns from every worker's replies, so one worker's 429 slows them all.

    worker (RelayedPacer)                      parent (PacerHost)
      turn()            --- Turn(ask) ------->   Pacer.turn(), then
                        <-- Permit(ask, ticket)  (the ticket is the parent's clock's send time)
      on_success / on_push_back / on_fault
                        --- Paced(ticket, ...) ->  the same call on the Pacer (and, first, when
                                                   the worker sent it: `Pacer.sent_at`)

Each pacer alone would learn the server's rate as if it were the only sender, and the workers
together would send N times that. A worker's request costs two small frames more than before
(its `Turn` and its `Paced`) and one back (`Permit`); the parent's clock is the only one the
pacer reads, but for the worker's send times, which a bucket one request deep is paced from
(they are read only when they follow their ticket by a plausible relay delay). A ticket granted
to a sender that is gone (cancelled while it waited, or a worker that died) is ended as a fault,
so the pacer's count of requests in flight stays true.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable

from ...core.ratelimit import RateReading
from ..pacing import Pacer
from .frames import Paced, Permit, Turn

Send = Callable[[object], None]


class RelayedPacer:
    """The worker's pacer (`pacing.Pacing`): every turn is the parent's `Permit`, every outcome a
    `Paced` frame. `send` writes a frame to the parent; `permit` is given each `Permit` read."""

    def __init__(self, send: Send, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._send = send
        self._clock = clock
        self._asks: dict[int, asyncio.Future[float]] = {}
        self._next_ask = 0
        self._sent: dict[float, float] = {}  # ticket -> when this worker sent on it

    @property
    def idle(self) -> bool:
        """Never: every send time comes from the parent (`turn`)."""
        return False

    def start(self) -> float:
        """Not offered: `idle` is never true, so every sender takes a `turn`."""
        raise RuntimeError("a relayed pacer hands out send times only through turn()")

    async def turn(self) -> float:
        """Ask the parent's pacer for a send time and wait for it; the ticket."""
        self._next_ask += 1
        ask = self._next_ask
        granted = self._asks[ask] = asyncio.get_running_loop().create_future()
        self._send(Turn(ask))
        try:
            ticket = await granted
        finally:
            self._asks.pop(ask, None)
        self._sent[ticket] = self._clock()  # the sender sends as soon as its turn is back
        return ticket

    def permit(self, permit: Permit) -> None:
        """The parent's answer to a `Turn`; one for a sender no longer waiting ends at once."""
        waiting = self._asks.get(permit.ask)
        if waiting is None or waiting.done():
            self._send(Paced(permit.ticket, "fault"))
        else:
            waiting.set_result(permit.ticket)

    def on_success(self, ticket: float, reading: RateReading | None = None, tokens_needed: int = 0) -> None:
        """A reply came to the request sent on `ticket`."""
        sent = self._sent_on(ticket)
        self._send(Paced(ticket, "success", reading=reading, tokens=tokens_needed, sent=sent))

    def on_push_back(self, ticket: float, *, pause: float, reading: RateReading | None = None) -> None:
        """The request sent on `ticket` was pushed back (a 429)."""
        self._send(Paced(ticket, "push_back", pause=pause, reading=reading, sent=self._sent_on(ticket)))

    def on_fault(self, ticket: float) -> None:
        """The request sent on `ticket` ended otherwise."""
        self._sent.pop(ticket, None)
        self._send(Paced(ticket, "fault"))

    def _sent_on(self, ticket: float) -> float:
        return self._sent.pop(ticket, 0.0)


class PacerHost:
    """The parent's side: one `Pacer` for every worker, the tickets each worker holds, and the
    turns being waited for (`close` cancels them)."""

    def __init__(self, pacer: Pacer | None = None) -> None:
        self.pacer = pacer or Pacer()
        self._held: dict[int, Counter[float]] = {}
        self._granting: set[asyncio.Task[None]] = set()

    def turn(self, worker: int, ask: Turn, send: Send) -> None:
        """A worker's `Turn`: its `Permit` is sent through `send` when the pacer says so."""
        task = asyncio.ensure_future(self._grant(worker, ask.ask, send))
        self._granting.add(task)
        task.add_done_callback(self._granting.discard)

    async def _grant(self, worker: int, ask: int, send: Send) -> None:
        pacer = self.pacer
        ticket = pacer.start() if pacer.idle else await pacer.turn()
        self._held.setdefault(worker, Counter())[ticket] += 1
        send(Permit(ask, ticket))

    def paced(self, worker: int, outcome: Paced) -> None:
        """How a worker's request ended, told to the pacer (once per ticket granted)."""
        held = self._held.get(worker)
        if held is None or held[outcome.ticket] <= 0:
            return  # not a ticket this worker holds: nothing to end
        held[outcome.ticket] -= 1
        if held[outcome.ticket] == 0:
            del held[outcome.ticket]
        if outcome.sent:
            self.pacer.sent_at(outcome.ticket, outcome.sent)
        if outcome.outcome == "success":
            self.pacer.on_success(outcome.ticket, outcome.reading, outcome.tokens)
        elif outcome.outcome == "push_back":
            self.pacer.on_push_back(outcome.ticket, pause=outcome.pause, reading=outcome.reading)
        else:
            self.pacer.on_fault(outcome.ticket)

    def forget(self, worker: int) -> None:
        """A worker is gone: the tickets it held end as faults."""
        for ticket, count in self._held.pop(worker, Counter()).items():
            for _ in range(count):
                self.pacer.on_fault(ticket)

    def close(self) -> None:
        """Cancel the turns still waited for (the run is over or interrupted)."""
        for task in list(self._granting):
            task.cancel()
