"""One judge, several endpoints (`grade --replica URL`): the replicas of one model (vLLM or SGLang
servers without a router in front), each question always sent to the same replica.

A question's answers all share its SYSTEM prompt (one per question), so routing on the SYSTEM
prompt keeps each replica's prefix cache full of its own questions' prompts; the question-grouped
dispatch (`dispatch`) already sends a question's answers together. The replica a prompt goes to is
chosen by rendezvous hashing (highest random weight: the replica whose sha256 of its URL, NUL, the
prompt's sha256 is highest), so a replica lost moves only its own questions, each to its next
choice. A replica already holding more than `BALANCE` times its share of the prompts seen so far
passes a new prompt to the prompt's next choice (consistent hashing with bounded loads), so no
replica is loaded far above the mean; that choice depends on the order prompts arrive in, so two
processes (`--workers`, shards) may place a few questions differently, which costs only those
questions a second cache entry.

Each replica has its own `pacing.Pacer`: a replica that pushes back (429, or rate-limit headers
saying nothing is left) slows down alone, and the request waits for that replica's next turn
(`RATE_LIMITED_TRIES` times at most) rather than leaving it, so its cache entry stays useful. A
replica that fails with a retryable error (refused connection, timeout, 5xx) is set aside for
`COOL_DOWN` seconds and the request goes at once to the prompt's next replica; nothing is lost, and
when every replica has failed the last error goes to the grading's retries as a live call's would.
A refusal that no other replica would answer differently (401, 400, ...) is raised as it is.

The replicas are judges the factory built from URLs the user named (`--judge URL` and each
`--replica URL`), so a key reaches one only under the rules of a `--judge URL` (`judges.urls`).
Every record names the first endpoint (`info`): the replicas are one judge, one model, one cache.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Callable, Sequence

from ..core.errors import TransportError
from .judges.base import Completion, Judge, Message
from .pacing import Pacer

#: Seconds a replica that failed is passed over before it is asked again.
COOL_DOWN = 30.0
#: Rate-limited replies one replica may give a request (each waited out on that replica's own
#: pacer, the request keeping its replica) before the grading's retries see the rate limit.
RATE_LIMITED_TRIES = 4
#: No replica is given more than this times its share of the prompts seen so far (consistent
#: hashing with bounded loads): rendezvous alone leaves one replica of 4 with ~1.2x the mean load
#: at 400 questions; a prompt over the bound goes to its next choice.
BALANCE = 1.08


class Replica:
    """One endpoint: its judge, its pacer, until when it is passed over, what it was asked."""

    def __init__(self, judge: Judge, name: str) -> None:
        self.judge = judge
        self.name = name
        self.seed = hashlib.sha256(name.encode("utf-8", "surrogatepass") + b"\0").digest()
        self.pacer = Pacer()
        self.down_until = 0.0
        self.prompts = 0  # prompts (questions) routed here first
        self.sent = 0
        self.failed = 0


def rendezvous(replicas: Sequence[Replica], key: bytes) -> list[Replica]:
    """`replicas` in the order `key` prefers them (highest random weight first)."""
    return sorted(replicas, key=lambda r: hashlib.sha256(r.seed + key).digest(), reverse=True)


def prompt_key(messages: list[Message]) -> bytes:
    """What routes a request: the sha256 of its SYSTEM prompt (the question's), else of all of it."""
    system = next((m.content for m in messages if m.role == "system"), None)
    text = system if system is not None else "\0".join(m.content for m in messages)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


class ReplicaJudge(Judge):
    """The judge of `judges` (one per endpoint, same model and parameters), routed by prompt."""

    def __init__(
        self, judges: Sequence[Judge], names: Sequence[str], *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if len(judges) < 2 or len(judges) != len(names):
            raise ValueError("a ReplicaJudge needs two replicas or more, each with its name")
        self.replicas = [Replica(judge, name) for judge, name in zip(judges, names, strict=True)]
        first = judges[0]
        self.info = first.info
        self.params = first.params
        # Each replica times its own exchange, and a timeout there moves the request to the next
        # one: no timer is needed around the whole (each try is bounded; a failover adds tries).
        timeouts = [j.exchange_timeout for j in judges]
        self.exchange_timeout = None if None in timeouts else max(t for t in timeouts if t is not None)
        self.clock = clock
        self._routes: dict[bytes, list[Replica]] = {}
        self._prompts = 0  # distinct prompts routed so far

    def route(self, messages: list[Message]) -> list[Replica]:
        """The replicas in the order this request's prompt prefers them: its rendezvous order, with
        the first replica that is not already over its bound of prompts put first (`BALANCE`)."""
        key = prompt_key(messages)
        order = self._routes.get(key)
        if order is None:
            order = rendezvous(self.replicas, key)
            self._prompts += 1
            bound = math.ceil(BALANCE * self._prompts / len(self.replicas))
            chosen = next((r for r in order if r.prompts < bound), order[0])
            chosen.prompts += 1
            order.remove(chosen)
            order.insert(0, chosen)
            self._routes[key] = order
        return order

    def reply_tokens(self) -> int:
        # The budget is this judge's (a re-ask doubles it), the body fields each replica's.
        return max(r.judge.with_max_tokens(self.params.max_tokens).reply_tokens() for r in self.replicas)

    async def complete(self, messages: list[Message]) -> Completion:
        """Ask the prompt's replica; on a retryable failure set it aside and ask the next one."""
        order = self.route(messages)
        now = self.clock()
        up = [r for r in order if r.down_until <= now]
        last: TransportError | None = None
        for replica in up or order:  # all set aside: ask them anyway, in the same order
            for _ in range(RATE_LIMITED_TRIES):
                try:
                    return await self._ask(replica, messages)
                except TransportError as exc:
                    last = exc
                    if exc.rate_limited:
                        continue  # its pacer paused this replica alone; its next turn waits it out
                    if not exc.retryable:
                        raise
                    replica.failed += 1
                    replica.down_until = self.clock() + COOL_DOWN
                    break
            else:  # still rate limited: the grading's own retries and pacer take over
                assert last is not None
                raise last
        assert last is not None  # the loop ran at least once and every try failed
        raise last

    async def _ask(self, replica: Replica, messages: list[Message]) -> Completion:
        pacer = replica.pacer
        ticket = pacer.start() if pacer.idle else await pacer.turn()
        replica.sent += 1
        try:
            completion = await replica.judge.complete(messages)
        except TransportError as exc:
            # Every ticket ends once: a rate limit as a push-back, any other failure as a fault.
            if exc.rate_limited:
                pacer.on_push_back(ticket, pause=exc.retry_after or 1.0, reading=exc.rate)
            else:
                pacer.on_fault(ticket)
            raise
        except BaseException:
            pacer.on_fault(ticket)
            raise
        pacer.on_success(ticket, completion.rate)
        return completion

    async def aclose(self) -> None:
        for replica in self.replicas:
            await replica.judge.aclose()
