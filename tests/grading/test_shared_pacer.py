"""`--workers N` share one pacer: the workers' `RelayedPacer`s ask the parent's `PacerHost` for
every send time over the real frames (encoded and decoded as the pipes carry them), so one
worker's 429 slows every worker, and a ticket nobody will end is ended for it."""

from __future__ import annotations

import asyncio
import time

import pytest

from tabench_dsl.core.ratelimit import RateReading
from tabench_dsl.grading.pacing import Pacer
from tabench_dsl.grading.parallel.frames import (
    Paced,
    Permit,
    Turn,
    frame,
    reply_decoder,
    work_decoder,
)
from tabench_dsl.grading.parallel.shared_pacer import PacerHost, RelayedPacer


class Clock:
    """A clock that moves only when something sleeps on it."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds
        await asyncio.sleep(0)


def body(data: bytes) -> bytes:
    return data[4:]  # the frame without its length


class Wired:
    """A worker's relayed pacer and the parent's host, joined as the pool joins them: each frame
    encoded, carried on the loop, decoded on the other side."""

    def __init__(self, host: PacerHost, index: int) -> None:
        self.host = host
        self.index = index
        self.relay = RelayedPacer(self.to_parent)
        self.frames: list[object] = []

    def to_parent(self, message: object) -> None:
        decoded = reply_decoder.decode(body(frame(message)))
        self.frames.append(decoded)
        asyncio.get_running_loop().call_soon(self.parent_reads, decoded)

    def parent_reads(self, message: object) -> None:
        if isinstance(message, Turn):
            self.host.turn(self.index, message, self.to_worker)
        else:
            assert isinstance(message, Paced)
            self.host.paced(self.index, message)

    def to_worker(self, message: object) -> None:
        decoded = work_decoder.decode(body(frame(message)))
        assert isinstance(decoded, Permit)
        asyncio.get_running_loop().call_soon(self.relay.permit, decoded)


async def settle() -> None:
    for _ in range(10):
        await asyncio.sleep(0)


async def test_every_worker_sends_by_the_parents_pacer_and_its_429s_slow_them_all():
    clock = Clock()
    host = PacerHost(Pacer(sleep=clock.sleep, clock=clock))
    first, second = Wired(host, 0), Wired(host, 1)
    assert not first.relay.idle  # every send time is asked for
    tickets = [await first.relay.turn(), await second.relay.turn()]
    assert host.pacer.in_flight == 2  # the parent's pacer counts both workers' requests
    reading = RateReading(requests_limit=10, requests_remaining=0, requests_reset=1.0)
    first.relay.on_success(tickets[0], reading)
    await settle()
    # the first worker's reply set the rate every worker now sends by: 9 a second
    assert host.pacer.rate == pytest.approx(9.0)
    started = clock.now
    await second.relay.turn()  # the second worker waits for the bucket the first one emptied
    assert clock.now - started == pytest.approx(1 / 9.0)
    second.relay.on_push_back(tickets[1], pause=1.0)
    await settle()
    assert host.pacer.evidence.limited == [tickets[1]]  # its 429 is the shared pacer's evidence
    assert [type(f).__name__ for f in first.frames] == ["Turn", "Paced"]


async def test_a_ticket_nobody_waits_for_or_a_worker_that_died_is_ended_as_a_fault():
    clock = Clock()
    host = PacerHost(Pacer(sleep=clock.sleep, clock=clock))
    worker = Wired(host, 0)
    waiting = asyncio.ensure_future(worker.relay.turn())
    await asyncio.sleep(0)
    waiting.cancel()  # the sender was cancelled while its turn was on its way
    await settle()
    assert worker.frames[-1] == Paced(worker.frames[-1].ticket, "fault")  # type: ignore[attr-defined]
    assert host.pacer.in_flight == 0
    await worker.relay.turn()
    await worker.relay.turn()
    await settle()
    assert host.pacer.in_flight == 2
    host.forget(0)  # the worker died with two requests out
    assert host.pacer.in_flight == 0
    host.paced(0, Paced(clock.now, "success"))  # a stray outcome for a ticket it no longer holds
    assert host.pacer.in_flight == 0 and host.pacer.evidence.ok == []


async def test_a_worker_tells_when_it_sent_on_each_ticket():
    frames: list[object] = []
    relay = RelayedPacer(frames.append)
    waiting = asyncio.ensure_future(relay.turn())
    await asyncio.sleep(0)
    granted = time.monotonic()
    relay.permit(Permit(1, granted))
    ticket = await waiting
    relay.on_success(ticket)
    told = frames[-1]
    assert isinstance(told, Paced) and told.ticket == granted
    assert granted <= told.sent <= time.monotonic()  # the system's clock, as the parent's pacer


def test_the_relayed_pacer_never_sends_without_a_turn():
    relay = RelayedPacer(lambda message: None)
    with pytest.raises(RuntimeError, match="only through turn"):
        relay.start()
