"""The parent's side: starts the worker processes, hands them answers, writes what they return.

The parent alone writes the results file, so every guarantee of `ResultsWriter` holds: one writer
(flock), append-only, a whole line per record, written the moment the record is received.
Backpressure: at most `IN_FLIGHT_FACTOR x share` answers in flight per worker, topped up as records
come back. The parent alone decides the order (`dispatch`): grouped by question, a question's first
answer alone until its record comes back with a fresh reply, as in one process; the workers grade
what they are handed in the order handed. Every worker sends at the pace of one pacer, the
parent's (`shared_pacer.PacerHost`), so one worker's 429 slows them all. An interruption
(`WorkerPool.close` after an unfinished `run`) closes the workers' input and terminates them;
records already received are whole, those in flight are not written (resume grades them). A
worker that dies: its answers in flight are not written; the pool says so, goes on with the
others and counts it in `RunStats.workers_lost`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterable

import msgspec

from ...core.compiled import CompiledBattery
from ...core.errors import UsageError
from ...core.records import Answer, Record
from ..dispatch import FileOrder, QuestionOrder, groups_by_question
from ..judges.factory import choose_judge
from ..runner import RunStats
from ..session import GradingOptions
from .frames import (
    STREAM_LIMIT,
    TERMINATE_GRACE,
    Failed,
    Hello,
    Notice,
    Paced,
    Records,
    Turn,
    WorkerConfig,
    frame,
    read_frame,
    reply_decoder,
)
from .shared_pacer import PacerHost

#: Answers in flight per worker, as a multiple of its share of the concurrency.
IN_FLIGHT_FACTOR = 2
#: How a worker process is started: the module imported (not run as `__main__`, a second copy).
#: Tests find live workers by this text in /proc/*/cmdline.
WORKER_COMMAND = "from tabench_dsl.grading.parallel.worker import main; main()"


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
        raise UsageError(f"--workers must be a number of at least 1, or auto (got {text!r})")
    return count


class _Worker:
    def __init__(self, index: int, share: int, proc: subprocess.Popen) -> None:
        self.index = index
        self.share = share
        self.cap = share * IN_FLIGHT_FACTOR
        self.proc = proc
        #: The answers handed to this worker and not yet back as records, by (system, question).
        self.out: dict[tuple[str, str], Answer] = {}
        self.ended = False  # the end frame was sent (or the worker is gone)
        self.reader: asyncio.StreamReader | None = None
        self.pipe: asyncio.WriteTransport | None = None

    @property
    def in_flight(self) -> int:
        return len(self.out)

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
        self._order: QuestionOrder | FileOrder = FileOrder(())
        self._exhausted = False
        self._completed = False
        self._say: Callable[[str], None] | None = None
        self._said: set[str] = set()
        #: The one pacer every worker sends by (`shared_pacer`).
        self.pacing = PacerHost()

    def start(self) -> None:
        """Launch the worker processes; they wait for their configuration."""
        for index, share in enumerate(self.shares):
            proc = subprocess.Popen(
                [sys.executable, "-c", WORKER_COMMAND],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                bufsize=0,
                start_new_session=True,
            )
            self._workers.append(_Worker(index, share, proc))

    async def run(
        self,
        config: WorkerConfig,
        answers: Iterable[Answer],
        *,
        writer,
        on_record: Callable[[Record], None] | None = None,
        on_notice: Callable[[str], None] | None = None,
    ) -> RunStats:
        """Grade `answers` (the grading plan's: `plan.GradingPlan.answers`) with `config` (its
        concurrency is split between the workers, and so are its rate limits); return the run's
        counts. `on_notice` gets each line a judge says during the run (`Judge.notice`), once."""
        self._say = on_notice
        if not self._workers:
            self.start()
        pending = iter(answers)
        if _groups(config.battery, config.options):
            # As many answers may be out as the workers are handed at most.
            self._order = QuestionOrder(pending, concurrency=sum(w.cap for w in self._workers))
        else:
            self._order = FileOrder(pending)
        loop = asyncio.get_running_loop()
        tasks: list[asyncio.Future] = []
        try:
            for worker in self._workers:
                reader = worker.reader = asyncio.StreamReader(limit=STREAM_LIMIT)
                await loop.connect_read_pipe(
                    functools.partial(asyncio.StreamReaderProtocol, reader), worker.proc.stdout
                )
                worker.pipe, _ = await loop.connect_write_pipe(asyncio.Protocol, worker.proc.stdin)
                options = config.options
                share = msgspec.structs.replace(
                    options,
                    concurrency=worker.share,
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
            self.pacing.close()
            for serving in tasks:
                serving.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for worker in self._workers:
                if worker.pipe is not None:
                    worker.pipe.close()
        return self.stats

    def _top_up(self, worker: _Worker) -> None:
        """Hand `worker` answers up to its cap (in one frame, once a quarter of the cap is free);
        send the end frame once no answers are left."""
        if worker.ended:
            return
        room = worker.cap - worker.in_flight
        if not self._exhausted and (room >= max(1, worker.cap // 4) or worker.in_flight == 0):
            batch: list[Answer] = []
            while len(batch) < room:
                answer = self._order.take()
                if answer is None:
                    # None left at all, or some wait for an opener's record: then a later top-up.
                    self._exhausted = not self._order.held
                    break
                batch.append(answer)
            if batch:
                for answer in batch:
                    worker.out[(answer.system, answer.question)] = answer
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
            data = await read_frame(stream)
            if data is None:
                status = await asyncio.to_thread(worker.proc.wait)
                stats.workers_lost += 1
                self.on_log(
                    f"grading worker {worker.index + 1} ended unexpectedly (exit status {status}); its "
                    f"{worker.in_flight} answer(s) in flight are not recorded (--resume grades them)"
                )
                worker.ended = True
                self.pacing.forget(worker.index)
                # Its openers will never be back: their questions' next answers open them instead.
                for answer in worker.out.values():
                    self._order.dropped(answer)
                worker.out.clear()
                for other in self._workers:
                    self._top_up(other)
                return
            message = reply_decoder.decode(data)
            if type(message) is Turn:
                self.pacing.turn(worker.index, message, worker.send)
            elif type(message) is Paced:
                self.pacing.paced(worker.index, message)
            elif type(message) is Records:
                for record in message.records:
                    writer.write(record)
                    worker.out.pop((record.system, record.question), None)
                    self._order.finished(record)
                    stats.count(record)
                    if on_record is not None:
                        on_record(record)
                self._top_up(worker)
                if self._order.held:  # a reply may have let answers go that another worker can take
                    for other in self._workers:
                        if other is not worker:
                            self._top_up(other)
            elif type(message) is Hello:
                stats.judge = message.judge
            elif type(message) is Notice:
                if message.text not in self._said and self._say is not None:
                    self._said.add(message.text)  # every worker's judge says it: shown once
                    self._say(message.text)
            elif type(message) is Failed:
                raise message.error()
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


def _groups(battery: CompiledBattery, options: GradingOptions) -> bool:
    """Whether the answers go grouped by question (`dispatch.groups_by_question`), worked out from
    the judge the workers will choose (the parent opens none): builtin and replay have no prompt
    cache. A choice that fails fails in the workers too, which say why: file order then."""
    try:
        name = choose_judge(options.judge, model=options.model, manifest_judge=battery.judge).name
    except UsageError:
        return False
    return groups_by_question(battery, deterministic=name.partition(":")[0].lower() in ("builtin", "replay"))


def _signal(proc: subprocess.Popen, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(sig)
