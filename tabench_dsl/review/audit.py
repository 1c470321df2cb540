"""Blind audits: a person checks answers the judge (or T1) decided, and totals measure the judge
against them.

An audit is a `Decision` with `"kind": "audit"` in `RESULTS.decisions.jsonl`. It never changes the
standing verdict: applied, it is set on the record it checks as `Record.human_audit`, provided that
record is the standing one of its (system, question), still decided by the judge or T1 (pass or
fail), graded with the same prompt (`prompt_sha256`) on the same answer text (`answer_sha256`;
not compared for a record read without its texts, as `grade`'s closing totals read them).
Each reviewer's last audit of a pair counts; a reviewer's earlier ones are stale, and reported as
such, and one reviewer never replaces another. With two or more reviewers on a pair, the record keeps
each one's audit (`reviewer_audits`) and `human_audit` is their consensus, none when they disagree:
such an answer is left out of the judge's agreement and of the validated score (`reviewers`).

The sample (`draw_audit_sample`) is stratified by system and verdict with proportional
allocation (largest remainder), so every decided answer has (up to rounding) the same chance to be
drawn: the uniform sample `validated`'s prediction-powered estimate needs. Within a stratum, and in
the order they are shown, answers are ranked by the sha256 of the seed and their (system,
question): the same file, number and seed draw the same answers, whatever order the file is in.

Agreement (`audit_agreement`) takes the human as the truth and `pass` as positive:

                    human pass   human fail
        judge pass      tp           fp
        judge fail      fn           tn

agreement (tp + tn) / n, sensitivity tp / (tp + fn), specificity tn / (tn + fp), precision
tp / (tp + fp), each with its Wilson interval; Cohen's kappa by `stats.cohen_kappa` (None when both
gave one and the same verdict to every answer, the one degenerate case).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Iterator, Sequence, Set
from typing import Protocol, TypeVar

import msgspec

from ..core.records import Decision, Record
from ..core.stats import cohen_kappa, wilson_interval

#: The verdicts an audit checks: the ones the judge or T1 decided.
DECIDED = ("pass", "fail")


def answer_sha256(record: Record) -> str:
    """The sha256 hex of the answer text a record graded, as an audit names it."""
    return hashlib.sha256(record.answer.encode("utf-8")).hexdigest()


def attach_audits(
    records: list[Record], audits: Iterable[Decision]
) -> tuple[list[Record], list[tuple[Decision, str]]]:
    """`records` with each pair's audits set on its standing record, and every audit not applied
    with the reason (see the module docstring). Each reviewer's last valid audit of a pair counts;
    one reviewer never replaces another's. With one reviewer it is `human_audit`; with several, all
    are `reviewer_audits` and `human_audit` is their consensus (`consensus_of`) when they agree,
    none when they disagree."""
    last_index = {record.key: i for i, record in enumerate(records)}
    chosen: dict[tuple[str, str], dict[str, Decision]] = {}
    stale: list[tuple[Decision, str]] = []
    for audit in audits:
        key = (audit.system, audit.question)
        index = last_index.get(key)
        reason = stale_audit_reason(None if index is None else records[index], audit)
        if reason is not None:
            stale.append((audit, reason))
            continue
        by_reviewer = chosen.setdefault(key, {})
        if audit.reviewer in by_reviewer:
            stale.append((by_reviewer.pop(audit.reviewer), "replaced by a later audit"))
        by_reviewer[audit.reviewer] = audit  # re-inserted: the dict's last is the latest audit
    records = list(records)
    for key, by_reviewer in chosen.items():
        index = last_index[key]
        each = list(by_reviewer.values())
        if len(each) == 1:
            records[index] = msgspec.structs.replace(records[index], human_audit=each[0])
            continue
        agreed = len({audit.verdict for audit in each}) == 1
        consensus = consensus_of(each) if agreed else msgspec.UNSET
        records[index] = msgspec.structs.replace(records[index], human_audit=consensus, reviewer_audits=each)
    return records, stale


def consensus_of(audits: Sequence[Decision]) -> Decision:
    """The audit standing for reviewers who agree: the latest, naming them all (`ann, bob`) with
    each one's note, so a note is not lost to a later audit without one."""
    notes = list(dict.fromkeys(audit.note for audit in audits if audit.note))
    return msgspec.structs.replace(
        audits[-1], reviewer=", ".join(audit.reviewer for audit in audits), note="; ".join(notes)
    )


