"""What a grading would send, counted before anything is sent: `estimate_grading` (`grade --dry-run`).

It walks the answers as `runner.Grader.grade` would, offline: an answer `--resume` skips is
skipped, an oversized one goes to a person, T1 (offline by nature) passes what it passes, and each
answer left is one first ask, unless the reply cache already holds the reply to that very request
(the key `runner` looks up: judge, endpoint, parameters, messages, attempt `first`). The cache is
read, never written (`cache.CacheReader`); no judge is built and nothing is contacted.

Only first asks are counted: a format re-ask or a stern retry depends on the reply, so it cannot be
known in advance (each adds at most one more call of about the same size). Tokens are estimated
from characters, four to a token (`transport.estimate_tokens`, the estimate `--tpm` pacing uses
before a server reports real counts); a reply takes at most the judge's `max_tokens`.
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from ..core.compiled import CompiledBattery
from ..core.records import Answer
from ..core.tiers import t1_passes, tokens
from .cache import cache_key, open_cache_reader
from .judges.base import Message
from .judges.identity import JudgeIdentity
from .runner import MAX_ANSWER_BYTES
from .transport import estimate_tokens

#: How tokens are estimated, in the words outputs show it with.
TOKEN_ESTIMATE = "characters / 4, the estimate --tpm pacing uses"


class Estimate(msgspec.Struct):
    """The counts of a dry run. `judge_calls` are the first asks still to send after T1 and the
    reply cache; `prompt_chars` and `prompt_tokens` are theirs (`prompt_tokens` estimated);
    `repeated_prompt_tokens` is the part of those that repeats a SYSTEM prompt already sent for the
    same question (what a provider's prompt cache can serve); `completion_tokens_max` is
    `judge_calls` times `max_tokens`."""

    answers: int = 0
    skipped: int = 0
    oversized: int = 0
    t1_passes: int = 0
    cache_hits: int = 0
    judge_calls: int = 0
    questions: int = 0
    prompt_chars: int = 0
    prompt_tokens: int = 0
    repeated_prompt_tokens: int = 0
    completion_tokens_max: int = 0
    max_tokens: int = 0
    #: False when the reply cache was not read (`--no-cache`, no file yet, a deterministic judge).
    cache_read: bool = False


def estimate_grading(
    battery: CompiledBattery,
    answers: Iterable[Answer],
    judge: JudgeIdentity,
    *,
    cache: str | None,
    skip: set[tuple[str, str]] | frozenset[tuple[str, str]] = frozenset(),
    max_answer_bytes: int = MAX_ANSWER_BYTES,
) -> Estimate:
    """Count what grading `answers` would send to `judge` (module docstring); `cache` is the reply
    cache file (None: `--no-cache`)."""
    estimate = Estimate(max_tokens=judge.params.max_tokens)
    keys = {
        q.id: tuple(tokens(k) for k in (q.gold, *q.accept))
        for q in battery.questions.values()
        if battery.t1 and q.t1
    }
    asked: set[str] = set()
    reader = open_cache_reader(cache, judge.info)
    estimate.cache_read = reader is not None
    try:
        for answer in answers:
            estimate.answers += 1
            if (answer.system, answer.question) in skip:
                estimate.skipped += 1
                continue
            if len(answer.answer.encode("utf-8", "surrogatepass")) > max_answer_bytes:
                estimate.oversized += 1
                continue
            question = battery.questions[answer.question]
            t1_keys = keys.get(question.id)
            if t1_keys is not None and t1_passes(answer.answer, t1_keys):
                estimate.t1_passes += 1
                continue
            messages = [Message("system", question.system), Message("user", battery.user.fill(answer.answer))]
            if reader is not None:
                key = cache_key(
                    judge.info.backend, judge.params, messages, "first", endpoint=judge.info.endpoint
                )
                if reader.has(key):
                    estimate.cache_hits += 1
                    continue
            estimate.judge_calls += 1
            estimate.prompt_chars += sum(len(m.content) for m in messages)
            estimate.prompt_tokens += estimate_tokens(messages)
            if question.id in asked:
                estimate.repeated_prompt_tokens += estimate_tokens(messages[:1])
            asked.add(question.id)
    finally:
        if reader is not None:
            reader.close()
    estimate.questions = len(asked)
    estimate.completion_tokens_max = estimate.judge_calls * estimate.max_tokens
    return estimate
