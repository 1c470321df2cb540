"""The viewer's audit mode: a blind audit of answers the judge decided, from the page.

    GET  /api/audit?n=N&seed=S    N answers drawn as `tabench adjudicate --audit` draws them
                                  (`audit.draw_audit_sample`), each as a token, its question, the
                                  gold (with --battery) and the answer: nothing of its system,
                                  verdict or reason
    POST /api/audit               {token, verdict, note}: the person's verdict; the answer goes to
                                  the decisions file as an audit, and the reply reveals the system
                                  and the judge's verdict and reason

A token is random and means something only to this server: the page cannot tell from it, or from
the order of the answers, which system wrote an answer. Tokens live as long as the viewer does.
"""

from __future__ import annotations

import secrets
from typing import Any, Literal

import msgspec

from .queries import Index

#: Most answers one audit request draws.
MAX_AUDIT = 200


class AuditRequest(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """What the page posts for one audited answer."""

    token: str
    verdict: Literal["pass", "fail"]
    note: str | None = None


audit_decoder = msgspec.json.Decoder(AuditRequest)


class AuditDesk:
    """The blind tokens handed out, each standing for one (system, question) of the index."""

    def __init__(self, index: Index) -> None:
        self.index = index
        self.tokens: dict[str, tuple[str, str]] = {}

    def draw(self, n: int, seed: int) -> dict[str, Any]:
        """`n` answers to audit, blind (module docstring)."""
        if not 1 <= n <= MAX_AUDIT:
            raise ValueError(f"n must be within 1..{MAX_AUDIT}")
        compiled = self.index.run.compiled
        items = []
        for record in self.index.audit_sample(n, seed):
            token = secrets.token_urlsafe(12)
            self.tokens[token] = record.key
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
        `KeyError` for a token this server did not hand out."""
        system, question = self.tokens[wanted.token]
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