def stale_audit_reason(record: Record | None, audit: Decision) -> str | None:
    """Why `audit` does not apply to `record` (the standing record of its pair), None when it does."""
    if record is None:
        return "no such record in the results"
    if record.prompt_sha256 != audit.prompt_sha256:
        return "the prompt changed since the audit (sha256 differs)"
    # A record read without its texts (`light_records.iter_light_records`) has no answer to compare.
    if (
        isinstance(audit.answer_sha256, str)
        and record.answer
        and audit.answer_sha256 != answer_sha256(record)
    ):
        return "the answer changed since the audit (sha256 differs)"
    if record.verdict not in DECIDED:
        return f"the record is no longer decided by the judge (now {record.verdict})"
    return None


class Drawable(Protocol):
    """What the draw reads of a record: a `Record`, or a stand-in the viewer builds from its
    columns so that a million records are not decoded whole to draw ten."""

    @property
    def system(self) -> str: ...
    @property
    def question(self) -> str: ...
    @property
    def verdict(self) -> str: ...
    @property
    def decision(self) -> Decision | None: ...
    @property
    def audited_by_human(self) -> Decision | None: ...


DrawnT = TypeVar("DrawnT", bound=Drawable)


def draw_audit_sample(
    records: Iterable[DrawnT], n: int, *, seed: int = 0, done: Set[tuple[str, str]] | None = None
) -> list[DrawnT]:
    """Up to `n` of the decided, not yet audited records, stratified by (system, verdict), in a
    shuffled order that does not give the strata away (see the module docstring). `done` names the
    (system, question) pairs the reviewer audited already: other people's audits then leave an
    answer in the draw, so two reviewers with one seed draw the same answers (without `done`, an
    answer anyone audited is left out)."""
    strata: dict[tuple[str, str], list[DrawnT]] = {}
    for record in drawable(records, done):
        strata.setdefault((record.system, record.verdict), []).append(record)
    sizes = {key: len(members) for key, members in sorted(strata.items())}
    drawn: list[DrawnT] = []
    for key, count in proportional_allocation(sizes, n).items():
        ranked = sorted(strata[key], key=lambda r: _rank(seed, "draw", r))
        drawn.extend(ranked[:count])
    return sorted(drawn, key=lambda r: _rank(seed, "show", r))


def drawable(records: Iterable[DrawnT], done: Set[tuple[str, str]] | None) -> Iterator[DrawnT]:
    """The records an audit may draw: decided by the judge or T1, not settled by a person, and not
    audited yet (by the reviewer, with `done`; by anyone, without)."""
    for record in records:
        if record.verdict not in DECIDED or record.decision is not None:
            continue
        audited = (
            record.audited_by_human is not None if done is None else (record.system, record.question) in done
        )
        if not audited:
            yield record


def proportional_allocation(sizes: dict[tuple[str, str], int], n: int) -> dict[tuple[str, str], int]:
    """`n` (at most the total) shared among strata in proportion to their sizes, by largest
    remainder (Hamilton's method; ties go to the stratum first in `sizes`' order)."""
    total = sum(sizes.values())
    n = max(0, min(n, total))
    if not total:
        return {}
    quotas = {key: n * size / total for key, size in sizes.items()}
    counts = {key: math.floor(quota) for key, quota in quotas.items()}
    left = n - sum(counts.values())
    by_remainder = sorted(sizes, key=lambda key: -(quotas[key] - counts[key]))
    for key in by_remainder[:left]:
        counts[key] += 1
    return counts


def _rank(seed: int, purpose: str, record: Drawable) -> str:
    return hashlib.sha256(f"{seed}\0{purpose}\0{record.system}\0{record.question}".encode()).hexdigest()


class Proportion(msgspec.Struct):
    """`hits` of `n`, their share `value` and its 95% Wilson interval (all None when n is 0)."""

    hits: int = 0
    n: int = 0
    value: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None


class Confusion(msgspec.Struct):
    """The judge's verdicts against the humans' on the audited answers (module docstring)."""

    judge_pass_human_pass: int = 0
    judge_pass_human_fail: int = 0
    judge_fail_human_pass: int = 0
    judge_fail_human_fail: int = 0


