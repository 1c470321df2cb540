"""A rich table drawn without rich's general layout when nothing in it needs more: `PlainTable`.

rich lays out each cell of a table as a renderable of its own (measured, padded, wrapped, cropped,
aligned), about 0.15 ms a cell here: `grade`'s per-system table of 50 systems, 16 columns, cost
0.14 s, a fifth of a later `grade --resume` at ten million records. Most tables need none of it:
every cell one line of plain text that fits its column, the table narrower than the console, and
no colour to write (output to a pipe or a file). For those, `PlainTable` writes the same characters
itself: each column as wide as its widest cell (or its `min_width`) plus one space each side, cells
justified left or right, the borders of the table's own box (`rich.box.Box`, substituted for the
console's encoding as rich does), and the title and caption rendered by rich exactly as `Table`
renders them. Anything else (a terminal's colours, a cell that would wrap or be cut, a table wider
than the console, a box or option this does not draw) is handed to the table itself, so the output
is always rich's, byte for byte (`tests/review/test_plain_table.py` holds the two side by side).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, JustifyMethod, RenderResult
from rich.measure import Measurement
from rich.segment import Segment
from rich.style import Style
from rich.table import Table
from rich.text import Text


class PlainTable:
    """`table`, drawn as described in the module docstring when it can be, else by rich."""

    def __init__(self, table: Table) -> None:
        self.table = table

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self.table)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        rows = _plain_rows(self.table, console, options)
        if rows is None:
            yield self.table
            return
        yield from _drawn(self.table, console, options, rows)


def _plain_rows(table: Table, console: Console, options: ConsoleOptions) -> list[list[str]] | None:
    """The table's header and rows as text, when `_drawn` draws it as rich would; else None."""
    if console.color_system is not None or not table.columns or not _plain_options(table):
        return None
    columns = table.columns
    cells = [list(column.cells) for column in columns]
    if any(len(column_cells) != table.row_count for column_cells in cells):
        return None
    rows: list[list[str]] = []
    for row in [[column.header for column in columns], *zip(*cells, strict=True)]:
        texts = [_plain(cell) for cell in row]
        if any(text is None for text in texts):
            return None
        rows.append([text for text in texts if text is not None])
    return rows


def _plain_options(table: Table) -> bool:
    """Whether the table asks for nothing `_drawn` does not draw."""
    return (
        table.box is not None
        and table.show_header
        and table.show_edge
        and not table.show_footer
        and not table.show_lines
        and not table.leading
        and not table.expand
        and table.width is None
        and table.min_width is None
        and table.padding == (0, 1, 0, 1)
        and table.pad_edge
        and not table.collapse_padding
        and not any(row.end_section for row in table.rows)
        and all(column.width is None and column.ratio is None for column in table.columns)
        and all(column.justify in ("left", "right") for column in table.columns)
    )


def _plain(cell: object) -> str | None:
    """A cell's text, when it is one line of printable text rich draws as it is (no justification
    or overflow of its own, no space at either end for a right justification to strip); else None."""
    if isinstance(cell, Text):
        if cell.justify is not None or cell.overflow is not None or cell.no_wrap is not None:
            return None
        text = cell.plain
    elif isinstance(cell, str):
        text = cell
    else:
        return None
    if not text.isprintable() or text != text.strip():
        return None
    return text


def _drawn(
    table: Table, console: Console, options: ConsoleOptions, rows: list[list[str]]
) -> Iterator[Segment]:
    """The segments rich's `Table` renders for `rows` (header first), or the table's own when it
    does not fit the console (then rich narrows its columns)."""
    columns = table.columns
    widths = []
    for index, column in enumerate(columns):
        width = max(cell_len(row[index]) for row in rows)
        if column.min_width is not None:
            width = max(width, column.min_width)
        if column.max_width is not None and column.max_width < width:
            yield from console.render(table, options)
            return
        widths.append(width + 2)
    extra = 2 + len(columns) - 1
    table_width = sum(widths) + extra
    if table_width > options.max_width:
        yield from console.render(table, options)
        return
    box = table.box
    assert box is not None  # `_plain_options` checked it
    box = box.substitute(options, safe=table.safe_box if table.safe_box is not None else console.safe_box)
    annotated = options.update(width=table_width, highlight=table.highlight, height=None)
    if table.title:
        yield from _annotation(
            console, annotated, table.title, table.title_style, "table.title", table.title_justify
        )
    yield Segment(box.get_top(widths))
    yield Segment.line()
    for number, row in enumerate(rows):
        if number == 0:
            left, divider, right = box.head_left, box.head_vertical, box.head_right
        elif number == len(rows) - 1:
            left, divider, right = box.foot_left, box.foot_vertical, box.foot_right
        else:
            left, divider, right = box.mid_left, box.mid_vertical, box.mid_right
        cells = (
            _justified(text, width - 2, column.justify)
            for text, width, column in zip(row, widths, columns, strict=True)
        )
        yield Segment(left + divider.join(f" {cell} " for cell in cells) + right)
        yield Segment.line()
        if number == 0:
            yield Segment(box.get_row(widths, "head", edge=True))
            yield Segment.line()
    yield Segment(box.get_bottom(widths))
    yield Segment.line()
    if table.caption:
        yield from _annotation(
            console, annotated, table.caption, table.caption_style, "table.caption", table.caption_justify
        )


def _justified(text: str, width: int, justify: str) -> str:
    pad = " " * (width - cell_len(text))
    return pad + text if justify == "right" else text + pad


def _annotation(
    console: Console,
    options: ConsoleOptions,
    text: str | Text,
    style: str | Style | None,
    default: str,
    justify: JustifyMethod,
) -> Sequence[Segment]:
    """A title or caption, rendered as `Table` renders it."""
    chosen = Style.pick_first(style, default)
    rendered = console.render_str(text, style=chosen, highlight=False) if isinstance(text, str) else text
    return list(console.render(rendered, options=options.update(justify=justify)))
