"""The viewer's audit mode: a blind audit of answers the judge decided, from the page.

    GET  /api/audit?n=N&seed=S    N answers drawn as `tabench adjudicate --audit` draws them
                                  (`audit.draw_audit_sample`), each as a token, its question, the
                                  gold (with --battery) and the answer: nothing of its system,
                                  verdict or reason
    POST /api/audit               {token, verdict, note}: the person's verdict; the answer goes to
                                  the decisions file as an audit, and the reply reveals the system
                                  and the judge's verdict and reason

A token is random and means something only to this server: the page cannot tell from it, or from
the order of the answers, which system wrote an answer. A token expires `TOKEN_LIFETIME` seconds
after its draw, and the desk keeps at most `MAX_TOKENS` (the oldest dropped first): a page drawing
again and again holds a bounded set, never one token for every draw of the viewer's life.
"""

from __future__ import annotations

import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Literal

import msgspec

from .queries import Index

#: Most answers one audit request draws.
MAX_AUDIT = 200
#: Most tokens kept at once: five full draws.
MAX_TOKENS = 5 * MAX_AUDIT
#: Seconds a token stays valid after its draw: long enough to audit a full draw by hand.
TOKEN_LIFETIME = 12 * 3600.0


class AuditRequest(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """What the page posts for one audited answer."""

    token: str
    verdict: Literal["pass", "fail"]
    note: str | None = None


audit_decoder = msgspec.json.Decoder(AuditRequest)


class AuditDesk:
    """The blind tokens handed out, each standing for one (system, question) of the index."""

    def __init__(self, index: Index, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.index = index
        self.clock = clock
        #: token -> ((system, question), when it expires), oldest first.
        self.tokens: OrderedDict[str, tuple[tuple[str, str], float]] = OrderedDict()

    def _keep(self, token: str, key: tuple[str, str]) -> None:
        self.tokens[token] = (key, self.clock() + TOKEN_LIFETIME)
        while len(self.tokens) > MAX_TOKENS:
            self.tokens.popitem(last=False)

    def _expire(self) -> None:
        now = self.clock()
        while self.tokens and next(iter(self.tokens.values()))[1] <= now:
            self.tokens.popitem(last=False)

    def draw(self, n: int, seed: int) -> dict[str, Any]:
        """`n` answers to audit, blind (module docstring)."""
        if not 1 <= n <= MAX_AUDIT:
            raise ValueError(f"n must be within 1..{MAX_AUDIT}")
        self._expire()
        compiled = self.index.run.compiled
        items = []
        for record in self.index.audit_sample(n, seed):
            token = secrets.token_urlsafe(12)
            self._keep(token, record.key)
            question = compiled.questions.get(record.question) if compiled is not None else None
            items.append(
                {
                    "token": token,
                    "question": record.question,
                    "gold": None if question is None else question.gold,
                    "answer": record.answer,
                }
            )
        return {"seed": seed, "items": items}

    def decide(self, wanted: AuditRequest) -> dict[str, Any]:
        """Record the audit of the answer behind `wanted.token` and reveal what the judge said;
        `KeyError` for a token this server did not hand out, or one that expired."""
        self._expire()
        (system, question), _ = self.tokens[wanted.token]
        record = self.index.record_audit(system, question, wanted.verdict, note=wanted.note or "")
        del self.tokens[wanted.token]
        judge = "T1 (token subset)" if record.tier == "t1" else record.judge.describe()
        return {
            "system": record.system,
            "question": record.question,
            "tier": record.tier,
            "judge_name": judge,
            "judge_verdict": record.verdict,
            "reason": record.reason,
            "verdict": wanted.verdict,
            "agreed": wanted.verdict == record.verdict,
        }
