"""The grading loop (docs/language.md section 8): T1, the judge call, the format re-ask, the stern retry,
adjudicate, the cache and the results file.

For each answer:

    over `max_answer_bytes` of UTF-8           -> adjudicate (oversized); no judge call, no T1
    T1 passes (battery and question allow T1)  -> record tier t1, pass; no judge call
    else ask "first"  [system: SYSTEM, user: USER]
      malformed      -> ask "format" with the same messages; malformed again -> adjudicate (malformed)
      fail with a pass-shaped reason
                     -> ask "stern" [system: SYSTEM, user: STERN]; a consistent reply is final;
                        a contradiction or a malformed reply again -> adjudicate (contradiction)
      pass with a fail-shaped reason -> kept, with a warning
    a reply over 64 KiB is malformed (cut to that when recorded and cached)
    transport retries run out on any ask -> error (transport); resume grades it again

Every ask is recorded as an `Attempt`. The cache key carries the attempt kind, so the format re-ask
(same messages as the first ask) has its own entry and a rerun replays the same sequence.

Concurrency: `concurrency` workers pull answers from one shared iterator (the answers file is
streamed, never held), the `AdaptiveLimiter` gates the exchanges in flight. A worker writes its
record as one line as soon as the answer is graded; a cancelled worker (Ctrl-C) writes nothing, so a
record is never half written and never written twice.

Decided where the spec is silent:
- a T1 record carries the run's judge (`judge`), with tier `t1` and no attempts: nobody was asked;
- an oversized answer is not tried against T1 either: the longer an answer, the likelier it holds
  every gold token by chance (or by stuffing), so a person decides; its record has tier `t2` and no
  attempts, and keeps the whole answer for that person to read;
- an `adjudicate` or `error` record has no facets; its reason says what went wrong (for a
  contradiction, the last reason the judge gave);
- HTTP 401, 403 and 404 (`FATAL_STATUSES`) stop the whole run (`JudgeError`): a refused key, an
  unknown model or a wrong base URL means no answer could be graded with that configuration;
- a judge that is no language model (builtin) or replays recorded replies is not cached
  (`JudgeInfo.deterministic`);
- the values of OPENAI_API_KEY / ANTHROPIC_API_KEY and key-shaped words are scrubbed from every
  error message recorded and from every reply where it enters tabench (`Grader._received`), before
  it is decoded, cached or written: a judge that echoes a key in a successful reply leaves it in no
  reason, facet, attempt, cache entry or results line (`redact.scrub`).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime

import msgspec

from ..core.compiled import CompiledBattery, CompiledQuestion
from ..core.errors import JudgeError, TransportError
from ..core.records import Answer, Attempt, AttemptKind, Cause, Outcome, Record, Tier
from ..core.redact import scrub, secrets_in
from ..core.results import RecordSink
from ..core.tiers import t1_passes, tokens
from .cache import ReplyCache, cache_key
from .contradiction import ContradictionCheck
from .injection import compile_injection
from .judges.base import Completion, Judge, Message
from .transport import AdaptiveLimiter, RetryPolicy, call_with_retries, request_sha256
from .verdict import Decoded, Verdict, cut_reply, decode_reply

#: The reason a T1 pass carries.
T1_REASON = "T1: every token of the gold answer (or of an accepted variant) is in the answer"
#: The warning a pass with a fail-shaped reason carries.
FAIL_SHAPED_PASS = "pass verdict with a fail-shaped reason"
#: Answers longer than this many bytes of UTF-8 are not sent to the judge (`--max-answer-bytes`).
MAX_ANSWER_BYTES = 256 * 1024
#: Statuses that mean no answer can be graded with this configuration (a refused key, an unknown
#: model or a wrong base URL): the run stops instead of recording every answer as an error.
FATAL_STATUSES = frozenset({401, 403, 404})


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
        for attempt in record.attempts:
            if attempt.cache_hit:
                self.cache_hits += 1
            else:
                self.calls += 1


class _Asked(msgspec.Struct):
    attempt: Attempt
    decoded: Decoded | None  # None when transport failed for good


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
    """Grade answers of one compiled battery with one judge, appending records to `writer`
    (`run` needs one; a caller of `grade` alone, such as a `--workers` process, need not give it).

    `cache` is None for `--no-cache`; `on_record` is called after each record is written and
    `on_skip` for each answer skipped as done (progress).
    `env` is searched for keys to scrub from replies and error messages (default: the process
    environment). An answer over `max_answer_bytes` of UTF-8 ends `adjudicate` unsent (`oversized`).
    """

    def __init__(
        self,
        battery: CompiledBattery,
        judge: Judge,
        *,
        writer: RecordSink | None = None,
        cache: ReplyCache | None = None,
        policy: RetryPolicy | None = None,
        limiter: AdaptiveLimiter | None = None,
        on_record: Callable[[Record], None] | None = None,
        on_skip: Callable[[], None] | None = None,
        env: Mapping[str, str] | None = None,
        max_answer_bytes: int = MAX_ANSWER_BYTES,
    ) -> None:
        self.battery = battery
        self.max_answer_bytes = max_answer_bytes
        self.judge = judge
        self.writer = writer
        # A deterministic judge (builtin, replay) is local and gives the same reply again: caching
        # its replies would only cost disk writes.
        self.cache = None if judge.info.deterministic else cache
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
        env = os.environ if env is None else env
        self._secrets = secrets_in(env)
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
        """Grade every answer not in `skip`, `concurrency` at a time (default: the limiter's)."""
        if self.writer is None:
            raise ValueError("Grader.run needs a writer")
        iterator = iter(answers)
        skip = skip or set()
        workers = concurrency or self.limiter.max_concurrency
        tasks = [asyncio.create_task(self._worker(iterator, skip)) for _ in range(max(1, workers))]
        try:
            await asyncio.gather(*tasks)
        except BaseException:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        return self.stats

    async def _worker(self, iterator, skip: set[tuple[str, str]]) -> None:
        for answer in iterator:  # one shared iterator: each `next` runs to completion between awaits
            if (answer.system, answer.question) in skip:
                self.stats.skipped += 1
                if self.on_skip is not None:
                    self.on_skip()
                continue
            record = await self.grade(answer)
            assert self.writer is not None  # `run` checked it
            self.writer.write(record)
            self.stats.count(record)
            if self.on_record is not None:
                self.on_record(record)

    async def grade(self, answer: Answer) -> Record:
        """Grade one answer: an oversized one goes to a person, else T1 first, else the judge with
        its re-ask and stern retry."""
        question = self.battery.questions[answer.question]
        size = _oversize(answer.answer, self.max_answer_bytes)
        if size is not None:
            return self._record(
                answer,
                question,
                verdict="adjudicate",
                cause="oversized",
                reason=f"the answer is {size} bytes of UTF-8, over the limit of {self.max_answer_bytes} "
                "(--max-answer-bytes): it was not sent to the judge",
            )
        keys = self._t1_keys.get(question.id)
        if keys is not None and t1_passes(answer.answer, keys):
            return self._record(answer, question, tier="t1", verdict="pass", reason=T1_REASON)
        return await self._grade_t2(answer, question)

    async def _grade_t2(self, answer: Answer, question: CompiledQuestion) -> Record:
        system = Message("system", question.system)
        messages = [system, Message("user", self.battery.user.fill(answer.answer))]
        attempts: list[Attempt] = []
        tolerated: list[str] = []

        asked = await self._ask("first", messages, attempts, tolerated)
        if asked.decoded is None:
            return self._error(answer, question, asked, attempts, tolerated)
        if asked.decoded.verdict is None:
            asked = await self._ask("format", messages, attempts, tolerated)
            if asked.decoded is None:
                return self._error(answer, question, asked, attempts, tolerated)
            if asked.decoded.verdict is None:
                return self._record(
                    answer,
                    question,
                    verdict="adjudicate",
                    cause="malformed",
                    reason=f"malformed reply twice: {asked.decoded.problem}",
                    attempts=attempts,
                    tolerated=tolerated,
                )
        assert asked.decoded is not None and asked.decoded.verdict is not None  # settled above
        verdict = asked.decoded.verdict
        if self._contradicts(verdict):
            stern = [system, Message("user", self.battery.stern.fill(answer.answer))]
            asked = await self._ask("stern", stern, attempts, tolerated)
            if asked.decoded is None:
                return self._error(answer, question, asked, attempts, tolerated)
            again = asked.decoded.verdict
            if again is None or self._contradicts(again):
                if again is not None:
                    reason = again.reason
                else:
                    reason = f"malformed stern reply: {asked.decoded.problem}"
                return self._record(
                    answer,
                    question,
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
        self, kind: AttemptKind, messages: list[Message], attempts: list[Attempt], tolerated: list[str]
    ) -> _Asked:
        """One judge attempt, from the cache when it holds the reply; appended to `attempts`."""
        sha = request_sha256(messages)
        key = None
        if self.cache is not None:
            info = self.judge.info
            key = cache_key(info.backend, self.judge.params, messages, kind, endpoint=info.endpoint)
            hit = self.cache.get(key)
            if hit is not None:
                # Scrubbed again: a cache written before replies were scrubbed may hold a key.
                content = self._received(hit.content)
                attempt = Attempt(kind, content, 0.0, hit.tokens, cache_hit=True, request_sha256=sha)
                return self._decoded(attempt, attempts, tolerated)
        started = time.perf_counter()
        try:
            completion, retries = await self._exchange(kind, messages)
        except TransportError as exc:
            message = scrub(str(exc), self._secrets)
            if exc.status in FATAL_STATUSES:
                raise JudgeError(f"the judge refused the request: {message}") from None
            attempt = Attempt(
                kind,
                None,
                transport_retries=self.policy.attempts - 1 if exc.retryable else 0,
                error=message,
                request_sha256=sha,
            )
            attempts.append(attempt)
            return _Asked(attempt, None)
        latency = completion.latency_ms or (time.perf_counter() - started) * 1000.0
        content = self._received(completion.content)
        if self.cache is not None and key is not None:
            self.cache.put(key, content, completion.tokens)
        attempt = Attempt(
            kind,
            content,
            round(latency, 3),
            completion.tokens,
            transport_retries=retries,
            request_sha256=sha,
        )
        return self._decoded(attempt, attempts, tolerated)

    async def _exchange(self, kind: AttemptKind, messages: list[Message]) -> tuple[Completion, int]:
        """One judge call with its transport retries: the completion and the retries it took;
        `TransportError` when they run out. A batch grading (grading/batch/) puts the call in the
        next batch instead; everything around it (cache, decoding, records) stays this class's."""
        return await call_with_retries(self.judge, messages, self.policy, self.limiter)

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
        decoded = decode_reply(attempt.raw or "", facet_names=self.facets)
        for form in decoded.tolerated:
            if form not in tolerated:
                tolerated.append(form)
        return _Asked(attempt, decoded)

    def _injection_suspect(self, text: str) -> bool:
        return self._injection is not None and self._injection.search(text) is not None

    def _error(
        self,
        answer: Answer,
        question: CompiledQuestion,
        asked: _Asked,
        attempts: list[Attempt],
        tolerated: list[str],
    ) -> Record:
        return self._record(
            answer,
            question,
            verdict="error",
            cause="transport",
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
            judge=self.judge.info,
            answer=answer.answer,
            facets=facets or {},
            cause=cause,
            attempts=attempts or [],
            tolerated=tolerated or [],
            warnings=warnings or [],
            injection_suspect=self._injection_suspect(answer.answer),
            battery=self.battery.name,
            time=_now(),
        )
