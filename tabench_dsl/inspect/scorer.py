"""`battery_scorer`: an Inspect AI `Scorer` that grades each sample with a tabench battery.

Each sample is one answer, graded by tabench's own `Grader.grade` (runner.py): T1, the battery's
exact compiled prompt, the format re-ask, the one stern retry, adjudicate. The question is the
sample id (or the metadata field `question_from`); the sample's `target` is not read, since the
battery's gold key is what the prompt was compiled with. The answer is the final completion.

Verdicts as Inspect scores:

    pass                 C (CORRECT)
    fail                 I (INCORRECT)
    adjudicate           unscored (NaN, reason "adjudicate"): a person decides
    error (transport)    unscored (NaN, reason "grader_failed"): tabench would grade it again

Why adjudicate is not NOANSWER ("N"): Inspect's `accuracy()` maps N to 0 (`value_to_float`), the
same as I, so an answer the judge could not settle would count as wrong. The value Inspect's
metrics leave out is NaN (`Score.unscored`): the sample is kept in the log with its verdict,
cause and reason in the score's metadata and explanation, counted in the results' unscored
samples, and left out of accuracy and stderr. So Inspect's accuracy is pass / (pass + fail), the
share of the settled answers; tabench's own score (`tabench totals` on the scorer's `out`) counts
adjudicate against the system until a person decides: pass / (pass + fail + adjudicate).

The grading resources (the HTTP session, the judge, the reply cache, the results file) are shared
by the samples Inspect scores at once (`_SharedGrader`) and closed when the last of them is done,
so nothing stays open after an eval or `inspect score` ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from inspect_ai.scorer import CORRECT, INCORRECT, Score, Scorer, Target, accuracy, scorer, stderr
from inspect_ai.solver import TaskState

from ..core.compiled import CompiledBattery
from ..core.records import CAUSE_TEXTS, Answer, Record
from ..grading.inspect_log import epoch_system
from ..grading.runner import Grader
from ..grading.session import GradingOptions

#: `judge=` value that grades through Inspect's model API instead of a tabench backend.
INSPECT_JUDGE = "inspect"


@scorer(metrics=[accuracy(), stderr()])
def battery_scorer(
    battery: str,
    judge: str | None = None,
    model: str | None = None,
    question_from: str | None = None,
    out: str | None = None,
    cache: str | None = None,
    concurrency: int = 8,
    retries: int = 5,
    timeout: float = 120.0,
) -> Scorer:
    """Grade each sample against the tabench battery at `battery` (its folder or battery.yaml).

    `judge` and `model` are `tabench grade`'s `--judge` and `--model` (a backend, a server URL,
    `replay:FILE`; by default the battery's judge, else the builtin lexical judge), or
    `judge="inspect"` to ask through Inspect's `get_model(model)` (with no `model`: the model bound
    to the `grader` role, else the model under evaluation). `question_from` names the sample
    metadata field holding the question id (default: the sample id). `out` is a results file the
    records are appended to, for `tabench totals`, `view` and `adjudicate`; `cache` a reply cache
    file. The battery is compiled here, so a bad battery fails before any sample is scored.
    """
    compiled = _compile(battery)
    if out is not None:  # here, not at the first sample: a wrong path fails the task before it runs
        from ..outputs import check_results_out

        check_results_out(out, option="out")
    shared = _SharedGrader(_grader_opener(compiled, judge, model, out, cache, concurrency, retries, timeout))

    async def score(state: TaskState, target: Target) -> Score:
        answer = _sample_answer(state, question_from, compiled)
        if isinstance(answer, Score):
            return answer
        async with shared.use() as grader:
            record = await grader.grade(answer)
            if grader.writer is not None:
                grader.writer.write(record)
        return record_score(record)

    return score


def _grader_opener(
    compiled: CompiledBattery,
    judge: str | None,
    model: str | None,
    out: str | None,
    cache: str | None,
    concurrency: int,
    retries: int,
    timeout: float,
) -> Callable[[], contextlib.AbstractAsyncContextManager[Grader]]:
    """How the shared grader is opened: with Inspect's model API as the judge (`judge="inspect"`),
    else with the tabench judge `judge` and `model` name."""
    if judge == INSPECT_JUDGE:
        return functools.partial(_open_inspect_grader, compiled, model, out, concurrency, timeout)
    options = GradingOptions(
        judge=judge, model=model, timeout=timeout, retries=retries, concurrency=concurrency, cache=cache
    )
    return functools.partial(_open_tabench_grader, compiled, options, out)


def _sample_answer(state: TaskState, question_from: str | None, compiled: CompiledBattery) -> Answer | Score:
    """The answer a sample gives to grade, or the unscored `Score` saying why it gives none: no
    question id, a question the battery lacks, an empty completion."""
    question = _question(state, question_from)
    if question is None:
        return Score.unscored(
            reason="scoring_failed",
            explanation=f"sample {state.sample_id!r}: no metadata field {question_from!r} "
            "holding a question id (question_from)",
        )
    if question not in compiled.questions:
        return Score.unscored(
            reason="scoring_failed",
            explanation=f"sample {state.sample_id!r}: the battery {compiled.name!r} has no "
            f"question {question!r}",
        )
    text = state.output.completion
    if not text:
        return Score.unscored(reason="no_response", explanation="empty completion: nothing to grade")
    return Answer(epoch_system(str(state.model), state.epoch), question, text)


def _compile(battery: str) -> CompiledBattery:
    from ..language.battery import load_battery
    from ..language.render import compile_battery

    return compile_battery(load_battery(battery))


def _question(state: TaskState, question_from: str | None) -> str | None:
    if question_from is None:
        return str(state.sample_id)
    value = (state.metadata or {}).get(question_from)
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return None


def record_score(record: Record) -> Score:
    """The Inspect `Score` of a tabench record (see the module docstring for the mapping)."""
    metadata: dict[str, Any] = {
        "verdict": record.verdict,
        "cause": record.cause,
        "tier": record.tier,
        "reason": record.reason,
        "facets": dict(record.facets),
        "warnings": list(record.warnings),
        "judge": record.judge.describe(),
        "judge_calls": sum(1 for a in record.attempts if not a.cache_hit),
        "prompt_sha256": record.prompt_sha256,
        "system": record.system,
        "question": record.question,
    }
    if record.verdict in ("pass", "fail"):
        value = CORRECT if record.verdict == "pass" else INCORRECT
        return Score(value=value, answer=record.graded_answer, explanation=record.reason, metadata=metadata)
    cause = record.cause or "transport"
    explanation = f"{record.verdict} ({cause}): {CAUSE_TEXTS.get(cause, cause)}"
    if record.reason:
        explanation += f"; {record.reason}"
    return Score.unscored(
        reason="adjudicate" if record.verdict == "adjudicate" else "grader_failed",
        answer=record.graded_answer,
        explanation=explanation,
        metadata=metadata,
    )


@contextlib.asynccontextmanager
async def _open_tabench_grader(
    compiled: CompiledBattery, options: GradingOptions, out: str | None
) -> AsyncIterator[Grader]:
    """A grader with the tabench judge `options` name (`session.open_grader`), appending to `out`."""
    from ..grading.session import open_grader

    with _results_writer(compiled, out) as writer:
        async with open_grader(compiled, options, writer=writer) as grader:
            yield grader


@contextlib.asynccontextmanager
async def _open_inspect_grader(
    compiled: CompiledBattery, model: str | None, out: str | None, concurrency: int, timeout: float
) -> AsyncIterator[Grader]:
    """A grader whose judge asks through Inspect's model API. Inspect retries a generation
    itself, so tabench asks once (`RetryPolicy(attempts=1)`)."""
    from inspect_ai.model import get_model

    from ..grading.judges.decoding import decoding_params
    from ..grading.transport import ExchangeGate, RetryPolicy
    from .judge import InspectModelJudge

    decoding = decoding_params(None, compiled.judge, compiled.settings.judge)
    inspect_model = get_model(model) if model else get_model(role="grader")
    judge = InspectModelJudge(
        inspect_model,
        temperature=decoding.temperature,
        max_tokens=decoding.max_tokens,
        reasoning_effort=decoding.reasoning_effort,
        reasoning_tokens=decoding.thinking_budget,
    )
    with _results_writer(compiled, out) as writer:
        yield Grader(
            compiled,
            judge,
            writer=writer,
            policy=RetryPolicy(attempts=1, timeout=timeout),
            limiter=ExchangeGate(concurrency),
        )


@contextlib.contextmanager
def _results_writer(compiled: CompiledBattery, out: str | None):
    """The results file `out`, opened to append (nothing when `out` is None)."""
    if out is None:
        yield None
        return
    from ..outputs import check_results_out
    from ..store.results import ResultsWriter

    check_results_out(out, option="out")
    with ResultsWriter(out) as writer:
        yield writer


class _SharedGrader:
    """One grader for the samples being scored at once, opened by the first and closed by the
    last: Inspect scores samples concurrently and says nothing when an eval is over, so the
    grader's HTTP session, cache and results file are held exactly while some sample uses them.

    Opening happens in a task of its own, which every waiting sample awaits (shielded, so one
    sample's cancellation cancels no other's grading); a failure to open (a bad judge, a missing
    key) is every waiting sample's error, and the next sample tries again."""

    def __init__(self, opener: Callable[[], contextlib.AbstractAsyncContextManager[Grader]]) -> None:
        self._opener = opener
        self._users = 0
        self._ready: asyncio.Future[Grader] | None = None
        self._stack: contextlib.AsyncExitStack | None = None
        self._closing: Awaitable[None] | None = None

    async def _open(self) -> Grader:
        stack = contextlib.AsyncExitStack()
        grader = await stack.enter_async_context(self._opener())
        self._stack = stack
        return grader

    @contextlib.asynccontextmanager
    async def use(self) -> AsyncIterator[Grader]:
        while self._closing is not None:  # the last user of the previous grader is closing it
            await self._closing
        self._users += 1
        try:
            if self._ready is None:
                self._ready = asyncio.ensure_future(self._open())
            yield await asyncio.shield(self._ready)
        finally:
            self._users -= 1
            if self._users == 0:
                await self._close()

    async def _close(self) -> None:
        ready, stack = self._ready, self._stack
        self._ready, self._stack = None, None
        if ready is not None and not ready.done():
            ready.cancel()
            with contextlib.suppress(BaseException):
                await ready
        if stack is None:
            return
        closing = asyncio.ensure_future(stack.aclose())
        self._closing = closing
        try:
            await asyncio.shield(closing)
        finally:
            self._closing = None
