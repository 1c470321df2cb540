"""Human decisions on `adjudicate` records, kept beside the results they judge.

A results file `RUN.jsonl` is never rewritten; a person's verdict on one of its `adjudicate` records is
appended to `RUN.decisions.jsonl` as one `records.Decision` per line (the file is the results
store's: `store.decisions`). Applying decisions pairs each
with the latest record of its (system, question): the last decision for a pair wins, provided it was
made on the same prompt (its `prompt_sha256` matches) and the record is still `adjudicate`. Any other
decision is stale: it is ignored and reported, so a re-graded or re-compiled answer is never judged
by a decision made on different text.
"""

from __future__ import annotations

import getpass
import os
from collections.abc import Iterable
from datetime import UTC, datetime

import msgspec

from ..core.errors import UsageError
from ..core.records import Decision, Record
from ..core.redact import scrub, secrets_in
from .audit import answer_sha256, attach_audits


class StaleDecision(msgspec.Struct, frozen=True):
    """A decision that was not applied, and why (no such record, prompt changed, not adjudicate)."""

    decision: Decision
    reason: str


def apply_decisions(
    records: Iterable[Record],
    decisions: Iterable[Decision],
    *,
    stale: list[StaleDecision] | None = None,
) -> list[Record]:
    """The records, with `decision` set on the latest record of each decided pair.

    Records keep their order; only the latest record of a pair can carry a decision. The last
    decision for a pair wins when its prompt hash matches that record and the record is
    `adjudicate`; every decision not applied is appended to `stale` (when given) with the reason.
    Passing the result to `totals.compute_totals` counts decided records as human verdicts.
    Blind audits (`Decision.is_audit`) never settle a verdict: they are set on the records they
    check as `human_audit` (`audit.attach_audits`), for totals to measure the judge against.
    """
    records = list(records)
    decisions = list(decisions)
    audits = [decision for decision in decisions if decision.is_audit]  # never settle a verdict
    last_index: dict[tuple[str, str], int] = {}
    for i, record in enumerate(records):
        last_index[record.key] = i
    chosen: dict[tuple[str, str], Decision] = {}
    for decision in decisions:
        if decision.is_audit:
            continue
        key = (decision.system, decision.question)
        index = last_index.get(key)
        reason = _stale_reason(None if index is None else records[index], decision)
        if reason is not None:
            if stale is not None:
                stale.append(StaleDecision(decision, reason))
            continue
        if stale is not None and key in chosen:
            stale.append(StaleDecision(chosen[key], "replaced by a later decision"))
        chosen[key] = decision
    for key, decision in chosen.items():
        index = last_index[key]
        records[index] = msgspec.structs.replace(records[index], decision=decision)
    if not audits:
        return records
    records, stale_audits = attach_audits(records, audits)
    if stale is not None:
        stale.extend(StaleDecision(audit, reason) for audit, reason in stale_audits)
    return records


def make_decision(
    record: Record,
    verdict: str,
    *,
    reviewer: str | None = None,
    note: str = "",
    now: datetime | None = None,
    audit: bool = False,
    inclusion_probability: float | None = None,
) -> Decision:
    """A decision on `record` by `reviewer` (default: the login name), stamped with the UTC time.
    With `audit`, a blind audit (`"kind": "audit"`) carrying the sha256 of the answer it judged,
    and the chance its draw had of drawing it (`inclusion_probability`) for a draw that leaned.

    The note is free text a reviewer may paste anything into: it is scrubbed of keys (the values of
    the key variables in the environment and anything key-shaped) like every other text tabench
    writes."""
    if verdict not in ("pass", "fail"):
        raise UsageError(f"a decision is pass or fail, not {verdict!r}")
    stamp = (now or datetime.now(UTC)).astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    return Decision(
        system=record.system,
        question=record.question,
        verdict=verdict,  # type: ignore[arg-type]
        prompt_sha256=record.prompt_sha256,
        reviewer=scrub(reviewer or default_reviewer(), secrets_in(os.environ)),
        time=stamp,
        note=scrub(note.strip(), secrets_in(os.environ)),
        kind="audit" if audit else msgspec.UNSET,
        answer_sha256=answer_sha256(record) if audit else msgspec.UNSET,
        inclusion_probability=msgspec.UNSET if inclusion_probability is None else inclusion_probability,
    )


def default_reviewer() -> str:
    """The login name, or `unknown` where the platform cannot tell."""
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return "unknown"


def _stale_reason(record: Record | None, decision: Decision) -> str | None:
    if record is None:
        return "no such record in the results"
    if record.prompt_sha256 != decision.prompt_sha256:
        return "the prompt changed since the decision (sha256 differs)"
    if record.verdict != "adjudicate":
        return f"the record is no longer adjudicate (now {record.verdict})"
    return None


def decisions_by_pair(decisions: Iterable[Decision]) -> dict[tuple[str, str], list[Decision]]:
    decided: dict[tuple[str, str], list[Decision]] = {}
    for decision in decisions:
        decided.setdefault((decision.system, decision.question), []).append(decision)
    return decided


def decided_record(record: Record, decided: dict[tuple[str, str], list[Decision]]) -> Record:
    """A standing record with its pair's decisions applied, as `apply_decisions` applies them to
    the last record of a pair (the only record of the pair it is given)."""
    found = decided.get(record.key) if decided else None
    return apply_decisions([record], found)[0] if found else record
