"""The grading loop (docs/language.md section 8): T1, the judge call, the format re-ask, the stern retry,
adjudicate, the cache and the results file.

For each answer, its reasoning blocks cut first (`core.reasoning`: T1 and the judge read the final
answer; the record keeps the answer as given, and `reasoning` says what was cut):

    over `max_answer_bytes` of UTF-8           -> adjudicate (oversized); no judge call, no T1
    T1 passes (battery and question allow T1)  -> record tier t1, pass; no judge call (with
                     `--t1-audit`, a hashed share of them is also graded below, the verdict kept in
                     `audit` while the T1 pass stands: `audit_share`)
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

With a judge `Panel`, every judge of it runs the steps above on its own, all at once (`_grade_t2`);
the record keeps each judge's outcome as a `PanelVote` and `panel.decide` makes the verdict.

Every ask is recorded as an `Attempt`. The cache key carries the attempt kind, so the format re-ask
(same messages as the first ask) has its own entry and a rerun replays the same sequence.

Concurrency: `concurrency` workers pull answers from one shared order, the `AdaptiveLimiter` gates
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
  error message recorded and from every reply where it enters tabench (`Grader._received`), before
  it is decoded, cached or written: a judge that echoes a key in a successful reply leaves it in no
  reason, facet, attempt, cache entry or results line (`redact.scrub`).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import UTC, datetime

import msgspec

from ..core.compiled import CompiledBattery, CompiledQuestion
from ..core.errors import TransportError, UsageError
from ..core.reasoning import cut_reasoning, reasoning_info
from ..core.records import (
    Answer,
    Attempt,
    AttemptKind,
    Audit,
    Cause,
    JudgeInfo,
    Outcome,
    PanelVote,
    Record,
    Tier,
)
from ..core.redact import scrub, secrets_in
from ..core.results import RecordSink
from ..core.tiers import t1_passes, tokens
from .cache import ReplyCache, cache_key
from .contradiction import ContradictionCheck
from .dispatch import SINGLE_PROCESS_OPEN_AHEAD, FileOrder, QuestionOrder, groups_by_question
from .injection import compile_injection
from .judges.base import Completion, Judge, Message
from .judges.request_hash import request_sha256
from .oversized import cut_answer, oversized_reason
from .panel import Panel, decide
from .reachability import ReachabilityWatch
from .repeats import combine_repeats, repeat_kind
from .reply_endings import cut_off, doubled_budget, final_text, truncated_reason, twice_malformed
from .reply_endings import problem as reply_problem
from .spend_cap import SpendCap, SpendCapReached, check_cappable
from .transport import AdaptiveLimiter, RetryPolicy, call_with_retries
from .trap_check import TrapCheck, t1_deferred
from .verdict import Decoded, Verdict, cut_reply, decode_reply

#: The reason a T1 pass carries.
T1_REASON = "T1: every token of the gold answer (or of an accepted variant) is in the answer"
#: The warning a pass with a fail-shaped reason carries.
FAIL_SHAPED_PASS = "pass verdict with a fail-shaped reason"
#: Answers longer than this many bytes of UTF-8 are not sent to the judge (`--max-answer-bytes`).
MAX_ANSWER_BYTES = 256 * 1024


class RunStats(msgspec.Struct):
    """What one run did (the totals come from the results file)."""

    graded: int = 0
    skipped: int = 0
    t1: int = 0
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


class _Asked(msgspec.Struct):
    attempt: Attempt
    decoded: Decoded | None  # None when transport failed for good, or the reply was cut off twice
    #: Transport failed for good because the judge was still rate limiting when the wait was over.
    rate_limited: bool = False
    #: The reply's text without its reasoning blocks (`reply_endings.final_text`): what was decoded.
    final: str = ""
    #: Set when the answer ends here without a verdict (cause `truncated`), with its reason.
    ended: Cause | None = None
    reason: str = ""


def audit_share(system: str, question: str) -> float:
    """Where the pair falls in [0, 1): the first 8 bytes of the sha256 of `system`, NUL, `question`,
    as a fraction. `--t1-audit F` audits the T1 passes whose share is below F, so a rerun (or
    another process of `--workers`) picks the same ones, and a larger F keeps the ones a smaller
    one picked."""
    digest = hashlib.sha256(f"{system}\0{question}".encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


def _oversize(text: str, limit: int) -> int | None:
    """The size of `text` in bytes of UTF-8 when it is over `limit`, else None. A text of at most
    limit/4 characters cannot be over it (4 bytes a character at most): most answers are never
    encoded."""
    if len(text) * 4 <= limit:
        return None
    size = len(text.encode("utf-8", "surrogatepass"))
    return size if size > limit else None


_clock: list = [0, ""]  # [whole second, its ISO text]: records finishing in one second share it


def _now() -> str:
    """The time in UTC to the second, ISO 8601 (formatted once per second, not once per record)."""
    second = int(time.time())
    if second != _clock[0]:
        _clock[0] = second
        _clock[1] = datetime.fromtimestamp(second, UTC).isoformat(timespec="seconds")
    return _clock[1]


class Grader:
    """Grade answers of one compiled battery with one judge or a `Panel` of judges, appending records
    to `writer` (`run` needs one; a caller of `grade` alone, such as a `--workers` process, need not
    give it).

    `cache` is None for `--no-cache`; `on_record` is called after each record is written and
    `on_skip` for each answer skipped as done (progress).
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
        limiter: AdaptiveLimiter | None = None,
        on_record: Callable[[Record], None] | None = None,
        on_skip: Callable[[], None] | None = None,
        env: Mapping[str, str] | None = None,
        max_answer_bytes: int = MAX_ANSWER_BYTES,
        t1_audit: float = 0.0,
        repeat: int = 1,
        spend_cap: SpendCap | None = None,
    ) -> None:
        self.battery = battery
        #: How many times the one judge is asked about each T2 answer (`--repeat`, `repeats`).
        self.repeat = repeat
        if repeat > 1 and isinstance(judge, Panel):
            raise UsageError(
                "--repeat asks one judge again, and this grading has a judge panel; give one --judge"
            )
        self.max_answer_bytes = max_answer_bytes
        self.t1_audit = t1_audit
        self.judge = judge
        #: The judges asked about each T2 answer: the panel's members, or the one judge.
        self.members: tuple[Judge, ...] = judge.members if isinstance(judge, Panel) else (judge,)
        #: `--max-cost`: no request is sent that could take the priced spend past it (`spend_cap`).
        self.spend_cap = spend_cap
        if spend_cap is not None:
            check_cappable(judge)
        self.writer = writer
        # A deterministic judge (builtin, replay) is local and gives the same reply again: caching
        # its replies would only cost disk writes (`_ask` also skips it per panel member).
        deterministic = all(member.info.deterministic for member in self.members)
        self.cache = None if deterministic else cache
        self.policy = policy or RetryPolicy()
        self.limiter = limiter or AdaptiveLimiter(8)
        self.on_record = on_record
        self.on_skip = on_skip
        self.stats = RunStats(judge=judge.info.describe())
        settings = battery.settings
        self.facets = settings.facets
        self.contradiction = ContradictionCheck.from_settings(settings.contradiction)
        # The injection patterns as one regex, compiled once for the run (None: no patterns).
        self._injection = compile_injection(settings.injection)
        #: The reasoning blocks cut from every reply before it is decoded (`reply_endings`): the
        #: battery's tags, the ones cut from the answers.
        self.reasoning_tags = battery.reasoning_tags
        env = os.environ if env is None else env
        self._secrets = [*secrets_in(env), *(s for member in self.members for s in member.secrets)]
        self._reachability = ReachabilityWatch()
        self._trap = TrapCheck(battery)
        # T1 keys as token sets, computed once per question.
        self._t1_keys: dict[str, tuple[frozenset[str], ...]] = {}
        if battery.t1:
            for q in battery.questions.values():
                if q.t1:
                    self._t1_keys[q.id] = tuple(tokens(k) for k in (q.gold, *q.accept))

    async def run(
        self,
        answers: Iterable[Answer],
        *,
        skip: set[tuple[str, str]] | None = None,
        concurrency: int | None = None,
    ) -> RunStats:
        """Grade every answer not in `skip`, `concurrency` at a time (default: the limiter's), in
        the order `dispatch` chooses for this battery and judge."""
        if self.writer is None:
            raise ValueError("Grader.run needs a writer")
        pending = self._pending(answers, skip or set())
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

    def _pending(self, answers: Iterable[Answer], skip: set[tuple[str, str]]) -> Iterator[Answer]:
        """The answers not in `skip`; those in it are counted (and shown) as skipped."""
        for answer in answers:
            if (answer.system, answer.question) in skip:
                self.stats.skipped += 1
                if self.on_skip is not None:
                    self.on_skip()
                continue
            yield answer

    async def _worker(self, order: QuestionOrder | FileOrder) -> None:
        # One shared order: each `next` runs to completion between awaits, or waits for a reply.
        cap = self.spend_cap
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

    async def grade(self, answer: Answer) -> Record:
        """Grade one answer's final text: its reasoning blocks cut first (`core.reasoning`; the
        record keeps the answer as given and says what was cut), then as `_grade_final`."""
        tags = self.battery.reasoning_tags
        cut = cut_reasoning(answer.answer, tags)
        info = reasoning_info(cut, tags)
        if info is None:
            return await self._grade_final(answer)
        record = await self._grade_final(msgspec.structs.replace(answer, answer=cut.final))
        return msgspec.structs.replace(record, answer=answer.answer, reasoning=info)

    async def _grade_final(self, answer: Answer) -> Record:
        """Grade one answer (its final text): an oversized one goes to a person, else T1 first, else
        the judge with its re-ask and stern retry."""
        question = self.battery.questions[answer.question]
        size = _oversize(answer.answer, self.max_answer_bytes)
        if size is not None:
            cut, size, sha256 = cut_answer(answer.answer, self.max_answer_bytes)
            return self._record(
                Answer(answer.system, answer.question, cut),
                question,
                verdict="adjudicate",
                cause="oversized",
                reason=oversized_reason(size, sha256, self.max_answer_bytes),
            )
        keys = self._t1_keys.get(question.id)
        if keys is not None and t1_passes(answer.answer, keys):
            carried = self._trap.carried(answer.answer, question)
            if carried:  # T1 defers to the judge: the answer may make the claim the trap warns of
                judged = await self._grade_t2(answer, question)
                return msgspec.structs.replace(judged, warnings=[*judged.warnings, t1_deferred(carried)])
            record = self._record(answer, question, tier="t1", verdict="pass", reason=T1_REASON)
            if self.t1_audit > 0 and audit_share(answer.system, answer.question) < self.t1_audit:
                # T1 is final: the pass stands, the judge's verdict is only kept beside it.
                judged = await self._grade_t2(answer, question)
                audit = Audit(
                    verdict=judged.verdict,
                    reason=judged.reason,
                    judge=judged.judge,
                    cause=judged.cause,
                    attempts=judged.attempts,
                    panel=judged.votes,
                )
                record = msgspec.structs.replace(record, audit=audit)
            return record
        if self.repeat > 1 and not isinstance(self.judge, Panel):
            # One ask after another (the other workers keep the slots busy); a T1 audit asks once.
            asks = [await self._judge_t2(self.judge, answer, question, r) for r in range(self.repeat)]
            return combine_repeats(asks)
        return await self._grade_t2(answer, question)

    async def _grade_t2(self, answer: Answer, question: CompiledQuestion) -> Record:
        """The judge's record of a T2 answer: the one judge's, or the panel's, whose judges are
        asked at once, each with the full semantics of `_judge_t2`."""
        if not isinstance(self.judge, Panel):
            return await self._judge_t2(self.judge, answer, question)
        panel = self.judge
        tasks = [asyncio.ensure_future(self._judge_t2(m, answer, question)) for m in panel.members]
        try:
            judged = await asyncio.gather(*tasks)
        except BaseException:  # a fatal judge error (or Ctrl-C): the other judges are not waited for
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        votes = [
            PanelVote(
                judge=one.judge,
                verdict=one.verdict,
                reason=one.reason,
                cause=one.cause,
                facets=one.facets,
                attempts=one.attempts,
                tolerated=one.tolerated,
                warnings=one.warnings,
            )
            for one in judged
        ]
        verdict = decide(votes, panel.rule)
        tolerated = list(dict.fromkeys(form for vote in votes for form in vote.tolerated))
        warnings = [f"{vote.judge.describe()}: {w}" for vote in votes for w in vote.warnings]
        record = self._record(
            answer,
            question,
            verdict=verdict.verdict,
            reason=verdict.reason,
            cause=verdict.cause,
            facets=verdict.facets,
            tolerated=tolerated,
            warnings=warnings,
        )
        return msgspec.structs.replace(record, panel=votes)

    async def _judge_t2(
        self, judge: Judge, answer: Answer, question: CompiledQuestion, repetition: int = 0
    ) -> Record:
        """One judge's record of a T2 answer: the first ask, the format re-ask, the stern retry
        (`repetition` numbers a `--repeat` ask, which has cache entries of its own)."""
        system = Message("system", question.system)
        messages = [system, Message("user", self.battery.user.fill(answer.answer))]
        attempts: list[Attempt] = []
        tolerated: list[str] = []

        asked = await self._ask(judge, "first", messages, attempts, tolerated, repetition)
        if asked.decoded is None:
            return self._error(judge, answer, question, asked, attempts, tolerated)
        if asked.decoded.verdict is None:
            asked = await self._ask(judge, "format", messages, attempts, tolerated, repetition)
            if asked.decoded is None:
                return self._error(judge, answer, question, asked, attempts, tolerated)
            if asked.decoded.verdict is None:
                cause, reason = twice_malformed(asked.attempt, asked.decoded.problem)
                return self._record(
                    answer,
                    question,
                    judge=judge.info,
                    verdict="adjudicate",
                    cause=cause,
                    reason=reason,
                    attempts=attempts,
                    tolerated=tolerated,
                )
        assert asked.decoded is not None and asked.decoded.verdict is not None  # settled above
        verdict = asked.decoded.verdict
        if self._contradicts(verdict):
            stern = [system, Message("user", self.battery.stern.fill(answer.answer))]
            asked = await self._ask(judge, "stern", stern, attempts, tolerated, repetition)
            if asked.decoded is None:
                return self._error(judge, answer, question, asked, attempts, tolerated)
            again = asked.decoded.verdict
            if again is None or self._contradicts(again):
                if again is not None:
                    reason = again.reason
                else:
                    reason = f"malformed stern reply: {asked.decoded.problem}"
                return self._record(
                    answer,
                    question,
                    judge=judge.info,
                    verdict="adjudicate",
                    cause="contradiction",
                    reason=reason,
                    attempts=attempts,
                    tolerated=tolerated,
                )
            verdict = again
        warnings = []
        if verdict.verdict == "pass" and self.contradiction.is_fail_shaped(verdict.reason):
            warnings.append(FAIL_SHAPED_PASS)
        return self._record(
            answer,
            question,
            judge=judge.info,
            verdict=verdict.verdict,
            reason=verdict.reason,
            facets=dict(verdict.facets),
            attempts=attempts,
            tolerated=tolerated,
            warnings=warnings,
        )

    def _contradicts(self, verdict: Verdict) -> bool:
        return verdict.verdict == "fail" and self.contradiction.is_pass_shaped(verdict.reason)

    async def _ask(
        self,
        judge: Judge,
        kind: AttemptKind,
        messages: list[Message],
        attempts: list[Attempt],
        tolerated: list[str],
        repetition: int = 0,
    ) -> _Asked:
        """One ask of `judge` (`_ask_once`); a reply cut off at its token budget is asked again once
        with twice the budget, each attempt recording the budget it had, and cut off again ends the
        answer (cause `truncated`: `reply_endings`)."""
        asked = await self._ask_once(judge, kind, messages, attempts, tolerated, repetition)
        if asked.decoded is None or not cut_off(asked.attempt, asked.final):
            return asked
        budget = judge.params.max_tokens
        attempts[-1] = msgspec.structs.replace(asked.attempt, max_tokens=budget)
        longer = judge.with_max_tokens(doubled_budget(budget))
        asked = await self._ask_once(longer, kind, messages, attempts, tolerated, repetition)
        if asked.decoded is not None:
            attempts[-1] = msgspec.structs.replace(asked.attempt, max_tokens=longer.params.max_tokens)
            if cut_off(asked.attempt, asked.final):
                reason = truncated_reason(budget, longer.params.max_tokens)
                return _Asked(attempts[-1], None, final=asked.final, ended="truncated", reason=reason)
        return asked

    async def _ask_once(
        self,
        judge: Judge,
        kind: AttemptKind,
        messages: list[Message],
        attempts: list[Attempt],
        tolerated: list[str],
        repetition: int = 0,
    ) -> _Asked:
        """One attempt of `judge`, from the cache when it holds the reply; appended to `attempts`.
        The cache key names the judge (backend, endpoint, model, parameters), so each judge of a
        panel has entries of its own, and the ask's number, so each `--repeat` ask has its own."""
        sha = request_sha256(messages)
        key = None
        keyed = judge.params
        cache = None if judge.info.deterministic else self.cache
        if cache is not None:
            info = judge.info
            key = cache_key(
                info.backend,
                judge.params,
                messages,
                repeat_kind(kind, repetition),
                endpoint=info.endpoint,
                shape=judge.request_shape,
            )
            hit = cache.get(key)
            if hit is not None:
                # Scrubbed again: a cache written before replies were scrubbed may hold a key.
                attempt = Attempt(kind, self._received(hit.content), 0.0, hit.tokens, cache_hit=True)
                attempt = self._told(attempt, sha, stop=hit.stop, refusal=hit.refusal)
                return self._decoded(attempt, attempts, tolerated)
        started = time.perf_counter()
        try:
            completion, retries = await self._capped_exchange(judge, kind, messages)
        except TransportError as exc:
            message = scrub(str(exc), self._secrets)
            if exc.stops_run:  # no credit left: the user must act before any call can succeed
                raise UsageError(f"the judge refused the request: {message}") from None
            self._reachability.failed(judge.info, exc, message)  # raises when the judge is unusable
            attempt = Attempt(
                kind,
                None,
                transport_retries=self.policy.attempts - 1 if exc.retryable else 0,
                error=message,
                request_sha256=sha,
            )
            attempts.append(attempt)
            # Rate limits are waited out, never counted as retries: one that ends the call is the
            # `--rate-limit-wait` deadline passing (transport.call_with_retries).
            return _Asked(attempt, None, rate_limited=exc.rate_limited)
        self._reachability.replied(judge.info)
        latency = completion.latency_ms or (time.perf_counter() - started) * 1000.0
        content = self._received(completion.content)
        if cache is not None and key is not None:
            if judge.params is not keyed:  # the judge dropped a refused parameter on this call
                key = cache_key(
                    judge.info.backend, judge.params, messages, kind, endpoint=judge.info.endpoint
                )
            cache.put(key, content, completion.tokens, stop=completion.stop, refusal=completion.refusal)
        attempt = Attempt(kind, content, round(latency, 3), completion.tokens, transport_retries=retries)
        attempt = self._told(attempt, sha, stop=completion.stop, refusal=completion.refusal)
        attempt = msgspec.structs.replace(attempt, served=completion.served)
        return self._decoded(attempt, attempts, tolerated)

    async def _capped_exchange(
        self, judge: Judge, kind: AttemptKind, messages: list[Message]
    ) -> tuple[Completion, int]:
        """`_exchange` under the spend cap, when there is one: the request's most is reserved
        first (`SpendCapReached` when it does not fit), then replaced by what it cost."""
        cap = self.spend_cap
        if cap is None:
            return await self._exchange(judge, kind, messages)
        price = judge.info.price
        assert price is not None  # check_cappable
        reserved = cap.reserve(messages, judge.params.max_tokens, price)
        tokens = None
        try:
            completion, retries = await self._exchange(judge, kind, messages)
            tokens = completion.tokens
            return completion, retries
        finally:
            cap.settle(reserved, tokens, price)

    def _told(self, attempt: Attempt, sha: str, *, stop: str, refusal: str | None) -> Attempt:
        """`attempt` with its request's sha256 and what the server said of the reply: why it
        ended short (`stop`) and a refusal's text, scrubbed like the reply."""
        return msgspec.structs.replace(
            attempt,
            request_sha256=sha,
            stop=stop or None,
            refusal=None if refusal is None else self._received(refusal),
        )

    async def _exchange(
        self, judge: Judge, kind: AttemptKind, messages: list[Message]
    ) -> tuple[Completion, int]:
        """One call of `judge` (the one judge, or a panel's member) with its transport retries: the
        completion and the retries it took; `TransportError` when they run out. A batch grading
        (grading/batch/) puts the call in the next batch instead; everything around it (cache,
        decoding, records) stays this class's."""
        return await call_with_retries(judge, messages, self.policy, self.limiter)

    def _received(self, content: str) -> str:
        """A judge's reply as tabench keeps it: without the keys in use or key-shaped words, and
        cut to `verdict.MAX_REPLY_BYTES` when longer (such a reply is malformed: `cut_reply`).
        Every reply, fresh or cached, passes here before it is decoded, cached or recorded, so the
        reason, the facets, the attempt, the cache entry and the results line all hold this text
        (and a replay of that results file serves it). Scrubbed before it is cut, so no cut leaves
        the first half of a key."""
        return cut_reply(scrub(content, self._secrets))

    def _decoded(self, attempt: Attempt, attempts: list[Attempt], tolerated: list[str]) -> _Asked:
        attempts.append(attempt)
        final = final_text(attempt.raw or "", self.reasoning_tags)
        refused = reply_problem(attempt, final)
        if refused is not None:
            return _Asked(attempt, Decoded(None, (), refused), final=final)
        decoded = decode_reply(final, facet_names=self.facets)
        for form in decoded.tolerated:
            if form not in tolerated:
                tolerated.append(form)
        return _Asked(attempt, decoded, final=final)

    def _injection_suspect(self, text: str) -> bool:
        return self._injection is not None and self._injection.search(text) is not None

    def _error(
        self,
        judge: Judge,
        answer: Answer,
        question: CompiledQuestion,
        asked: _Asked,
        attempts: list[Attempt],
        tolerated: list[str],
    ) -> Record:
        if asked.ended is not None:  # the judge answered, but never within its budget
            return self._record(
                answer,
                question,
                judge=judge.info,
                verdict="adjudicate",
                cause=asked.ended,
                reason=asked.reason,
                attempts=attempts,
                tolerated=tolerated,
            )
        return self._record(
            answer,
            question,
            judge=judge.info,
            verdict="error",
            cause="rate_limit" if asked.rate_limited else "transport",
            reason=asked.attempt.error or "",
            attempts=attempts,
            tolerated=tolerated,
        )

    def _record(
        self,
        answer: Answer,
        question: CompiledQuestion,
        *,
        verdict: Outcome,
        reason: str,
        judge: JudgeInfo | None = None,
        tier: Tier = "t2",
        cause: Cause | None = None,
        facets: dict[str, bool] | None = None,
        attempts: list[Attempt] | None = None,
        tolerated: list[str] | None = None,
        warnings: list[str] | None = None,
    ) -> Record:
        return Record(
            system=answer.system,
            question=answer.question,
            tier=tier,
            verdict=verdict,
            reason=reason,
            prompt_sha256=question.sha256,
            judge=judge or self.judge.info,
            answer=answer.answer,
            facets=facets or {},
            cause=cause,
            attempts=attempts or [],
            tolerated=tolerated or [],
            warnings=warnings or [],
            injection_suspect=self._injection_suspect(answer.answer),
            battery=self.battery.name,
            time=_now(),
            tags=list(question.tags),
        )
