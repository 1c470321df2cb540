"""What a grading would send, counted before anything is sent: `estimate_grading` (`grade --dry-run`).

It walks the answers to grade (`plan.GradingPlan.answers`: `--resume`'s done pairs already taken
out, the caller counts them) as `runner.Grader.grade` would, offline: each goes the route
`route.Router` gives it, the grading's own rule: an
oversized one goes to a person, T1 (offline by nature) passes what it passes, a `--t1-audit` share
of those passes is asked of the judge once, a question's `match` check settles what it reads (its
passes audited alike), and each answer left is one first ask (`--repeat`
asks each of them K times), unless the reply cache already holds the reply to that very request
(`cache_keys.reply_key`, the key the grading looks up). The cache is read, never written
(`cache.CacheReader`); no judge is built and nothing is contacted.

A judge panel asks each of its judges: each has its own cache entries and its own counts. Only
first asks are counted: a format re-ask or a stern retry depends on the reply, so it cannot be
known in advance (each adds at most one more call of about the same size). Tokens are estimated
from characters, four to a token (`transport.estimate_tokens`, the estimate `--tpm` pacing uses
before a server reports real counts); a reply takes at most the judge's `max_tokens`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import msgspec

from ..core.compiled import CompiledBattery
from ..core.reasoning import cut_reasoning
from ..core.records import Answer, JudgeInfo
from .cache import CacheReader, open_cache_reader
from .cache_keys import reply_key
from .judges.base import JudgeIdentity, Message
from .route import MAX_ANSWER_BYTES, Route, Router
from .transport import estimate_tokens

#: How tokens are estimated, in the words outputs show it with.
TOKEN_ESTIMATE = "characters / 4, the estimate --tpm pacing uses"


class JudgeAsks(msgspec.Struct):
    """What one judge would be asked: `judge_calls` first asks still to send after T1 and the reply
    cache (`cache_hits`), over `questions` questions; their `prompt_chars` and `prompt_tokens`
    (estimated); `repeated_prompt_tokens`, the part that repeats a SYSTEM prompt already sent for
    the same question (what a provider's prompt cache can serve); `completion_tokens_max`, the
    calls times `max_tokens`. `cache_read` is False when the reply cache was not read
    (`--no-cache`, no file yet, a judge that is never cached)."""

    judge: JudgeInfo
    max_tokens: int
    cache_hits: int = 0
    judge_calls: int = 0
    questions: int = 0
    prompt_chars: int = 0
    prompt_tokens: int = 0
    repeated_prompt_tokens: int = 0
    completion_tokens_max: int = 0
    cache_read: bool = False


class Estimate(msgspec.Struct):
    """The counts of a dry run: the answers, those `--resume` skips, the oversized ones, the T1
    passes (and those audited), and what each judge would be asked (`judges`: one, or each judge
    of a panel, which grades every answer T1 leaves)."""

    answers: int = 0
    skipped: int = 0
    oversized: int = 0
    t1_passes: int = 0
    #: The T1 passes the judge also grades (`--t1-audit`), each asked once of each judge.
    t1_audits: int = 0
    #: Answers a question's `match` check decides (pass, or fail with `decides`): no judge call.
    match_decided: int = 0
    judges: list[JudgeAsks] = msgspec.field(default_factory=list)

    def total(self, field: str) -> int:
        """A count of `JudgeAsks` added up over the judges."""
        return sum(getattr(asks, field) for asks in self.judges)


def estimate_grading(
    battery: CompiledBattery,
    answers: Iterable[Answer],
    judges: Sequence[JudgeIdentity],
    *,
    cache: str | None,
    max_answer_bytes: int = MAX_ANSWER_BYTES,
    repeat: int = 1,
    t1_audit: float = 0.0,
) -> Estimate:
    """Count what grading `answers` would send to `judges` (one, or a panel's; module docstring);
    `cache` is the reply cache file (None: `--no-cache`); `repeat` the asks per answer (`--repeat`,
    each with its own cache entry); `t1_audit` the share of T1 passes the judge also grades."""
    estimate = Estimate(judges=[JudgeAsks(j.info, j.params.max_tokens) for j in judges])
    router = Router(battery, max_answer_bytes=max_answer_bytes, t1_audit=t1_audit)
    asked: list[set[str]] = [set() for _ in judges]
    readers = [open_cache_reader(cache, j.info) for j in judges]
    try:
        for asks, reader in zip(estimate.judges, readers, strict=True):
            asks.cache_read = reader is not None
        for answer in answers:
            estimate.answers += 1
            final = cut_reasoning(answer.answer, battery.reasoning_tags).final  # what is graded
            question = battery.questions[answer.question]
            count = _first_asks(router.route(answer.system, question, final).route, repeat, estimate)
            if not count:
                continue
            messages = [Message("system", question.system), Message("user", battery.user.fill(final))]
            for row in zip(judges, estimate.judges, readers, asked, strict=True):
                for r in range(count):
                    _count_ask(*row, question.id, messages, r)
    finally:
        for reader in readers:
            if reader is not None:
                reader.close()
    for asks, seen in zip(estimate.judges, asked, strict=True):
        asks.questions = len(seen)
        asks.completion_tokens_max = asks.judge_calls * asks.max_tokens
    return estimate


def _first_asks(route: Route, repeat: int, estimate: Estimate) -> int:
    """How many first asks each judge gets for an answer on `route`, the answers that never reach
    the judge counted in `estimate`: an audited T1 pass and a T1 pass the trap defers are asked
    once, as `runner.Grader` asks them, the rest of the judge's answers `repeat` times."""
    if route is Route.OVERSIZED:
        estimate.oversized += 1
        return 0
    if route is Route.T1 or route is Route.AUDIT:
        estimate.t1_passes += 1
        if route is Route.T1:
            return 0
        estimate.t1_audits += 1
    if route is Route.MATCH or route is Route.MATCH_AUDIT:
        estimate.match_decided += 1  # settled by the question's match check
        if route is Route.MATCH:
            return 0
        estimate.t1_audits += 1
    return repeat if route is Route.JUDGE else 1


def _count_ask(
    judge: JudgeIdentity,
    asks: JudgeAsks,
    reader: CacheReader | None,
    seen: set[str],
    question: str,
    messages: list[Message],
    repetition: int,
) -> None:
    """Count first ask number `repetition` (`--repeat`) of `judge`: a reply cache hit, or a call
    with its prompt's size."""
    if reader is not None:
        key = reply_key(judge, messages, "first", repetition)
        if reader.has(key):
            asks.cache_hits += 1
            return
    asks.judge_calls += 1
    asks.prompt_chars += sum(len(m.content) for m in messages)
    asks.prompt_tokens += estimate_tokens(messages)
    if question in seen:
        asks.repeated_prompt_tokens += estimate_tokens(messages[:1])
    seen.add(question)
