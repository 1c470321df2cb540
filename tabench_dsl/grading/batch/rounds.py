"""The rounds of a batch grading: gather every request the answers in flight are waiting for, send
them as batches, wait for the batches to end, hand each answer its result, and start again.

Each answer in flight is graded by the live grading's own code (`runner.Grader`, see `grader`);
where that code would call the judge, the answer waits here (`ask`) for a result line. When every
answer in flight is either finished or waiting (`quiet`), the requests waiting make the next round
(`next_round`): split into batches under the service's request and size limits, each batch written
to the ledger as soon as the provider accepts it, then all of them polled until they have ended,
their result lines read and handed out. What an answer does with its line (decode it, re-ask, stern
retry, give up) is the grader's business, and its next request joins the next round.

A request is named by its `custom_id` (`custom_id`): a hash of the answer's system and question,
the attempt kind and the exact request body, so the same request in a later run has the same name.
Requests a batch of an earlier run holds (the ledger's `known`) wait for that batch instead of
being sent again; two answers making the very same request share one.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable, Iterable
from datetime import UTC, datetime

from ...core.errors import JudgeError, TransportError, UsageError
from ...core.redact import scrub
from ..reachability import FATAL_STATUSES
from .ledger import Ended, Ledger, Submitted
from .polling import PollPlan
from .service import BatchService, BatchStatus, LineResult

#: Failed polls (or downloads) of one batch in a row after which the grading stops (`--resume`
#: picks the batch up again from the ledger).
MAX_POLL_FAILURES = 10
#: Statuses that say a batch, or its results, no longer exist (a ledger entry older than the
#: provider keeps them): its requests are asked again rather than the grading stopped.
GONE_STATUSES = frozenset({404, 410})


def custom_id(system: str, question: str, kind: str, body: bytes) -> str:
    """The name of one request in a batch: `tb-KIND-` and 40 hex digits of the sha256 of the
    answer's system and question, the attempt kind and the request body (at most 50 characters
    of [a-z0-9-], within both providers' rules)."""
    digest = hashlib.sha256()
    for part in (system, question, kind):
        digest.update(part.encode("utf-8", "surrogatepass") + b"\0")
    digest.update(body)
    return f"tb-{kind}-{digest.hexdigest()[:40]}"


