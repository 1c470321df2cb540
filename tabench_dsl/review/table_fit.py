"""Tables that fit the terminal: columns dropped in a stated order, never a name or a score cut.

A totals table with every column needs about 150 columns; a terminal of 100 used to print the score
as `100…` and lose the T1 and `out` columns without a word. Here a table is built from its whole
columns (`Column`) and the width it may take: while it is wider, the next column of its drop order
goes (`fit_columns`), and a note under the table names the columns left out and where to see them
(`--json` holds every figure, a wider terminal shows them: `COLUMNS=160`). A column marked `kept`
(the system or question, the score, the interval) is never dropped and never cut: a long name folds
onto more lines (down to `FOLD_AT` wide) before any column is dropped for it, a score never does.

The width of a table is rich's for its default box: each column's widest cell plus one space of
padding on each side and one rule, plus the closing rule (`table_width`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from rich.cells import cell_len
from rich.table import Table
from rich.text import Text

from ..core.display import literal

#: The width that shows every column of the totals tables (the note's advice).
WIDE = 160
#: The narrowest a name column is folded to before a column is dropped for it.
FOLD_AT = 24


@dataclass(frozen=True)
class Column:
    """One whole column of a table: its header, its cells (one per row) and how it is laid out.

    `kept` columns are never dropped; of those, a `fold` one (a name) wraps onto more lines when the
    terminal is too narrow even for them, any other (a score) is never wrapped nor cut."""

    name: str
    cells: Sequence[str | Text]
    justify: Literal["left", "right"] = "right"
    kept: bool = False
    fold: bool = False

    @property
    def width(self) -> int:
        """The widest of the header and the cells, in terminal cells."""
        return max([cell_len(self.name), *(_cells(cell) for cell in self.cells)])


def _cells(cell: str | Text) -> int:
    return cell.cell_len if isinstance(cell, Text) else cell_len(cell)


def table_width(columns: Sequence[Column], widths: dict[str, int] | None = None) -> int:
    """The width rich draws `columns` in: each column's width (or its entry in `widths`), two of
    padding and a rule, and one."""
    widths = widths or {}
    return sum(widths.get(column.name, column.width) + 3 for column in columns) + 1


def fit_columns(
    columns: Sequence[Column], width: int | None, drop_order: Sequence[str]
) -> tuple[list[Column], list[str], dict[str, int]]:
    """The columns that fit in `width` (None: all of them), the names of those dropped, in
    `drop_order` (a name not among `columns`, or of a kept column, is passed over), and the widths
    a folding name is narrowed to first (never below `FOLD_AT`), so a long system name costs a
    second line before it costs a column."""
    shown = list(columns)
    dropped: list[str] = []
    widths: dict[str, int] = {}
    if width is None:
        return shown, dropped, widths
    for column in shown:
        excess = table_width(shown, widths) - width
        if column.fold and excess > 0 and column.width > FOLD_AT:
            widths[column.name] = max(FOLD_AT, column.width - excess)
    for name in drop_order:
        if table_width(shown, widths) <= width:
            break
        left = [column for column in shown if column.name != name or column.kept]
        if len(left) < len(shown):
            shown = left
            dropped.append(name)
    return shown, dropped, widths


def dropped_note(dropped: Sequence[str], width: int) -> str:
    """The line under a table that says which columns did not fit and how to see them."""
    names = ", ".join(dropped)
    return (
        f"not shown at {width} columns: {names}; --json has every column, or widen the terminal "
        f"(COLUMNS={WIDE})"
    )


def fitted_table(
    columns: Sequence[Column],
    *,
    width: int | None,
    drop_order: Sequence[str],
    title: str,
    caption: Text | None = None,
) -> Table:
    """A rich table of `columns` that fits `width` (see the module docstring), the note of the
    columns dropped added to `caption`."""
    shown, dropped, widths = fit_columns(columns, width, drop_order)
    if dropped and width is not None:
        note = Text(dropped_note(dropped, width), style="table.caption")
        caption = note if caption is None else caption.copy().append("\n").append(note)
    table = Table(title=title, caption=caption)
    for column in shown:
        table.add_column(
            column.name,
            justify=column.justify,
            no_wrap=not column.fold,
            overflow="fold" if column.fold else "ellipsis",
            # A kept score keeps its width when rich must shrink the table: the name gives way.
            min_width=column.width if column.kept and not column.fold else None,
            max_width=widths.get(column.name),
        )
    for row in zip(*(column.cells for column in shown), strict=True):
        table.add_row(*row)
    return table


def fits(columns: Sequence[Column], width: int | None, drop_order: Sequence[str]) -> bool:
    """Whether `columns` fit in `width` once the columns of `drop_order` are dropped as needed,
    with no name folded onto a second line."""
    shown, _, widths = fit_columns(columns, width, drop_order)
    return width is None or (not widths and table_width(shown) <= width)


#: The prefix of the short labels that stand for system names in a narrow table (`short_labels`).
LABEL_PREFIX = "S"


def short_labels(names: Sequence[str]) -> dict[str, str]:
    """Each of `names` (in order, each once) -> a short label unique among them: S1, S2, ... A
    narrow terminal shows these in a table whose rows are told apart by two system names (pairs),
    or whose columns are systems (tags), with `label_key` under it, so no row becomes `age…`."""
    labels: dict[str, str] = {}
    for name in names:
        labels.setdefault(name, f"{LABEL_PREFIX}{len(labels) + 1}")
    return labels


def label_key(labels: dict[str, str]) -> Text:
    """The key under a table with short labels: one system a line, `S1 = name`, each name text
    from a results file shown literally."""
    key = Text("", style="table.caption")
    for number, (name, label) in enumerate(labels.items()):
        key.append(("\n" if number else "") + f"{label} = ").append(literal(name))
    return key


def with_caption(caption: Text | str | None, more: Text | None) -> Text | str | None:
    """`caption` with `more` on the lines under it (either may be missing)."""
    if more is None:
        return caption
    if caption is None:
        return more
    first = caption.copy() if isinstance(caption, Text) else Text(caption, style="table.caption")
    return first.append("\n").append(more)
