"""`PlainTable` prints what rich's `Table` prints, byte for byte, whether it draws the table itself
(plain text that fits) or hands it to rich (colours, wrapping, a table wider than the console)."""

from __future__ import annotations

import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.table import Table
from rich.text import Text
from support.make_results import many_results

from tabench_dsl.review.plain_table import PlainTable
from tabench_dsl.review.totals import compute_totals
from tabench_dsl.review.totals_tables import system_table


def printed(renderable, width: int, **console: object) -> str:
    out = io.StringIO()
    Console(file=out, width=width, markup=False, emoji=False, **console).print(renderable)  # type: ignore[arg-type]
    return out.getvalue()


class NotDrawnByRich(Table):
    """A table rich must not lay out: `PlainTable` draws it itself or the test fails."""

    def __rich_console__(self, console, options):
        raise AssertionError("drawn by rich")


#: Text a cell may hold: letters, digits, punctuation, spaces, wide characters (two cells each).
TEXT = st.text(alphabet="abcXYZ019 .-%()漢字é", max_size=14)


@st.composite
def tables(draw, kind: type[Table] = Table) -> Table:
    count = draw(st.integers(1, 6))
    title = draw(st.one_of(st.none(), TEXT))
    caption = draw(st.one_of(st.none(), st.text(alphabet="ab cd ef\n", max_size=90)))
    table = kind(title=title or None, caption=caption or None)
    for _ in range(count):
        table.add_column(
            draw(TEXT),
            justify=draw(st.sampled_from(["left", "right"])),
            no_wrap=draw(st.booleans()),
            overflow=draw(st.sampled_from(["fold", "ellipsis"])),
            min_width=draw(st.one_of(st.none(), st.integers(1, 20))),
            max_width=draw(st.one_of(st.none(), st.integers(1, 20))),
        )
    for _ in range(draw(st.integers(0, 5))):
        cells = [draw(TEXT) for _ in range(count)]
        table.add_row(*(Text(cell) if draw(st.booleans()) else cell for cell in cells))
    return table


@settings(derandomize=True, max_examples=300, deadline=None)
@given(table=tables(), width=st.integers(10, 200))
def test_a_plain_table_prints_what_rich_prints(table: Table, width: int) -> None:
    assert printed(PlainTable(table), width) == printed(table, width)


@settings(derandomize=True, max_examples=50, deadline=None)
@given(table=tables(), width=st.integers(10, 200))
def test_in_colour_rich_draws_it(table: Table, width: int) -> None:
    colour = {"force_terminal": True, "color_system": "truecolor"}
    assert printed(PlainTable(table), width, **colour) == printed(table, width, **colour)


def test_a_plain_table_that_fits_is_drawn_without_rich_layout() -> None:
    def build(kind: type[Table]) -> Table:
        table = kind(title="Totals per system", caption=Text("judge: x\nscore = pass / answers"))
        table.add_column("system", justify="left", no_wrap=False, overflow="fold")
        table.add_column("score", justify="right", min_width=8)
        table.add_row("sys-00", "50.0%")
        table.add_row(Text("漢字-01"), "7.5%")
        return table

    drawn = printed(PlainTable(build(NotDrawnByRich)), 80)
    assert drawn == printed(build(Table), 80)
    assert "│ 漢字-01 │     7.5% │" in drawn
    with pytest.raises(AssertionError, match="drawn by rich"):  # wider than 20 columns: rich's
        printed(PlainTable(build(NotDrawnByRich)), 20)


@pytest.mark.parametrize("width", [60, 100, 120, 160, 220])
def test_the_per_system_table_prints_as_rich_prints_it(width: int) -> None:
    totals = compute_totals(many_results(3000, systems=12, seed=7))
    table = system_table(totals, width)
    assert printed(PlainTable(table), width) == printed(table, width)
