"""One ask of a judge, as the grading loop makes it: from the reply cache when it holds the reply,
else through the exchange (transport retries, the spend cap), scrubbed, cached, decoded, and
recorded as an `Attempt`; a reply cut off at its token budget asked again once with twice the
budget (`reply_endings`).

The grading loop (`runner.Grader`) owns one `Asker` and gives it its exchange, so a batch grading,
which overrides the exchange, keeps everything around the call: the cache, decoding and records.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence

import msgspec

from ..core.errors import TransportError, UsageError
from ..core.records import Attempt, AttemptKind, Cause
from ..core.redact import scrub
from .cache import CachedReply, ReplyCache
from .cache_keys import reply_key
from .judges.base import Completion, Judge, Message
from .judges.request_hash import request_sha256
from .reachability import ReachabilityWatch
from .reply_endings import cut_off, doubled_budget, final_text, truncated_reason
from .reply_endings import problem as reply_problem
from .spend_cap import SpendCap
from .transport import RetryPolicy
from .verdict import Decoded, cut_reply, decode_reply

#: One call of a judge with its transport retries: the completion and the retries it took.
Exchange = Callable[[Judge, AttemptKind, list[Message]], Awaitable[tuple[Completion, int]]]


class Asked(msgspec.Struct):
    """What one ask gave: its attempt (already appended to the answer's attempts) and the decoded
    reply."""

    attempt: Attempt
    decoded: Decoded | None  # None when transport failed for good, or the reply was cut off twice
    #: Transport failed for good because the judge was still rate limiting when the wait was over.
    rate_limited: bool = False
    #: The reply's text without its reasoning blocks (`reply_endings.final_text`): what was decoded.
    final: str = ""
    #: Set when the answer ends here without a verdict (cause `truncated`), with its reason.
    ended: Cause | None = None
    reason: str = ""


class Asker:
    """Asks judges for the grading loop. `cache` is None for `--no-cache` (a deterministic judge
    is never cached); `secrets` are scrubbed from every reply and error message; `exchange` makes
    the call; `spend_cap` reserves each request's most before it is sent."""

    def __init__(
        self,
        *,
        exchange: Exchange,
        cache: ReplyCache | None,
        policy: RetryPolicy,
        secrets: Sequence[str],
        reasoning_tags: Sequence[tuple[str, str]],
        facets: Sequence[str],
        spend_cap: SpendCap | None = None,
    ) -> None:
        self.exchange = exchange
        self.cache = cache
        self.policy = policy
        self.secrets = secrets
        self.reasoning_tags = reasoning_tags
        self.facets = facets
        self.spend_cap = spend_cap
        self.reachability = ReachabilityWatch()

    async def ask(
        self,
        judge: Judge,
        kind: AttemptKind,
        messages: list[Message],
        attempts: list[Attempt],
        tolerated: list[str],
        repetition: int = 0,
    ) -> Asked:
        """One ask of `judge` (`ask_once`); a reply cut off at its token budget is asked again once
        with twice the budget, each attempt recording the budget it had, and cut off again ends the
        answer (cause `truncated`: `reply_endings`)."""
        asked = await self.ask_once(judge, kind, messages, attempts, tolerated, repetition)
        if asked.decoded is None or not cut_off(asked.attempt, asked.final):
            return asked
        budget = judge.params.max_tokens
        attempts[-1] = msgspec.structs.replace(asked.attempt, max_tokens=budget)
        longer = judge.with_max_tokens(doubled_budget(budget))
        asked = await self.ask_once(longer, kind, messages, attempts, tolerated, repetition)
        if asked.decoded is not None:
            attempts[-1] = msgspec.structs.replace(asked.attempt, max_tokens=longer.params.max_tokens)
            if cut_off(asked.attempt, asked.final):
                reason = truncated_reason(budget, longer.params.max_tokens)
                return Asked(attempts[-1], None, final=asked.final, ended="truncated", reason=reason)
        return asked

    async def ask_once(
        self,
        judge: Judge,
        kind: AttemptKind,
        messages: list[Message],
        attempts: list[Attempt],
        tolerated: list[str],
        repetition: int = 0,
    ) -> Asked:
        """One attempt of `judge`, from the cache when it holds the reply; appended to `attempts`.
        The cache key (`cache_keys.reply_key`, for the lookup and the store alike) names the judge
        as built (backend, endpoint, model, parameters, request shape), so each judge of a panel has
        entries of its own, and the ask's number, so each `--repeat` ask has its own."""
        sha = request_sha256(messages)
        cache = None if judge.info.deterministic else self.cache
        key = None if cache is None else reply_key(judge, messages, kind, repetition)
        if cache is not None and key is not None:
            hit = cache.get(key)
            if hit is not None:
                return self._decoded(self._cached(kind, hit, sha), attempts, tolerated)
        started = time.perf_counter()
        try:
            completion, retries = await self._capped_exchange(judge, kind, messages)
        except TransportError as exc:
            return self._failed(judge, kind, exc, sha, attempts)
        self.reachability.replied(judge.info)
        latency = completion.latency_ms or (time.perf_counter() - started) * 1000.0
        content = self.received(completion.content)
        if cache is not None and key is not None:
            cache.put(key, content, completion.tokens, stop=completion.stop, refusal=completion.refusal)
        attempt = Attempt(
            kind,
            content,
            round(latency, 3),
            completion.tokens,
            transport_retries=retries,
            request_sha256=sha,
            stop=completion.stop or None,
            refusal=self._refusal(completion.refusal),
            served=completion.served,
        )
        return self._decoded(attempt, attempts, tolerated)

    def _failed(
        self, judge: Judge, kind: AttemptKind, exc: TransportError, sha: str, attempts: list[Attempt]
    ) -> Asked:
        """The attempt of a call whose transport failed for good; a refusal for want of credit
        stops the run (`UsageError`), an unusable judge too (`reachability`)."""
        message = scrub(str(exc), self.secrets)
        if exc.stops_run:  # no credit left: the user must act before any call can succeed
            raise UsageError(f"the judge refused the request: {message}") from None
        self.reachability.failed(judge.info, exc, message)  # raises when the judge is unusable
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
        return Asked(attempt, None, rate_limited=exc.rate_limited)

    async def _capped_exchange(
        self, judge: Judge, kind: AttemptKind, messages: list[Message]
    ) -> tuple[Completion, int]:
        """The exchange under the spend cap, when there is one: the request's most is reserved
        first (`SpendCapReached` when it does not fit), then replaced by what it cost."""
        cap = self.spend_cap
        if cap is None:
            return await self.exchange(judge, kind, messages)
        price = judge.info.price
        assert price is not None  # check_cappable
        reserved = cap.reserve(messages, judge.reply_tokens(), price)
        tokens = None
        try:
            completion, retries = await self.exchange(judge, kind, messages)
            tokens = completion.tokens
            return completion, retries
        finally:
            cap.settle(reserved, tokens, price)

    def _cached(self, kind: AttemptKind, hit: CachedReply, sha: str) -> Attempt:
        """The attempt of a reply the cache held; scrubbed again: a cache written before replies
        were scrubbed may hold a key."""
        return Attempt(
            kind,
            self.received(hit.content),
            0.0,
            hit.tokens,
            cache_hit=True,
            request_sha256=sha,
            stop=hit.stop or None,
            refusal=self._refusal(hit.refusal),
        )

    def _refusal(self, refusal: str | None) -> str | None:
        """A refusal's text as the server gave it beside the reply, scrubbed like the reply."""
        return None if refusal is None else self.received(refusal)

    def received(self, content: str) -> str:
        """A judge's reply as tabench keeps it: without the keys in use or key-shaped words, and
        cut to `verdict.MAX_REPLY_BYTES` when longer (such a reply is malformed: `cut_reply`).
        Every reply, fresh or cached, passes here before it is decoded, cached or recorded, so the
        reason, the facets, the attempt, the cache entry and the results line all hold this text
        (and a replay of that results file serves it). Scrubbed before it is cut, so no cut leaves
        the first half of a key."""
        return cut_reply(scrub(content, self.secrets))

    def _decoded(self, attempt: Attempt, attempts: list[Attempt], tolerated: list[str]) -> Asked:
        attempts.append(attempt)
        final = final_text(attempt.raw or "", self.reasoning_tags)
        refused = reply_problem(attempt, final)
        if refused is not None:
            return Asked(attempt, Decoded(None, (), refused), final=final)
        decoded = decode_reply(final, facet_names=self.facets)
        for form in decoded.tolerated:
            if form not in tolerated:
                tolerated.append(form)
        return Asked(attempt, decoded, final=final)
