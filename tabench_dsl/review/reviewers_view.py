"""The several reviewers in the terminal: people against each other (the human ceiling) beside the
judge against each of them and against their consensus (`reviewers`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .audit_view import share_text
from .reviewers import Kappa, Reviewers

if TYPE_CHECKING:
    from rich.table import Table

    from .totals import Totals


def kappa_text(figures: Kappa) -> str:
    """`0.741 (0.52-0.90)`: kappa with its bootstrap interval; `-` where it is undefined."""
    if figures.kappa is None:
        return "-"
    if figures.kappa_low is None or figures.kappa_high is None:
        return f"{figures.kappa:.3f}"
    return f"{figures.kappa:.3f} ({figures.kappa_low:.2f}-{figures.kappa_high:.2f})"


def reviewer_tables(totals: Totals) -> list[Table]:
    """The reviewers' table, none with fewer than two reviewers."""
    found = totals.reviewers
    if not isinstance(found, Reviewers):
        return []
    return [ceiling_table(found)]


def ceiling_table(found: Reviewers) -> Table:
    """Each pair of reviewers, with the judge against each and their consensus on the same answers
    below it; then the judge against each person and the consensus on everything audited."""
    from rich.table import Table

    from ..core.display import literal

    left_out = (
        f"; {found.disagreed} answer(s) the reviewers disagree on are left out of the validated score"
        if found.disagreed
        else ""
    )
    table = Table(
        title="Reviewers against each other (the human ceiling) and the judge against them",
        caption=literal(
            "A ~ B: two people on the answers both audited (the human ceiling), the judge against each "
            "below; all = every answer each audited; consensus = the answers the people agree on; "
            f"kappa with a 95% bootstrap interval, agreement with its Wilson interval{left_out}",
            style="table.caption",
        ),
    )
    for name in ("raters", "answers", "agreement", "kappa"):
        table.add_column(name, justify="left" if name == "raters" else "right", no_wrap=True)
    rows: list[tuple[str, Kappa]] = []
    for pair in found.pairs:
        rows.append((f"{pair.first} ~ {pair.second}", pair.people))
        rows.append((f"  judge ~ {pair.first}", pair.judge_vs_first))
        rows.append((f"  judge ~ {pair.second}", pair.judge_vs_second))
        rows.append(("  judge ~ consensus", pair.judge_vs_consensus))
    rows.extend((f"all: judge ~ {judge.reviewer}", judge.figures) for judge in found.judge)
    for name, figures in rows:
        table.add_row(literal(name), str(figures.n), share_text(figures.agreement), kappa_text(figures))
    return table
