"""Where a bucket one request deep loses its time: `ratelimit_bench.py --trace` (one worker).

The pacer is watched, not changed: `Trace` wraps three methods of `pacing.schedule.Schedule` for the
run (the bench's process only) and logs, for every send, the time the pacer planned it for (the
turn's slot, and one deep a turn after the last request taken), the time it actually went (its
ticket), the pacer's gap then, and its phase. The mock's arrivals (same monotonic clock: one
machine) are matched to the sends in order.

`decompose` then splits what the run missed of the limit (`1 + rate x span - answered`, in turns)
by the interval between two requests the server took that it was lost in:

    start       the later of the two was sent before the pacer was one deep (the slow start and
                the refusal that found the bucket)
    refusals    a refused request arrived between the two (the refused one's turn, and the 429's
                round trip before the next went)
    margin      the pacer's gap over the server's turn (what the bracket settled at)
    recovering  the same, in the second after a refusal (the bracket stepping down and back)
    planned     the next turn counted from later than the last send (a reply taken to have
                arrived late moves the next turn: `Schedule.reached_late`)
    timer       the send left later than planned (the event loop's timer rounding, and its work)
    transit     the request took longer to reach the server than the one before it (the pipe:
                aiohttp's write, the network, the server's read)
"""

from __future__ import annotations

import asyncio
import bisect
import itertools
import time
from dataclasses import dataclass

from aiohttp.http_writer import StreamWriter

from tabench_dsl.grading.pacing import schedule as schedule_module
from tabench_dsl.grading.pacing.schedule import Phase, Schedule


@dataclass
class Send:
    ticket: float
    planned: float
    gap: float  # the pacer's turn then (1 / rate), 0 while no rate
    anchor: float  # when the pacer counted its turn from (the last send taken, or later)
    phase: Phase


class Trace:
    """Every send the pacer's schedules make while it is open (module docstring)."""

    def __init__(self) -> None:
        self.sends: list[Send] = []
        self.writes: list[float] = []  # when the client wrote to a socket (real runs)
        self._plans: dict[int, tuple[float, float]] = {}
        self._saved: dict[str, object] = {}

    def __enter__(self) -> Trace:
        trace = self
        wait_for, spacing, start = Schedule._wait_for, Schedule._one_deep_spacing, Schedule.start
        self._saved = {"_wait_for": wait_for, "_one_deep_spacing": spacing, "start": start}

        async def traced_wait_for(self: Schedule, slot: float) -> bool:
            trace._plans[_task()] = (slot, 0.0)
            if await wait_for(self, slot):
                return True
            trace._plans.pop(_task(), None)  # redrawn: the sender queues again
            return False

        async def traced_spacing(self: Schedule) -> None:
            await spacing(self)
            last = self.last_sent()
            if last is not None and self.rate is not None:
                slot = trace._plans.get(_task(), (0.0, 0.0))[0]
                trace._plans[_task()] = (max(slot, last + 1.0 / self.rate), last)

        def traced_start(self: Schedule) -> float:
            ticket = start(self)
            planned, anchor = trace._plans.pop(_task(), (ticket, 0.0))
            gap = 1.0 / self.rate if self.rate else 0.0
            trace.sends.append(Send(ticket, min(planned, ticket), gap, anchor, self.phase))
            return ticket

        def traced_write(self: object, chunk: bytes) -> None:
            trace.writes.append(time.monotonic())
            write(self, chunk)

        def traced_writelines(self: object, chunks: object) -> None:
            trace.writes.append(time.monotonic())
            writelines(self, chunks)

        write, writelines = StreamWriter._write, StreamWriter._writelines
        self._saved_writes = (write, writelines)
        StreamWriter._write, StreamWriter._writelines = traced_write, traced_writelines  # type: ignore[method-assign]
        Schedule._wait_for = traced_wait_for  # type: ignore[method-assign]
        Schedule._one_deep_spacing = traced_spacing  # type: ignore[method-assign]
        Schedule.start = traced_start  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        StreamWriter._write, StreamWriter._writelines = self._saved_writes  # type: ignore[method-assign]
        for name, method in self._saved.items():
            setattr(schedule_module.Schedule, name, method)


def _task() -> int:
    task = asyncio.current_task()
    return id(task)


PARTS = ("start", "refusals", "margin", "recovering", "planned", "timer", "transit")


def decompose(sends: list[Send], arrivals: list[tuple[float, bool]], rate: float) -> dict[str, float]:
    """What the run missed of the limit, as shares of what it could give, by part (module
    docstring); `missed` the whole, `matched` False when sends and arrivals do not pair up."""
    turn = 1.0 / rate
    pairs = list(zip(sends, arrivals, strict=False))
    taken = [(send, at) for send, (at, ok) in pairs if ok]
    span = taken[-1][1] - taken[0][1]
    could = 1 + rate * span
    parts = dict.fromkeys(PARTS, 0.0)
    refused_at = [at for _, (at, ok) in pairs if not ok]
    index = 0  # refusals before the current interval's end
    for (before, at_before), (send, at) in itertools.pairwise(taken):
        excess = at - at_before - turn
        refused_between = False
        while index < len(refused_at) and refused_at[index] < at:
            refused_between |= refused_at[index] > at_before
            index += 1
        if send.phase is not Phase.ONE_DEEP or before.phase is not Phase.ONE_DEEP:
            parts["start"] += excess
            continue
        if refused_between:
            parts["refusals"] += excess
            continue
        recent = any(0 < at - when <= 1.0 for when in refused_at[max(0, index - 3) : index])
        parts["recovering" if recent else "margin"] += send.gap - turn
        parts["planned"] += send.planned - before.ticket - send.gap
        parts["timer"] += send.ticket - send.planned
        parts["transit"] += (at - send.ticket) - (at_before - before.ticket)
    shares = {name: rate * seconds / could for name, seconds in parts.items()}
    return {
        **shares,
        "missed": (could - len(taken)) / could,
        "matched": float(len(sends) == len(arrivals)),
        "refused": float(len(refused_at)),
    }


def describe(parts: dict[str, float]) -> str:
    """The decomposition's line: each part as points of the limit missed."""
    named = "  ".join(f"{name} {100 * parts[name]:.1f}" for name in PARTS)
    check = "" if parts["matched"] else "  (sends and arrivals did not pair up: read with care)"
    return f"    missed {100 * parts['missed']:.1f} points of the limit: {named}{check}"


def split_transit(trace: Trace, arrivals: list[tuple[float, bool]]) -> str:
    """How far each one-deep send's way to the server strays (p50/p90/p99, ms): from its ticket
    to the client's socket write, and from that write to the server's stamp."""
    client, server = [], []
    late = [send.ticket - send.planned for send in trace.sends if send.phase is Phase.ONE_DEEP]
    for send, (at, _) in zip(trace.sends, arrivals, strict=False):
        index = bisect.bisect_left(trace.writes, send.ticket)
        if send.phase is Phase.ONE_DEEP and index < len(trace.writes):
            client.append(trace.writes[index] - send.ticket)
            server.append(at - trace.writes[index])
    if not client:
        return "    (no socket writes traced)"

    def spread(values: list[float]) -> str:
        values = sorted(values)
        return "/".join(f"{1000 * values[int(q * (len(values) - 1))]:.2f}" for q in (0.5, 0.9, 0.99))

    return (
        f"    planned->ticket p50/p90/p99 {spread(late)} ms; ticket->write {spread(client)} ms; "
        f"write->server {spread(server)} ms"
    )
