"""The blind audits in the terminal: the judge against people, and the scores they validate.

Shown by `tabench totals` once the decisions file holds audits (`audit`, `validated`): one row per
system, one for every answer together and one per tier, then each audited answer where the person
and the judge disagree.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from .audit import AuditAgreement, Proportion
from .validated import ValidatedScore

if TYPE_CHECKING:
    from rich.table import Table

    from .totals import Totals


def share_text(share: Proportion) -> str:
    """`87.5% (61.7-96.5%)`, or `-` where nothing was counted."""
    if share.value is None or share.ci_low is None or share.ci_high is None:
        return "-"
    return f"{100 * share.value:.1f}% ({100 * share.ci_low:.1f}-{100 * share.ci_high:.1f}%)"


def validated_text(score: ValidatedScore | None) -> tuple[str, str]:
    """The validated score with its interval, and the audits that would halve its width."""
    if score is None:
        return "-", "-"
    more = "-" if score.more_audits_to_halve is None else f"+{score.more_audits_to_halve}"
    text = f"{100 * score.estimate:.1f}% ({100 * score.ci_low:.1f}-{100 * score.ci_high:.1f}%)"
    return text, more


def known(score: ValidatedScore | msgspec.UnsetType) -> ValidatedScore | None:
    """A validated score, None where totals have none (UNSET)."""
    return score if isinstance(score, ValidatedScore) else None


def audit_tables(totals: Totals) -> list[Table]:
    """The audit tables, none when no answer was audited."""
    from rich.table import Table

    from ..core.display import literal

    overall = totals.usage.audit
    if not isinstance(overall, AuditAgreement):
        return []
    table = Table(
        title="Judge against blind human audits",
        caption=literal(
            "human verdict taken as true, pass as positive; validated = prediction-powered estimate of "
            "the score (judge verdicts corrected by the audits), +N = audits that would halve its interval",
            style="table.caption",
        ),
    )
    for name in (
        "system",
        "audited",
        "agreement",
        "kappa",
        "sensitivity",
        "specificity",
        "score",
        "validated",
        "halve",
    ):
        table.add_column(name, justify="left" if name == "system" else "right", no_wrap=True)
    rows: list[tuple[str, AuditAgreement, float | None, ValidatedScore | None]] = [
        (s.system, s.audit, s.score, known(s.validated_score))
        for s in totals.systems
        if isinstance(s.audit, AuditAgreement)
    ]
    rows.append(("all", overall, None, known(totals.usage.validated_score)))
    rows.extend((f"tier {tier}", found, None, None) for tier, found in overall.tiers.items())
    for name, found, score, validated in rows:
        kappa = "-" if found.kappa is None else f"{found.kappa:.3f}"
        raw = "-" if score is None else f"{100 * score:.1f}%"
        table.add_row(
            literal(name),
            str(found.n),
            share_text(found.agreement),
            kappa,
            share_text(found.sensitivity),
            share_text(found.specificity),
            raw,
            *validated_text(validated),
        )
    return [table, *([disagreements_table(overall)] if overall.disagreements else [])]


def disagreements_table(overall: AuditAgreement) -> Table:
    """Each audited answer where the person's verdict is not the judge's."""
    from rich.table import Table

    from ..core.display import literal

    misses = Table(title="Audited answers where the person and the judge disagree")
    for name in ("system", "question", "tier", "judge", "person", "reviewer", "note"):
        misses.add_column(name)
    for miss in overall.disagreements:
        misses.add_row(
            literal(miss.system),
            literal(miss.question),
            miss.tier,
            miss.judge_verdict,
            miss.human_verdict,
            literal(miss.reviewer),
            literal(miss.note),
        )
    return misses
