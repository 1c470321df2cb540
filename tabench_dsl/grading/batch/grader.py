"""`BatchGrader`: live grading's `Grader` with its judge calls sent as batches (`rounds`).

Everything but the call itself is the live grader's: T1, the reply cache, decoding, the format
re-ask, the stern retry, `adjudicate`, redaction and the records, so a batch grading writes the
very records a live one writes. `_exchange`, where live grading calls the judge, here waits for the
request's result line and turns it into what the call would have given:

    reply       the body a live call receives, decoded by the judge's own `decode`
    refused     the HTTP error a live call would have met (`_http.status_error`): retried in the next
                round when its status is retryable, else final; 401/403/404 stop the grading
    error       a transport failure of that answer, retried in the next round
    unfinished  its batch failed validation, expired or was cancelled: asked again in the next
                round (or, with `live_fallback`, by a live call at once)

Retries in later rounds count against `--retries` as live transport retries do. A refusal that
names another request form (`HttpJudge.ask_again`: OpenAI's `max_completion_tokens`) is sent again
in that form without counting.

`run` keeps `Grader.run`'s contract (the answers to grade; records written as each answer finishes) and
grades `answers_in_flight` answers at a time: every answer in flight is one task, and all of them
together make each round.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import msgspec

from ...core.compiled import CompiledBattery
from ...core.errors import TransportError, UsageError
from ...core.records import Answer, AttemptKind
from ..judges._http import MAX_BODY_BYTES, HttpJudge, cut_body_completion, scrub_line, status_error
from ..judges.base import BatchEndpoint, Completion, Judge, Message
from ..panel import Panel
from ..runner import Grader, RunStats
from .anthropic_batches import AnthropicBatches
from .azure_batches import AzureBatches
from .file_batches import file_service
from .ledger import Ledger, Submitted, ledger_path, read_ledger
from .openai_batches import OpenAIBatches
from .polling import PollPlan
from .rounds import Rounds, custom_id
from .service import BatchService, BatchStatus, LineResult, Wire

#: Answers graded at once: all of them wait together, and their requests make each round.
ANSWERS_IN_FLIGHT = 25_000

#: The answer (system, question) the running task grades: `_exchange` names its request by it.
#: Each answer is graded in a task of its own, so each sees its own.
_answer: contextvars.ContextVar[tuple[str, str]] = contextvars.ContextVar("tabench_batch_answer")


class _AskAgain(Exception):
    """The judge adopted the request form a refusal named: send the request again."""


#: The batch services by the name a judge's `batch_endpoint` gives, each made from the judge's
#: connection (`Wire`) and that endpoint.
BATCH_SERVICES: dict[str, Callable[[Wire, BatchEndpoint], BatchService]] = {
    "openai": lambda wire, at: OpenAIBatches(wire, at.base_url),
    "anthropic": lambda wire, at: AnthropicBatches(wire, at.base_url),
    "azure": lambda wire, at: AzureBatches(wire, at.base_url, at.api_version),
}


def batch_service(judge: Judge, secrets: Iterable[str] = ()) -> BatchService:
    """The batch service of `judge`'s provider (`Judge.batch_endpoint`), called with the judge's
    session and headers; `UsageError` for a judge that has none (builtin, replay)."""
    endpoint = judge.batch_endpoint()
    if endpoint is not None and endpoint.service in BATCH_SERVICES and isinstance(judge, HttpJudge):
        session, headers = judge.connection()
        wire = Wire(session, headers, backend=judge.info.backend, secrets=tuple(secrets))
        return BATCH_SERVICES[endpoint.service](wire, endpoint)
    raise UsageError(
        f"--batch: the {judge.info.describe()} has no batch service; "
        "use an openai:, anthropic: or URL judge (or grade without --batch)"
    )


def known_requests(path: Path) -> dict[str, str]:
    """custom_id -> the last batch of the ledger at `path` holding that request."""
    known: dict[str, str] = {}
    for entry in read_ledger(path):
        if isinstance(entry, Submitted):
            for name, *_ in entry.requests:
                known[name] = entry.id
    return known


class BatchGrader(Grader):
    """A `Grader` whose judge calls go to the provider's batch service (module docstring).

    The ledger goes beside the results file (`ledger_path`) unless `ledger` names it; `on_status`
    hears of every batch's status as it is polled.
    """

    def __init__(
        self,
        battery: CompiledBattery,
        judge: Judge | Panel,
        *,
        ledger: Path | None = None,
        live_fallback: bool = False,
        poll: PollPlan | None = None,
        on_status: Callable[[BatchStatus], None] | None = None,
        answers_in_flight: int = ANSWERS_IN_FLIGHT,
        files: Path | None = None,
        **options: Any,
    ) -> None:
        if isinstance(judge, Panel):
            raise UsageError(
                "--batch grades with one judge, and this grading has a judge panel; "
                "grade the panel live (without --batch), or give one --judge"
            )
        if options.get("repeat", 1) > 1:
            raise UsageError("--batch sends each request once; grade --repeat live (without --batch)")
        super().__init__(battery, judge, **options)
        # `files`: the batch files in that folder (`grade --batch files:DIR`), else the provider's.
        self.service = batch_service(judge, self._secrets) if files is None else file_service(judge, files)
        assert isinstance(judge, HttpJudge)  # batch_service and file_service refused any other
        self.http_judge = judge
        #: Where the ledger says the batches are: the judge's API base, or the batch files' folder.
        self.endpoint = judge.base_url if files is None else str(files.resolve())
        self.ledger_file = ledger
        self.live_fallback = live_fallback
        self.poll = poll or PollPlan.from_env()
        self.on_status = on_status
        self.answers_in_flight = max(1, answers_in_flight)
        self.rounds: Rounds | None = None
        self._more = True

    async def run(
        self,
        answers: Iterable[Answer],
        *,
        concurrency: int | None = None,
    ) -> RunStats:
        """Grade `answers` in rounds of batches (`concurrency` does not apply)."""
        if self.writer is None:
            raise ValueError("BatchGrader.run needs a writer")
        path = self.ledger_file
        if path is None:
            results = getattr(self.writer, "path", None)
            if results is None:
                raise ValueError("BatchGrader.run needs a ledger path when its writer has none")
            path = ledger_path(results)
        with Ledger(path) as ledger:
            rounds = self.rounds = Rounds(
                self.service,
                ledger,
                known=known_requests(path),
                endpoint=self.endpoint,
                model=self.http_judge.params.model,
                poll=self.poll,
                secrets=self._secrets,
                on_status=self.on_status,
            )
            self._more = True  # until the feed runs dry
            feed = self._feed(iter(answers))
            tasks: set[asyncio.Task] = set()
            try:
                while True:
                    self._top_up(feed, tasks, rounds)
                    await rounds.quiet()
                    if rounds.alive == 0:
                        if not self._more:
                            break
                        continue
                    await rounds.next_round()
            except BaseException:
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                raise
        return self.stats

    def _feed(self, answers: Iterator[Answer]) -> Iterator[Answer]:
        """The answers to grade; `_more` turns False once every answer has been handed out."""
        yield from answers
        self._more = False

    def _top_up(self, feed: Iterator[Answer], tasks: set[asyncio.Task], rounds: Rounds) -> None:
        """Start answers until `answers_in_flight` are in flight or none are left."""
        while rounds.alive < self.answers_in_flight:
            answer = next(feed, None)
            if answer is None:
                return
            task = asyncio.create_task(self._grade_one(answer))
            rounds.alive += 1
            tasks.add(task)
            task.add_done_callback(tasks.discard)
            task.add_done_callback(rounds.answer_done)

    async def _grade_one(self, answer: Answer) -> None:
        _answer.set((answer.system, answer.question))
        record = await self.grade(answer)
        assert self.writer is not None  # `run` checked it
        self.writer.write(record)
        self.stats.count(record)
        if self.on_record is not None:
            self.on_record(record)

    async def _exchange(
        self, judge: Judge, kind: AttemptKind, messages: list[Message]
    ) -> tuple[Completion, int]:
        # `judge` is `self.http_judge`, or its twin with a larger token budget (the re-ask of a
        # cut-off reply): a batch grading has one judge (`batch_service` refuses a panel).
        assert self.rounds is not None  # set by `run`, the only way in
        system, question = _answer.get()
        asking = judge if isinstance(judge, HttpJudge) else self.http_judge
        retries = 0
        while True:
            body = msgspec.json.encode(asking.full_body(messages))
            name = custom_id(system, question, kind, body)
            entry = self.service.entry(name, body)
            del body  # the entry holds it: one copy per answer in flight, not two
            result = await self.rounds.ask(name, system, question, kind, entry)
            try:
                return self._completion(result), retries
            except _AskAgain:
                continue
            except TransportError as exc:
                if result.kind == "unfinished" and self.live_fallback:
                    completion, more = await super()._exchange(judge, kind, messages)
                    return completion, retries + more
                if not exc.retryable or retries >= self.policy.attempts - 1:
                    raise
                retries += 1

    def _completion(self, result: LineResult) -> Completion:
        """What a live call would have given for `result`; `TransportError` when it failed."""
        judge = self.http_judge
        if result.kind == "reply":
            if len(result.payload) > MAX_BODY_BYTES:
                return cut_body_completion(result.payload, 0.0)
            return judge.decode(result.payload, 0.0)
        if result.kind == "refused":
            if judge.adapt_to_refusal(result.status, result.payload):
                raise _AskAgain
            raise status_error(judge.info.backend, result.status, {}, result.payload, secrets=self._secrets)
        # error, unfinished: a transport failure of this answer (an unrun request may be run later).
        raise TransportError(
            f"batch: {scrub_line(result.message, self._secrets)}",
            retryable=result.retryable or result.kind == "unfinished",
        )