class _Request:
    """One request of a round and the answers waiting for its result."""

    __slots__ = ("batch", "custom_id", "entry", "future", "kind", "question", "system")

    def __init__(self, custom_id: str, system: str, question: str, kind: str, entry: bytes) -> None:
        self.custom_id = custom_id
        self.system = system
        self.question = question
        self.kind = kind
        self.entry = entry  # the batch input line; dropped once submitted
        self.batch: str | None = None
        self.future: asyncio.Future[LineResult] = asyncio.get_running_loop().create_future()


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class Rounds:
    """The round engine of one batch grading (see the module docstring)."""

    def __init__(
        self,
        service: BatchService,
        ledger: Ledger,
        *,
        known: dict[str, str],
        endpoint: str,
        model: str,
        poll: PollPlan,
        secrets: Iterable[str] = (),
        on_status: Callable[[BatchStatus], None] | None = None,
    ) -> None:
        self.service = service
        self.ledger = ledger
        self.known = known
        self.endpoint = endpoint
        self.model = model
        self.poll = poll
        self.secrets = tuple(secrets)
        self.on_status = on_status
        self.pending: dict[str, _Request] = {}
        self.alive = 0  # answers in flight
        self.blocked = 0  # of them, those waiting in `ask`
        self.failure: BaseException | None = None
        self.changed = asyncio.Event()
        #: What the grading did: rounds run, requests and batches submitted.
        self.rounds = 0
        self.submitted = 0
        self.batches = 0

    async def ask(self, custom_id: str, system: str, question: str, kind: str, entry: bytes) -> LineResult:
        """Wait for the result line of one request, `entry` in the service's input form (sent in the
        next round, unless a batch already holds it)."""
        request = self.pending.get(custom_id)
        if request is None:
            request = _Request(custom_id, system, question, kind, entry)
            request.batch = self.known.pop(custom_id, None)
            if request.batch is not None:
                request.entry = b""
            self.pending[custom_id] = request
        del entry  # held by the request until it is submitted, and by nothing else
        self.blocked += 1
        self.changed.set()
        try:
            return await asyncio.shield(request.future)
        finally:
            self.blocked -= 1

    def answer_done(self, task: asyncio.Task) -> None:
        """An answer in flight is finished (its record written), failed or cancelled."""
        self.alive -= 1
        if not task.cancelled() and task.exception() is not None and self.failure is None:
            self.failure = task.exception()
        self.changed.set()

    async def quiet(self) -> None:
        """Return once every answer in flight is finished or waiting for a result line; raise what
        made one fail (a refused key, a full disk)."""
        while self.failure is None and self.alive != self.blocked:
            self.changed.clear()
            await self.changed.wait()
        if self.failure is not None:
            raise self.failure

    async def next_round(self) -> None:
        """Send the requests waiting, wait for their batches to end, hand out the results."""
        requests, self.pending = list(self.pending.values()), {}
        self.rounds += 1
        groups: dict[str, list[_Request]] = {}
        fresh = []
        for request in requests:
            if request.batch is None:
                fresh.append(request)
            else:
                groups.setdefault(request.batch, []).append(request)
        for chunk in self._chunks(fresh):
            status = await self._submit(chunk)
            if status is not None:
                groups[status.id] = chunk
        await asyncio.gather(*(self._collect(batch, group) for batch, group in groups.items()))

    def _chunks(self, requests: list[_Request]) -> Iterable[list[_Request]]:
        """`requests` in runs under the service's request count and input size limits."""
        chunk: list[_Request] = []
        size = 0
        for request in requests:
            grown = size + len(request.entry) + 2
            if chunk and (len(chunk) >= self.service.max_requests or grown > self.service.max_bytes):
                yield chunk
                chunk, grown = [], len(request.entry) + 2
            chunk.append(request)
            size = grown
        if chunk:
            yield chunk

    async def _submit(self, chunk: list[_Request]) -> BatchStatus | None:
        """Submit one batch and enter it in the ledger; None when the service refused it (each of its
        requests then has that error as its result)."""
        entries = [r.entry for r in chunk]
        for request in chunk:
            request.entry = b""  # `entries` holds them until `submit` has joined them
        try:
            status = await self.service.submit(entries)
        except TransportError as exc:
            self._fatal(exc, "cannot submit a batch")
            failed = LineResult("error", message=self._clean(str(exc)), retryable=exc.retryable)
            for request in chunk:
                request.future.set_result(failed)
            return None
        self.ledger.append(
            Submitted(
                id=status.id,
                service=self.service.service,
                endpoint=self.endpoint,
                model=self.model,
                round=self.rounds,
                time=_now(),
                requests=[(r.custom_id, r.system, r.question, r.kind) for r in chunk],
            )
        )
        self.submitted += len(chunk)
        self.batches += 1
        for request in chunk:
            request.batch = status.id
        self._report(status)
        return status

    async def _collect(self, batch_id: str, requests: list[_Request]) -> None:
        """Poll one batch until it has ended, then hand each request its result line; a request the
        batch gives no line for was never run (`unfinished`)."""
        delays = self.poll.delays()
        failures = 0
        while True:
            try:
                status = await self.service.status(batch_id)
            except TransportError as exc:
                if exc.status in GONE_STATUSES:  # deleted or aged out: none of its requests will run
                    status = BatchStatus(id=batch_id, state="gone", ended=True, problem=self._clean(str(exc)))
                    break
                self._fatal(exc, f"cannot poll batch {batch_id}")
                failures += 1
                if failures >= MAX_POLL_FAILURES:
                    raise self._stop(exc, f"cannot poll batch {batch_id}") from None
            else:
                failures = 0
                self._report(status)
                if status.ended:
                    break
            await asyncio.sleep(next(delays))
        self.ledger.append(Ended(id=batch_id, state=status.state, time=_now()))
        waiting = {r.custom_id: r for r in requests}
        while True:
            try:
                async for name, result in self.service.results(status):
                    request = waiting.pop(name, None)
                    if request is not None and not request.future.done():
                        request.future.set_result(result)
                break
            except TransportError as exc:
                if exc.status in GONE_STATUSES:  # results no longer kept: what is left is asked again
                    break
                self._fatal(exc, f"cannot read the results of batch {batch_id}")
                failures += 1
                if failures >= MAX_POLL_FAILURES:
                    raise self._stop(exc, f"cannot read the results of batch {batch_id}") from None
                await asyncio.sleep(next(delays))
        why = f"batch {batch_id} ended {status.state} without running it"
        if status.problem:
            why += f" ({self._clean(status.problem)})"
        unrun = LineResult("unfinished", message=why)
        for request in waiting.values():
            if not request.future.done():
                request.future.set_result(unrun)

    def _report(self, status: BatchStatus) -> None:
        if self.on_status is not None:
            self.on_status(status)

    def _clean(self, text: str) -> str:
        return scrub(text, self.secrets)

    def _fatal(self, exc: TransportError, doing: str) -> None:
        """A refused key, an unknown model or a wrong base URL stops the grading, as live."""
        if exc.stops_run:
            raise UsageError(
                f"the batch service refused the request: {doing}: {self._clean(str(exc))}"
            ) from None
        if exc.status in FATAL_STATUSES:
            raise JudgeError(
                f"the batch service refused the request: {doing}: {self._clean(str(exc))}"
            ) from None

    def _stop(self, exc: TransportError, doing: str) -> JudgeError:
        return JudgeError(
            f"{doing}: {self._clean(str(exc))}; the batches are in the ledger, --resume waits for them again"
        )
