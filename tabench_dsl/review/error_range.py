"""Honest denominators: where a score could lie if its errors were graded.

The score leaves `error` answers out (no usable reply was had). When some exist, totals also give
the range the score would fall in were every error graded: all of them failing,
pass / (pass + fail + adjudicate + error), and all of them passing,
(pass + error) / (pass + fail + adjudicate + error).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    from .totals import SystemTotals, Totals


class ErrorRange(msgspec.Struct, frozen=True):
    """The score if every error were a fail (`all_fail`) and if every error were a pass (`all_pass`)."""

    errors: int
    all_fail: float
    all_pass: float


def error_range(row: SystemTotals) -> ErrorRange | msgspec.UnsetType:
    """The range of `row`'s score over its errors; UNSET (absent from totals' JSON) without errors."""
    if not row.error:
        return msgspec.UNSET
    counted = row.passed + row.fail + row.adjudicate + row.error
    return ErrorRange(row.error, round(row.passed / counted, 6), round((row.passed + row.error) / counted, 6))


def error_range_table(totals: Totals):
    """The systems with errors and the range their score would fall in; None when none has any."""
    rows = [(s, s.if_errors) for s in totals.systems if isinstance(s.if_errors, ErrorRange)]
    if not rows:
        return None
    from rich.table import Table

    from ..core.display import literal

    table = Table(
        title="Scores if the errors were graded",
        caption=literal(
            "errors are left out of the score; --resume grades them again", style="table.caption"
        ),
    )
    for name in ("system", "errors", "score", "all fail", "all pass"):
        table.add_column(name, justify="left" if name == "system" else "right", no_wrap=True)
    for s, found in rows:
        score = "-" if s.score is None else f"{100 * s.score:.1f}%"
        table.add_row(
            literal(s.system),
            str(found.errors),
            score,
            f"{100 * found.all_fail:.1f}%",
            f"{100 * found.all_pass:.1f}%",
        )
    return table
