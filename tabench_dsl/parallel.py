"""`tabench grade --workers N`: grading spread over N worker processes, one results writer.

Why: against a fast judge a grading is bound by one core (the HTTP client alone costs ~240 us a
call); N processes use N cores. Against a real judge (hundreds of milliseconds a call) one process
is plenty, so the default stays one process and `Grader.run` without this module. Measured on a
2-core machine against the bench's local judge (20 ms, itself on those 2 cores), 20,000 calls:
at --concurrency 64 two processes were slower than one (efficiency 0.63-0.66 against 0.73-0.74;
465-510 us CPU a call against 372-380: the parent's share, two start-ups, more wake-ups; even the
bare aiohttp client loses when split in two), while at 256, where one process is CPU bound, two
finished in 7.1 s instead of 8.9 s.

    parent (WorkerPool)                            worker (tabench_dsl.parallel.main)
      reads the answers, skips those done            its own event loop, aiohttp session, judge,
      config frame ------------------------------->  cache connection, limiter (a share of the
      answer batches (bounded in flight) --------->  concurrency), Grader.grade per answer
      writes each record as it arrives <-----------  finished records, batched per loop turn
      end frame (no answers left) ---------------->  finishes what it holds, says done, exits

Frames are a 4-byte little-endian length and a msgpack body (msgspec) over the worker's stdin and
a dup of its stdout (its fd 1 is pointed at stderr, so a stray print cannot corrupt a frame).

The parent alone writes the results file, so every guarantee of `ResultsWriter` holds: one writer
(flock), append-only, a whole line per record, written the moment the record is received.
Backpressure: at most `2 x share` answers in flight per worker, topped up as records come back.
Ctrl-C or SIGTERM (`loop.catch_interrupts`): the parent stops handing out answers, closes the
workers' input and terminates them; records already received are whole, those in flight are not
written (resume grades them); exit 130. A worker whose output pipe is gone (the parent stopped
listening) stops grading and writes nothing more: a frame for nobody is dropped, never an error.
The parent killed outright (kill -9): a worker sees end-of-file on its stdin without an end frame
and exits at once. A worker that dies: its answers in flight are not written; the parent says so,
goes on with the others and the run exits 1. A judge or usage error in a worker (a refused key, a
missing model) stops the run as it stops a single-process run.

Decided where the spec is silent: `--rpm`/`--tpm` are split evenly between the workers;
`--workers auto` is 2 with 4 CPUs or more, else 1 (see `parse_workers`); the workers run in a
session of their own (a terminal's Ctrl-C reaches the parent only, which stops them).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator

import msgspec

from .compiled import CompiledBattery
from .records import Answer, Record
from .runner import RunStats
from .session import GradingOptions

#: Answers in flight per worker, as a multiple of its share of the concurrency.
IN_FLIGHT_FACTOR = 2
#: How a worker process is started: the module imported (not run as `__main__`, a second copy).
WORKER_COMMAND = "from tabench_dsl.parallel import main; main()"
#: Seconds a terminated worker gets before it is killed.
TERMINATE_GRACE = 2.0
_HEAD = 4


class WorkerConfig(msgspec.Struct):
    """What a worker needs to grade: the battery, and the judge, transport and cache options (the
    pool gives each worker its share of the concurrency and rate limits)."""

    battery: CompiledBattery
    options: GradingOptions


class Hello(msgspec.Struct, tag="hello"):
    judge: str
    #: The judge's notice (why the builtin judge grades), for the parent to show once.
    notice: str | None = None


class Records(msgspec.Struct, tag="records"):
    records: list[Record]


class Failed(msgspec.Struct, tag="failed"):
    kind: str
    message: str


class Done(msgspec.Struct, tag="done"):
    pass


_encoder = msgspec.msgpack.Encoder()
_reply_decoder = msgspec.msgpack.Decoder(Hello | Records | Failed | Done)


def frame(message: object) -> bytes:
    """One frame: length and msgpack body."""
    body = _encoder.encode(message)
    return len(body).to_bytes(_HEAD, "little") + body


def parse_workers(text: str) -> int:
    """`--workers` value: a count of at least 1, or `auto`: 2 with 4 CPUs or more, else 1.

    Why not 2 on a 2-core machine: measured there against the bench's local judge (which needs a
    core of its own), two processes graded more slowly than one, and even a bare aiohttp client
    split in two processes lost (efficiency 0.62-0.71 against 0.78-0.85 in one process)."""
    if text == "auto":
        return 2 if (os.cpu_count() or 1) >= 4 else 1
    try:
        count = int(text)
    except ValueError:
        count = 0
    if count < 1:
        from .errors import UsageError

        raise UsageError(f"--workers must be a number of at least 1, or auto (got {text!r})")
    return count


class _Worker:
    def __init__(self, index: int, share: int, proc: subprocess.Popen) -> None:
        self.index = index
        self.share = share
        self.cap = share * IN_FLIGHT_FACTOR
        self.proc = proc
        self.in_flight = 0
        self.ended = False  # the end frame was sent (or the worker is gone)
        self.reader: asyncio.StreamReader | None = None
        self.pipe: asyncio.WriteTransport | None = None

    def send(self, message: object) -> None:
        if self.pipe is not None and not self.pipe.is_closing():
            self.pipe.write(frame(message))


class WorkerPool:
    """`workers` grading processes sharing `concurrency` judge calls in flight.

    `start()` launches them (before the battery is compiled, so their start-up overlaps the
    parent's); `run(...)` grades, writing every record through `writer` in this process;
    `close()` (always, e.g. in a `finally`) reaps them, terminating any still running after an
    error or an interruption. `on_log` (required: this module prints nothing) gets a line for a
    worker that died.
    """

    def __init__(self, workers: int, concurrency: int, *, on_log: Callable[[str], None]) -> None:
        self.count = max(1, min(workers, concurrency))
        self.shares = [
            concurrency // self.count + (1 if index < concurrency % self.count else 0)
            for index in range(self.count)
        ]
        self.on_log = on_log
        self.stats = RunStats()
        self._workers: list[_Worker] = []
        self._answers: Iterator[Answer] = iter(())
        self._exhausted = False
        self._completed = False
        self._on_notice: Callable[[str], None] | None = None

    def start(self) -> None:
        """Launch the worker processes; they wait for their configuration."""
        for index, share in enumerate(self.shares):
            proc = subprocess.Popen(
                [sys.executable, "-c", WORKER_COMMAND], stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, bufsize=0, start_new_session=True,
            )
            self._workers.append(_Worker(index, share, proc))

    async def run(
        self,
        config: WorkerConfig,
        answers: Iterable[Answer],
        *,
        writer,
        skip: set[tuple[str, str]] | None = None,
        on_record: Callable[[Record], None] | None = None,
        on_skip: Callable[[], None] | None = None,
        on_notice: Callable[[str], None] | None = None,
    ) -> RunStats:
        """Grade every answer not in `skip` with `config` (its concurrency is split between the
        workers, and so are its rate limits); return the run's counts. `on_notice` gets the judge's
        notice (`judge.notice`), once, when the workers' judge has one."""
        self._on_notice = on_notice
        if not self._workers:
            self.start()
        self._answers = self._pending(answers, skip or set(), on_skip)
        loop = asyncio.get_running_loop()
        tasks: list[asyncio.Future] = []
        try:
            for worker in self._workers:
                reader = worker.reader = asyncio.StreamReader(limit=1 << 20)
                await loop.connect_read_pipe(
                    lambda r=reader: asyncio.StreamReaderProtocol(r), worker.proc.stdout
                )
                worker.pipe, _ = await loop.connect_write_pipe(asyncio.Protocol, worker.proc.stdin)
                options = config.options
                share = msgspec.structs.replace(
                    options, concurrency=worker.share,
                    rpm=options.rpm / self.count if options.rpm else None,
                    tpm=options.tpm / self.count if options.tpm else None,
                )
                worker.send(msgspec.structs.replace(config, options=share))
            for worker in self._workers:
                self._top_up(worker)
            tasks = [asyncio.ensure_future(self._serve(w, writer, on_record)) for w in self._workers]
            await asyncio.gather(*tasks)
            self._completed = True
        finally:
            for serving in tasks:
                serving.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for worker in self._workers:
                if worker.pipe is not None:
                    worker.pipe.close()
        return self.stats

    def _pending(
        self, answers: Iterable[Answer], skip: set[tuple[str, str]], on_skip: Callable[[], None] | None
    ) -> Iterator[Answer]:
        for answer in answers:
            if (answer.system, answer.question) in skip:
                self.stats.skipped += 1
                if on_skip is not None:
                    on_skip()
                continue
            yield answer

    def _top_up(self, worker: _Worker) -> None:
        """Hand `worker` answers up to its cap (in one frame, once a quarter of the cap is free);
        send the end frame once no answers are left."""
        if worker.ended:
            return
        room = worker.cap - worker.in_flight
        if not self._exhausted and (room >= max(1, worker.cap // 4) or worker.in_flight == 0):
            batch: list[Answer] = []
            for answer in self._answers:
                batch.append(answer)
                if len(batch) >= room:
                    break
            else:
                self._exhausted = True
            if batch:
                worker.in_flight += len(batch)
                worker.send(batch)
        if self._exhausted:
            for other in self._workers:
                if not other.ended:
                    other.ended = True
                    other.send([])

    async def _serve(self, worker: _Worker, writer, on_record: Callable[[Record], None] | None) -> None:
        """Read `worker`'s frames until it is done (or gone)."""
        stream = worker.reader
        assert stream is not None
        stats = self.stats
        while True:
            try:
                head = await stream.readexactly(_HEAD)
                message = _reply_decoder.decode(await stream.readexactly(int.from_bytes(head, "little")))
            except asyncio.IncompleteReadError:
                status = await asyncio.to_thread(worker.proc.wait)
                stats.workers_lost += 1
                self.on_log(
                    f"grading worker {worker.index + 1} ended unexpectedly (exit status {status}); its "
                    f"{worker.in_flight} answer(s) in flight are not recorded (--resume grades them)"
                )
                worker.ended = True
                return
            if type(message) is Records:
                for record in message.records:
                    writer.write(record)
                    stats.count(record)
                    if on_record is not None:
                        on_record(record)
                worker.in_flight -= len(message.records)
                self._top_up(worker)
            elif type(message) is Hello:
                stats.judge = message.judge
                if message.notice and self._on_notice is not None:
                    self._on_notice(message.notice)
                    self._on_notice = None  # every worker has the same judge: shown once
            elif type(message) is Failed:
                raise _error(message)
            else:
                return

    def close(self) -> None:
        """Reap the workers: after a complete run they are exiting by themselves; otherwise (an
        error, an interruption) those still running are terminated, and killed if they linger."""
        if not self._completed:
            for worker in self._workers:
                if worker.proc.poll() is None:
                    _signal(worker.proc, signal.SIGTERM)
        for worker in self._workers:
            try:
                worker.proc.wait(TERMINATE_GRACE)
            except subprocess.TimeoutExpired:
                _signal(worker.proc, signal.SIGTERM if self._completed else signal.SIGKILL)
                try:
                    worker.proc.wait(TERMINATE_GRACE)
                except subprocess.TimeoutExpired:
                    _signal(worker.proc, signal.SIGKILL)
                    worker.proc.wait()
            for pipe in (worker.proc.stdin, worker.proc.stdout):
                if pipe is not None:
                    with contextlib.suppress(OSError):
                        pipe.close()


def _signal(proc: subprocess.Popen, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(sig)


def _error(failed: Failed) -> Exception:
    from . import errors

    kinds = {"UsageError": errors.UsageError, "JudgeError": errors.JudgeError,
             "StorageError": errors.StorageError}
    return kinds.get(failed.kind, errors.TabenchError)(failed.message)


# -- the worker process ----------------------------------------------------------------------------


async def _worker_main() -> None:
    from .errors import TabenchError
    from .session import open_grader

    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 20)
    stdin = open(0, "rb", buffering=0, closefd=False)  # noqa: SIM115 (the transport owns it)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)
    out_fd = os.dup(1)
    os.dup2(2, 1)  # a stray print goes to stderr, never into a frame
    pipe = open(out_fd, "wb", buffering=0)  # noqa: SIM115 (the transport owns it)
    transport, out = await loop.connect_write_pipe(_Out, pipe)

    def send(message: object) -> None:
        # Once the pipe is closing (the parent stopped reading: an interrupt) a frame has nobody
        # to go to; writing it would be an error on a closed transport, printed by the loop.
        if not transport.is_closing():
            transport.write(frame(message))

    async def read_frame() -> bytes | None:
        try:
            head = await reader.readexactly(_HEAD)
            return await reader.readexactly(int.from_bytes(head, "little"))
        except asyncio.IncompleteReadError:
            return None  # the parent is gone

    first = await read_frame()
    if first is None:
        return
    config = msgspec.msgpack.decode(first, type=WorkerConfig)
    answers_decoder = msgspec.msgpack.Decoder(list[Answer])
    queue: asyncio.Queue[Answer | None] = asyncio.Queue()
    finished: list[Record] = []

    def flush() -> None:
        if finished:
            send(Records(finished[:]))
            finished.clear()

    concurrency = config.options.concurrency
    try:
        async with open_grader(config.battery, config.options) as grader:
            gc.freeze()  # the battery and the judge, as the single process freezes them
            judge = grader.judge
            send(Hello(judge.info.describe(), getattr(judge, "notice", None)))

            async def grade() -> None:
                while (answer := await queue.get()) is not None:
                    record = await grader.grade(answer)
                    if not finished:
                        loop.call_soon(flush)
                    finished.append(record)

            async def feed() -> bool:
                """Queue the answers; True on the end frame, False when the parent is gone."""
                while (data := await read_frame()) is not None:
                    batch = answers_decoder.decode(data)
                    if not batch:
                        for _ in range(concurrency):
                            queue.put_nowait(None)
                        return True
                    for answer in batch:
                        queue.put_nowait(answer)
                return False

            graders = [asyncio.ensure_future(grade()) for _ in range(concurrency)]
            feeder = asyncio.ensure_future(feed())
            orphaned = asyncio.ensure_future(asyncio.shield(out.closed))  # the parent stopped reading
            try:
                done, _ = await asyncio.wait(
                    [feeder, orphaned, *graders], return_when=asyncio.FIRST_COMPLETED
                )
                for task in done:
                    task.result()  # a grading error (a refused key) is raised here
                if orphaned in done or (feeder in done and not feeder.result()):
                    return  # the parent is gone or not listening: stop grading now
                await asyncio.gather(feeder, *graders)
            finally:
                for task in (feeder, orphaned, *graders):
                    task.cancel()
                await asyncio.gather(feeder, orphaned, *graders, return_exceptions=True)
            flush()
        send(Done())  # after the cache is committed: the parent may stop us now
    except TabenchError as exc:
        send(Failed(type(exc).__name__, str(exc)))
    finally:
        transport.close()  # once what is buffered is written (the parent reads until `Done`)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(out.closed, TERMINATE_GRACE * 5)


class _Out(asyncio.Protocol):
    """The worker's frame pipe; `closed` is set once everything written has left (or the pipe
    broke)."""

    def __init__(self) -> None:
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)


def main() -> None:
    """Entry of a worker process (`WORKER_COMMAND`), started by `WorkerPool`."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when a worker stops
    # What grading imports is imported before `quiet_gc` freezes what exists, so the collector never
    # walks these modules' objects (the single process imports them before it freezes, too).
    import aiohttp  # noqa: F401

    from . import cache, runner, session, transport  # noqa: F401
    from .judges import factory  # noqa: F401
    from .loop import quiet_gc, run_event_loop

    with quiet_gc():
        run_event_loop(_worker_main)


if __name__ == "__main__":
    main()