class AuditDisagreement(msgspec.Struct, frozen=True):
    """An audited answer where the person's verdict is not the judge's."""

    system: str
    question: str
    tier: str
    judge_verdict: str
    human_verdict: str
    reviewer: str
    note: str


class AuditAgreement(msgspec.Struct):
    """The judge (or T1) against the blind audits of `n` answers: see the module docstring. `tiers`
    holds the same figures per tier (T1's precision measured by people) under `"all"`."""

    n: int = 0
    agreement: Proportion = msgspec.field(default_factory=Proportion)
    kappa: float | None = None
    sensitivity: Proportion = msgspec.field(default_factory=Proportion)
    specificity: Proportion = msgspec.field(default_factory=Proportion)
    precision: Proportion = msgspec.field(default_factory=Proportion)
    confusion: Confusion = msgspec.field(default_factory=Confusion)
    tiers: dict[str, AuditAgreement] = msgspec.field(default_factory=dict)
    disagreements: list[AuditDisagreement] = msgspec.field(default_factory=list)


def proportion(hits: int, n: int) -> Proportion:
    """`hits` of `n` with the share and its Wilson interval, bounds rounded as totals round them."""
    interval = wilson_interval(hits, n)
    if interval is None:
        return Proportion(hits, n)
    low, high = interval
    return Proportion(hits, n, hits / n, _bound(low), _bound(high))


def audit_agreement(audited: Sequence[Record]) -> AuditAgreement | None:
    """The agreement of the judge's verdicts with the human audits on `audited` (records carrying a
    `human_audit`); None when there is none."""
    pairs = [(r.verdict, audit.verdict) for r in audited if (audit := r.audited_by_human) is not None]
    if not pairs:
        return None
    c = Confusion(
        judge_pass_human_pass=pairs.count(("pass", "pass")),
        judge_pass_human_fail=pairs.count(("pass", "fail")),
        judge_fail_human_pass=pairs.count(("fail", "pass")),
        judge_fail_human_fail=pairs.count(("fail", "fail")),
    )
    tp, fp, fn, tn = (
        c.judge_pass_human_pass,
        c.judge_pass_human_fail,
        c.judge_fail_human_pass,
        c.judge_fail_human_fail,
    )
    return AuditAgreement(
        n=len(pairs),
        agreement=proportion(tp + tn, len(pairs)),
        kappa=cohen_kappa(pairs),
        sensitivity=proportion(tp, tp + fn),
        specificity=proportion(tn, tn + fp),
        precision=proportion(tp, tp + fp),
        confusion=c,
    )


def audit_agreements(
    standing: Iterable[Record],
) -> tuple[dict[str, AuditAgreement], AuditAgreement | msgspec.UnsetType]:
    """Per system, and over every system with per-tier figures and the disagreements listed: the
    judge against the audits of the standing records. ({}, UNSET) when nothing was audited, so
    totals' JSON says nothing of audits until there are some."""
    audited = [record for record in standing if record.audited_by_human is not None]
    by_system: dict[str, list[Record]] = {}
    by_tier: dict[str, list[Record]] = {}
    for record in audited:
        by_system.setdefault(record.system, []).append(record)
        by_tier.setdefault(record.tier, []).append(record)
    overall = audit_agreement(audited)
    if overall is None:
        return {}, msgspec.UNSET
    per_system = {name: found for name, rows in by_system.items() if (found := audit_agreement(rows))}
    overall.tiers = {
        tier: found for tier, rows in sorted(by_tier.items()) if (found := audit_agreement(rows))
    }
    overall.disagreements = [_disagreement(r) for r in audited if r.verdict != _human(r).verdict]
    return per_system, overall


def _human(record: Record) -> Decision:
    audit = record.audited_by_human
    assert audit is not None
    return audit


def _disagreement(record: Record) -> AuditDisagreement:
    audit = _human(record)
    return AuditDisagreement(
        record.system, record.question, record.tier, record.verdict, audit.verdict, audit.reviewer, audit.note
    )


def _bound(value: float) -> float:
    # As totals.interval_bound rounds (not imported: totals imports this module).
    return round(min(1.0, max(0.0, value)), 6)
