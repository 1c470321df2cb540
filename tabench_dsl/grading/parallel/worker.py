"""The worker's side: one grading process, started by `WorkerPool` as `WORKER_COMMAND`.

It reads its configuration, opens its own event loop, aiohttp session, judge, cache connection and
limiter (its share of the concurrency; its pacer is the parent's, `shared_pacer`), grades each
answer it is handed with `Grader.grade` and sends the finished records back, batched per loop turn.
Frames go out on a dup of its stdout; its fd 1 is pointed at stderr, so a stray print cannot
corrupt a frame.

Stopping: on the end frame it finishes what it holds, commits its cache, says `Done` and exits.
End-of-file on its stdin without an end frame (the parent was killed outright) ends it at once.
A frame pipe that closes (the parent stopped listening) stops the grading, and a frame for nobody
is dropped, never an error. SIGINT is ignored: a terminal's Ctrl-C reaches the parent, which
decides when the workers stop.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import signal
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...core.errors import TabenchError
from ...core.records import Answer, Record
from .frames import (
    STREAM_LIMIT,
    TERMINATE_GRACE,
    Done,
    Failed,
    Hello,
    Notice,
    Permit,
    Records,
    config_decoder,
    frame,
    read_frame,
    work_decoder,
)
from .shared_pacer import RelayedPacer

if TYPE_CHECKING:
    from ..runner import Grader


def main() -> None:
    """Entry of a worker process (`WORKER_COMMAND`), started by `WorkerPool`."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when a worker stops
    # What grading imports is imported before `quiet_gc` freezes what exists, so the collector never
    # walks these modules' objects (the single process imports them before it freezes, too).
    import aiohttp  # noqa: F401

    from .. import cache, runner, session, transport  # noqa: F401
    from ..event_loop import quiet_gc, run_event_loop
    from ..judges import factory  # noqa: F401

    with quiet_gc():
        run_event_loop(_grade_what_comes)


async def _grade_what_comes() -> None:
    from ..session import open_grader

    reader, transport, out = await _open_pipes()

    def send(message: object) -> None:
        # Once the pipe is closing (the parent stopped reading: an interrupt) a frame has nobody
        # to go to; writing it would be an error on a closed transport, printed by the loop.
        if not transport.is_closing():
            transport.write(frame(message))

    def notice(text: str) -> None:
        """What a judge says during the run goes to the parent."""
        send(Notice(text))

    first = await read_frame(reader)
    if first is None:
        return  # the parent is gone before it configured us
    config = config_decoder.decode(first)
    pacer = RelayedPacer(send)  # every send time is the parent's, shared by all the workers
    try:
        async with open_grader(config.battery, config.options, pacer=pacer, on_notice=notice) as grader:
            gc.freeze()  # the battery and the judge, as the single process freezes them
            send(Hello(grader.judge.info.describe()))
            if not await _grade_answers(grader, reader, out, send, pacer, config.options.concurrency):
                return  # the parent is gone or not listening: stop grading now
        send(Done())  # after the cache is committed: the parent may stop us now
    except TabenchError as exc:
        send(Failed.of(exc))
    finally:
        transport.close()  # once what is buffered is written (the parent reads until `Done`)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(out.closed, TERMINATE_GRACE * 5)


async def _open_pipes() -> tuple[asyncio.StreamReader, asyncio.WriteTransport, _Out]:
    """The frame pipes: stdin read as a stream, and a dup of stdout written to; fd 1 itself is
    pointed at stderr, so a stray print goes there, never into a frame."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=STREAM_LIMIT)
    stdin = open(0, "rb", buffering=0, closefd=False)  # noqa: SIM115 (the transport owns it)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)
    out_fd = os.dup(1)
    os.dup2(2, 1)  # a stray print goes to stderr, never into a frame
    pipe = open(out_fd, "wb", buffering=0)  # noqa: SIM115 (the transport owns it)
    transport, out = await loop.connect_write_pipe(_Out, pipe)
    return reader, transport, out


async def _grade_answers(
    grader: Grader,
    reader: asyncio.StreamReader,
    out: _Out,
    send: Callable[[object], None],
    pacer: RelayedPacer,
    concurrency: int,
) -> bool:
    """Grade the answers the parent sends, `concurrency` at a time, sending the records back
    batched per loop turn; True once the end frame's answers are all sent back, False when the
    parent is gone or stopped listening."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[Answer | None] = asyncio.Queue()
    finished: list[Record] = []

    def flush() -> None:
        if finished:
            send(Records(finished[:]))
            finished.clear()

    async def grade() -> None:
        while (answer := await queue.get()) is not None:
            record = await grader.grade(answer)
            if not finished:
                loop.call_soon(flush)
            finished.append(record)

    graders = asyncio.gather(*(grade() for _ in range(concurrency)))
    feeder = asyncio.ensure_future(_feed(reader, queue, pacer, concurrency))
    orphaned = asyncio.ensure_future(asyncio.shield(out.closed))  # the parent stopped reading
    running: list[asyncio.Future[Any]] = [feeder, orphaned, graders]
    try:
        done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            task.result()  # a grading error (a refused key) is raised here
        if graders not in done:
            # The parent is gone (its stream ended before the graders did: it closes it only
            # after `Done`) or not listening: stop grading now.
            return False
    finally:
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
    flush()
    return True


async def _feed(
    reader: asyncio.StreamReader, queue: asyncio.Queue[Answer | None], pacer: RelayedPacer, graders: int
) -> None:
    """Queue the answers the parent hands over (a None per grader at the end frame) and give the
    pacer its permits to send, until the parent closes the stream (permits come after the end
    frame too)."""
    ended = False
    while (data := await read_frame(reader)) is not None:
        message = work_decoder.decode(data)
        if isinstance(message, Permit):
            pacer.permit(message)
        elif not message:
            if not ended:
                for _ in range(graders):
                    queue.put_nowait(None)
            ended = True
        else:
            for answer in message:
                queue.put_nowait(answer)


class _Out(asyncio.Protocol):
    """The worker's frame pipe; `closed` is set once everything written has left (or the pipe
    broke)."""

    def __init__(self) -> None:
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)
