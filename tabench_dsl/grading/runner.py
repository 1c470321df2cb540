"""The grading loop (docs/language.md section 8): T1, the judge call, the format re-ask, the stern retry,
adjudicate, the cache and the results file.

For each answer, its reasoning blocks cut first (`core.reasoning`: T1 and the judge read the final
answer; the record keeps the answer as given, and `reasoning` says what was cut), then routed to
its tier by `route` (the rule the dry run counts by too):

    over `max_answer_bytes` of UTF-8           -> adjudicate (oversized); no judge call, no T1
    T1 passes (battery and question allow T1)  -> record tier t1, pass; no judge call (with
                     `--t1-audit`, a hashed share of them is also graded below, the verdict kept in
                     `audit` while the T1 pass stands: `shards.audit_share`)
    the question's `match` check matches       -> record tier match, pass; no judge call (audited
                     as T1's passes are); with `decides`, a reading found that differs -> fail
                     (`core.closed_match`); an answer it cannot read goes on to the judge
    else ask "first"  [system: SYSTEM, user: USER]
      malformed      -> ask "format" with the same messages; malformed again -> adjudicate (malformed)
      fail with a pass-shaped reason
                     -> ask "stern" [system: SYSTEM, user: STERN]; a consistent reply is final;
                        a contradiction or a malformed reply again -> adjudicate (contradiction)
      pass with a fail-shaped reason -> kept, with a warning
    a reply over 64 KiB is malformed (cut to that when recorded and cached)
    every reply is decoded without its reasoning blocks; a refusal, tool calls or no text is
                     malformed, and twice -> adjudicate (refusal, or malformed) (`reply_endings`)
    a reply cut off at its token budget -> the same ask once more with twice the budget; cut off
                     again -> adjudicate (truncated)
    transport retries run out on any ask -> error (transport); resume grades it again

With a judge `Panel`, every judge of it runs the steps above on its own, all at once (`judge_step`);
the record keeps each judge's outcome as a `PanelVote` and `panel.decide` makes the verdict.

The judge's steps live in `judge_step`, each ask (cache, exchange, decoding) in `asking`, the
records in `record_maker`; this module runs the loop around them. Every ask is recorded as an
`Attempt`. The cache key carries the attempt kind, so the format re-ask
(same messages as the first ask) has its own entry and a rerun replays the same sequence.

Concurrency: `concurrency` workers pull answers from one shared order, the `ExchangeGate` gates
the exchanges in flight. The order is `dispatch.QuestionOrder` (grouped by question, a question's
first answer alone until its reply is back, so the provider's prompt cache holds its SYSTEM for the
rest; answers read ahead in a bounded window), or the answers file's own order (`FileOrder`, the file
streamed) with `judge: {prompt_cache: false}` or a judge with no prompt cache (builtin, replay). A
worker writes its record as one line as soon as the answer is graded; a cancelled worker (Ctrl-C)
writes nothing, so a record is never half written and never written twice.

Decided where the spec is silent:
- a T1 record carries the run's judge (`judge`), with tier `t1` and no attempts: nobody was asked;
- an oversized answer is not tried against T1 either: the longer an answer, the likelier it holds
  every gold token by chance (or by stuffing), so a person decides; its record has tier `t2` and no
  attempts, and keeps the whole answer for that person to read;
- an `adjudicate` or `error` record has no facets; its reason says what went wrong (for a
  contradiction, the last reason the judge gave);
- HTTP 401, 403 and 404 (`FATAL_STATUSES`) stop the whole run (`JudgeUnusable`): a refused key, an
  unknown model or a wrong base URL means no answer could be graded with that configuration; so do
  a judge's first calls all failing to connect (`reachability`); a refusal for want of credit
  (`TransportError.stops_run`: OpenAI's 429 `insufficient_quota`, Anthropic's credit-balance 400)
  stops it too, as a `UsageError` (exit 2): the records written are kept and `--resume` continues
  once the account has credit;
- a judge that is no language model (builtin) or replays recorded replies is not cached
  (`JudgeInfo.deterministic`);
- the values of OPENAI_API_KEY / ANTHROPIC_API_KEY and key-shaped words are scrubbed from every
  error message recorded and from every reply where it enters tabench (`asking.Asker.received`), before
  it is decoded, cached or written: a judge that echoes a key in a successful reply leaves it in no
  reason, facet, attempt, cache entry or results line (`redact.scrub`).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterable, Mapping

import msgspec

from ..core.closed_match import match_reason
from ..core.compiled import CompiledBattery, CompiledQuestion
from ..core.errors import UsageError
from ..core.reasoning import cut_reasoning, reasoning_info
from ..core.records import Answer, AttemptKind, Audit, Record
from ..core.redact import secrets_in
from ..core.tiers import t1_reason
from ..store.results import RecordSink
from .asking import Asker
from .cache import ReplyCache
from .dispatch import SINGLE_PROCESS_OPEN_AHEAD, FileOrder, QuestionOrder, groups_by_question
from .judge_step import JudgeStep
from .judges.base import Completion, Judge, Message
from .oversized import cut_answer, oversized_reason
from .panel import Panel
from .record_maker import RecordMaker
from .repeats import combine_repeats
from .route import MAX_ANSWER_BYTES, Route, Router
from .spend_cap import SpendCap, SpendCapReached, check_cappable
from .transport import ExchangeGate, RetryPolicy, call_with_retries
from .trap_check import t1_deferred

#: Answers a worker grades between two turns it gives the event loop. The builtin judge, T1 and
#: `match` decide without awaiting anything that waits, so a worker grading only those would hold
#: the loop until the run ends, and Ctrl-C (a cancel the loop runs, `core.interrupts`) would wait for
#: it; one turn in so many answers costs nothing measurable.
ANSWERS_PER_TURN = 256


class RunStats(msgspec.Struct):
    """What one run did (the totals come from the results file)."""

    graded: int = 0
    skipped: int = 0
    t1: int = 0
    #: Answers a question's `match` check decided (tier `match`), without a judge call.
    matched: int = 0
    passed: int = 0
    failed: int = 0
    adjudicate: int = 0
    errors: int = 0
    calls: int = 0
    cache_hits: int = 0
    #: Who judged, as the run summary names it (a non-language-model judge says so).
    judge: str = ""
    #: Grading worker processes (`--workers N`) that ended before finishing their answers.
    workers_lost: int = 0
    #: `--max-cost`: whether the cap stopped the grading, and the priced spend it counted (USD).
    spend_capped: bool = False
    spent_usd: float | None = None

    def count(self, record: Record) -> None:
        """Count one record written."""
        self.graded += 1
        if record.tier == "t1":
            self.t1 += 1
        elif record.tier == "match":
            self.matched += 1
        verdict = record.verdict
        if verdict == "pass":
            self.passed += 1
        elif verdict == "fail":
            self.failed += 1
        elif verdict == "adjudicate":
            self.adjudicate += 1
        else:
            self.errors += 1
        for attempt in record.all_attempts():
            if attempt.cache_hit:
                self.cache_hits += 1
            else:
                self.calls += 1


class Grader:
    """Grade answers of one compiled battery with one judge or a `Panel` of judges, appending records
    to `writer` (`run` needs one; a caller of `grade` alone, such as a `--workers` process, need not
    give it).

    `cache` is None for `--no-cache`; `on_record` is called after each record is written.
    `env` is searched for keys to scrub from replies and error messages (default: the process
    environment). An answer over `max_answer_bytes` of UTF-8 ends `adjudicate` unsent (`oversized`).
    `t1_audit` is the share of T1 passes also sent to the judge (`--t1-audit`, `audit_share`).
    """

    def __init__(
        self,
        battery: CompiledBattery,
        judge: Judge | Panel,
        *,
        writer: RecordSink | None = None,
        cache: ReplyCache | None = None,
        policy: RetryPolicy | None = None,
        limiter: ExchangeGate | None = None,
        on_record: Callable[[Record], None] | None = None,
        env: Mapping[str, str] | None = None,
        max_answer_bytes: int = MAX_ANSWER_BYTES,
        t1_audit: float = 0.0,
        repeat: int = 1,
        spend_cap: SpendCap | None = None,
    ) -> None:
        if repeat > 1 and isinstance(judge, Panel):
            raise UsageError(
                "--repeat asks one judge again, and this grading has a judge panel; give one --judge"
            )
        if spend_cap is not None:
            check_cappable(judge)
        self.battery = battery
        #: How many times the one judge is asked about each T2 answer (`--repeat`, `repeats`).
        self.repeat = repeat
        self.max_answer_bytes = max_answer_bytes
        self.t1_audit = t1_audit
        self.judge = judge
        #: The judges asked about each T2 answer: the panel's members, or the one judge.
        self.members: tuple[Judge, ...] = judge.members if isinstance(judge, Panel) else (judge,)
        #: `--max-cost`: no request is sent that could take the priced spend past it (`spend_cap`).
        self.spend_cap = spend_cap
        self.writer = writer
        # A deterministic judge (builtin, replay) is local and gives the same reply again: caching
        # its replies would only cost disk writes (`Asker` also skips it per panel member).
        deterministic = all(member.info.deterministic for member in self.members)
        self.cache = None if deterministic else cache
        self.policy = policy or RetryPolicy()
        self.limiter = limiter or ExchangeGate(8)
        self.on_record = on_record
        self.stats = RunStats(judge=judge.info.describe())
        env = os.environ if env is None else env
        self._secrets = [*secrets_in(env), *(s for member in self.members for s in member.secrets)]
        #: Which tier decides each answer (`route`, the rule the dry run counts by too).
        self.router = Router(battery, max_answer_bytes=max_answer_bytes, t1_audit=t1_audit)
        self.records = RecordMaker(battery, judge.info)
        #: The asks of the judge; the exchange is this class's (a batch grading overrides it).
        self.asker = Asker(
            exchange=self._exchange,
            cache=self.cache,
            policy=self.policy,
            secrets=self._secrets,
            reasoning_tags=battery.reasoning_tags,  # cut from every reply before it is decoded
            facets=battery.settings.facets,
            spend_cap=spend_cap,
        )
        self.steps = JudgeStep(battery, judge, self.asker, self.records)

    async def run(
        self,
        answers: Iterable[Answer],
        *,
        concurrency: int | None = None,
    ) -> RunStats:
        """Grade `answers` (what to grade is the grading plan's: `plan.GradingPlan.answers`),
        `concurrency` at a time (default: the limiter's), in
        the order `dispatch` chooses for this battery and judge."""
        if self.writer is None:
            raise ValueError("Grader.run needs a writer")
        pending = iter(answers)
        workers = max(1, concurrency or self.limiter.max_concurrency)
        if groups_by_question(self.battery, deterministic=self.judge.info.deterministic):
            order: QuestionOrder | FileOrder = QuestionOrder(
                pending, concurrency=workers, open_ahead=SINGLE_PROCESS_OPEN_AHEAD
            )
        else:
            order = FileOrder(pending)
        tasks = [asyncio.create_task(self._worker(order)) for _ in range(workers)]
        try:
            await asyncio.gather(*tasks)
        except BaseException:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        if self.spend_cap is not None:
            self.stats.spent_usd = self.spend_cap.spent
        return self.stats

    async def _worker(self, order: QuestionOrder | FileOrder) -> None:
        # One shared order: each `next` runs to completion between awaits, or waits for a reply.
        cap = self.spend_cap
        graded = 0
        while not (cap is not None and cap.reached) and (answer := await order.next()) is not None:
            try:
                record = await self.grade(answer)
            except SpendCapReached:  # no record: its replies so far are in the cache for --resume
                order.dropped(answer)
                self.stats.spend_capped = True
                break
            assert self.writer is not None  # `run` checked it
            self.writer.write(record)
            order.finished(record)
            self.stats.count(record)
            if self.on_record is not None:
                self.on_record(record)
            graded += 1
            if graded % ANSWERS_PER_TURN == 0:
                await asyncio.sleep(0)  # a turn for the loop: an interrupt's cancel runs here

    async def grade(self, answer: Answer) -> Record:
        """Grade one answer's final text: its reasoning blocks cut first (`core.reasoning`; the
        record keeps the answer as given and says what was cut), then as `_grade_final`."""
        tags = self.battery.reasoning_tags
        cut = cut_reasoning(answer.answer, tags)
        info = reasoning_info(cut, tags)
        if info is None:
            return await self._grade_final(answer)
        record = await self._grade_final(
            msgspec.structs.replace(answer, answer=cut.final), reasoning_cut=True
        )
        if record.cause == "oversized":  # kept cut, as any oversized answer: the answer as given too
            given, _, _ = cut_answer(answer.answer, self.max_answer_bytes)
            return msgspec.structs.replace(
                record, answer=given, reasoning=msgspec.structs.replace(info, final=record.answer)
            )
        return msgspec.structs.replace(record, answer=answer.answer, reasoning=info)

    async def _grade_final(self, answer: Answer, *, reasoning_cut: bool = False) -> Record:
        """Grade one answer (its final text, `reasoning_cut` when blocks were cut from it): an
        oversized one goes to a person, else T1 first, else the judge with its re-ask and stern
        retry."""
        question = self.battery.questions[answer.question]
        routed = self.router.route(answer.system, question, answer.answer)
        route = routed.route
        if route is Route.OVERSIZED:
            cut, size, sha256 = cut_answer(answer.answer, self.max_answer_bytes)
            return self.records.make(
                Answer(answer.system, answer.question, cut),
                question,
                verdict="adjudicate",
                cause="oversized",
                reason=oversized_reason(size, sha256, self.max_answer_bytes, reasoning_cut=reasoning_cut),
            )
        if route is Route.TRAP:  # T1 defers to the judge: the answer may make the claim the trap warns of
            judged = await self.steps.grade_t2(answer, question)
            return msgspec.structs.replace(judged, warnings=[*judged.warnings, t1_deferred(routed.carried)])
        if route is Route.T1 or route is Route.AUDIT:
            rule = self.router.t1_rule
            record = self.records.make(answer, question, tier="t1", verdict="pass", reason=t1_reason(rule))
            record = msgspec.structs.replace(record, t1_rule=rule)
            return await self._audited(record, answer, question) if route is Route.AUDIT else record
        if (route is Route.MATCH or route is Route.MATCH_AUDIT) and routed.reading is not None:
            reading = routed.reading
            assert question.match is not None and reading.verdict is not None  # what routes an answer here
            reason = match_reason(question.match, reading)
            record = self.records.make(answer, question, tier="match", verdict=reading.verdict, reason=reason)
            record = msgspec.structs.replace(record, match_read=reading.read)
            return await self._audited(record, answer, question) if route is Route.MATCH_AUDIT else record
        if self.repeat > 1 and not isinstance(self.judge, Panel):
            # One ask after another (the other workers keep the slots busy); a T1 audit asks once.
            asks = [await self.steps.judge_t2(self.judge, answer, question, r) for r in range(self.repeat)]
            return combine_repeats(asks)
        return await self.steps.grade_t2(answer, question)

    async def _audited(self, record: Record, answer: Answer, question: CompiledQuestion) -> Record:
        """A mechanical pass (T1's, a match check's) that `--t1-audit` chose (its route says so), with
        the judge's verdict kept beside it: the pass stands whatever the judge says."""
        judged = await self.steps.grade_t2(answer, question)
        audit = Audit(
            verdict=judged.verdict,
            reason=judged.reason,
            judge=judged.judge,
            cause=judged.cause,
            attempts=judged.attempts,
            panel=judged.votes,
        )
        return msgspec.structs.replace(record, audit=audit)

    async def _exchange(
        self, judge: Judge, kind: AttemptKind, messages: list[Message]
    ) -> tuple[Completion, int]:
        """One call of `judge` (the one judge, or a panel's member) with its transport retries: the
        completion and the retries it took; `TransportError` when they run out. A batch grading
        (grading/batch/) puts the call in the next batch instead; everything around it (cache,
        decoding, records) stays this class's."""
        return await call_with_retries(judge, messages, self.policy, self.limiter)
