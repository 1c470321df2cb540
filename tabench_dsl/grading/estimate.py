"""What a grading would send, counted before anything is sent: `estimate_grading` (`grade --dry-run`).

It walks the answers as `runner.Grader.grade` would, offline: an answer `--resume` skips is
skipped, an oversized one goes to a person, T1 and a question's `match` check (offline by nature)
settle what they settle, and each answer left is one first ask, unless the reply cache already
holds the reply to that very request (the key `runner` looks up: judge, endpoint, parameters,
messages, attempt `first`). The cache is
read, never written (`cache.CacheReader`); no judge is built and nothing is contacted.

A judge panel asks each of its judges: each has its own cache entries and its own counts. Only
first asks are counted: a format re-ask or a stern retry depends on the reply, so it cannot be
known in advance (each adds at most one more call of about the same size); `--t1-audit` asks are
not counted either. Tokens are estimated
from characters, four to a token (`transport.estimate_tokens`, the estimate `--tpm` pacing uses
before a server reports real counts); a reply takes at most the judge's `max_tokens`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence, Set

import msgspec

from ..core.closed_match import read_answer
from ..core.compiled import CompiledBattery
from ..core.reasoning import cut_reasoning
from ..core.records import Answer, JudgeInfo
from ..core.tiers import T1Keys, t1_passes
from .cache import CacheReader, open_cache_reader
from .cache_keys import cache_key
from .judges.base import JudgeIdentity, Message
from .repeats import repeat_kind
from .runner import MAX_ANSWER_BYTES
from .transport import estimate_tokens
from .trap_check import TrapCheck

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
    passes, and what each judge would be asked (`judges`: one, or each judge of a panel, which
    grades every answer T1 leaves)."""

    answers: int = 0
    skipped: int = 0
    oversized: int = 0
    t1_passes: int = 0
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
    skip: Set[tuple[str, str]] = frozenset(),
    max_answer_bytes: int = MAX_ANSWER_BYTES,
    repeat: int = 1,
) -> Estimate:
    """Count what grading `answers` would send to `judges` (one, or a panel's; module docstring);
    `cache` is the reply cache file (None: `--no-cache`); `repeat` the asks per answer (`--repeat`,
    each with its own cache entry)."""
    estimate = Estimate(judges=[JudgeAsks(j.info, j.params.max_tokens) for j in judges])
    offline = _OfflineTiers(battery, skip, max_answer_bytes)
    asked: list[set[str]] = [set() for _ in judges]
    readers = [open_cache_reader(cache, j.info) for j in judges]
    try:
        for asks, reader in zip(estimate.judges, readers, strict=True):
            asks.cache_read = reader is not None
        for answer in answers:
            final = offline.left_for_judge(answer, estimate)
            if final is None:
                continue
            question = battery.questions[answer.question]
            messages = [Message("system", question.system), Message("user", battery.user.fill(final))]
            for row in zip(judges, estimate.judges, readers, asked, strict=True):
                for r in range(repeat):
                    _count_ask(*row, question.id, messages, repeat_kind("first", r))
    finally:
        for reader in readers:
            if reader is not None:
                reader.close()
    for asks, seen in zip(estimate.judges, asked, strict=True):
        asks.questions = len(seen)
        asks.completion_tokens_max = asks.judge_calls * asks.max_tokens
    return estimate


class _OfflineTiers:
    """What comes before the judge, as `runner.Grader.grade` does it: `--resume`'s skip, the
    oversized answers, and T1 (a pass carrying the trap's words is the judge's: `trap_check`)."""

    def __init__(
        self, battery: CompiledBattery, skip: Collection[tuple[str, str]], max_answer_bytes: int
    ) -> None:
        self.battery = battery
        self.skip = skip
        self.max_answer_bytes = max_answer_bytes
        self.keys = T1Keys(battery.t1)
        self.trap = TrapCheck()

    def left_for_judge(self, answer: Answer, estimate: Estimate) -> str | None:
        """The text the judge would grade of `answer` (its reasoning cut), or None when it never
        reaches the judge; counted in `estimate` either way."""
        estimate.answers += 1
        if (answer.system, answer.question) in self.skip:
            estimate.skipped += 1
            return None
        final = cut_reasoning(answer.answer, self.battery.reasoning_tags).final  # what is graded
        if len(final.encode("utf-8", "surrogatepass")) > self.max_answer_bytes:
            estimate.oversized += 1
            return None
        question = self.battery.questions[answer.question]
        t1_keys = self.keys.of(question)
        if t1_keys is not None and t1_passes(final, t1_keys) and not self.trap.carried(final, question):
            estimate.t1_passes += 1
            return None
        if question.match is not None and read_answer(question.match, final).verdict is not None:
            estimate.match_decided += 1  # settled by the question's match check, as `runner` does
            return None
        return final


def _count_ask(
    judge: JudgeIdentity,
    asks: JudgeAsks,
    reader: CacheReader | None,
    seen: set[str],
    question: str,
    messages: list[Message],
    kind: str,
) -> None:
    """Count one first ask of `judge`: a reply cache hit, or a call with its prompt's size."""
    if reader is not None:
        info = judge.info
        key = cache_key(
            info.backend, judge.params, messages, kind, endpoint=info.endpoint, shape=judge.request_shape
        )
        if reader.has(key):
            asks.cache_hits += 1
            return
    asks.judge_calls += 1
    asks.prompt_chars += sum(len(m.content) for m in messages)
    asks.prompt_tokens += estimate_tokens(messages)
    if question in seen:
        asks.repeated_prompt_tokens += estimate_tokens(messages[:1])
    seen.add(question)
