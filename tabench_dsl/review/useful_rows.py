"""The rows of a long totals section worth a screenful: which come first when not all fit, and the
note that names what was left out and the flag that shows it whole.

`tabench totals` on 100 questions x 20 systems printed 100 question rows and 190 pairs of systems:
a screenful read as scrolling. A section given a row limit (`Limits`) keeps at most that many rows,
chosen for what a person looks for first (`SECTIONS`):

- per question, and per tag: the lowest scores first (a question no system passes is the first
  to read, and to check for a broken gold); a row with no score (only errors) before any;
- facets: the most often observed first;
- pairs of systems: the significant differences first, largest first, then the others by their
  Holm-corrected p.

Nothing is cut from `--json`, `--csv`, the report or the viewer: only these terminal tables.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

Row = TypeVar("Row")

#: The sections `totals --by SECTION` shows whole, each with the rows it counts and the order its
#: rows take when cut.
SECTIONS: Mapping[str, tuple[str, str]] = {
    "question": ("question(s)", "the lowest scores first"),
    "tag": ("tag(s)", "the lowest scores first"),
    "facet": ("facet(s)", "the most observed first"),
    "pairs": ("pair(s) of systems", "the largest significant differences first"),
}


@dataclass(frozen=True)
class Limits:
    """How many rows each section may show (`rows`; None: all of them), and the sections shown whole
    whatever their length (`whole`: `totals --by`)."""

    rows: int | None = None
    whole: frozenset[str] = field(default_factory=frozenset)

    def of(self, section: str) -> int | None:
        """The row limit of `section` (None: every row)."""
        return None if section in self.whole else self.rows


#: No limit: every row of every section (what `render_table` shows unless told otherwise).
EVERY_ROW = Limits()


def useful_rows(rows: Sequence[Row], limit: int | None, key: Callable[[Row], tuple]) -> list[Row]:
    """`rows` as they are when they fit in `limit`, else the `limit` first by `key` (stable)."""
    if limit is None or len(rows) <= limit:
        return list(rows)
    return sorted(rows, key=key)[:limit]


def cut_note(section: str, shown: int, total: int) -> str:
    """The line under a cut section: how many rows it shows and in what order, and the flag that
    shows them all (empty when nothing was cut)."""
    if shown >= total:
        return ""
    noun, order = SECTIONS[section]
    return (
        f"{shown} of {total} {noun} shown, {order}; "
        f"--by {section} shows all {total} (--json holds every figure)"
    )


def with_cut_note(table, note: str):
    """`table` with the cut note on its own line under it, from the left margin (a caption would
    wrap at the table's width); the table alone when nothing was cut."""
    if not note:
        return table
    from rich.console import Group
    from rich.text import Text

    return Group(table, Text(note, style="table.caption"))


def score_first(row) -> tuple:
    """The order of question and tag rows when cut: no score first, then the lowest score, the most
    errors and adjudicates, then the name as given."""
    unresolved = -(row.error + row.adjudicate)
    return (row.score is not None, row.score or 0.0, unresolved)


def facet_first(item: tuple[str, int]) -> tuple:
    """The order of facets when cut: the most observed first."""
    return (-item[1],)


def pair_first(pair) -> tuple:
    """The order of the pairs of systems when cut: the significant first, the largest difference
    first; then the others, the smallest Holm-corrected p first."""
    size = abs(pair.diff) if pair.diff is not None else 0.0
    if pair.significant:
        return (0, -size, pair.p_holm)
    return (1, pair.p_holm, -size)
