"""CSV cells as `tabench export` and `totals --csv` write them (`export.csv_text`): each written as
the rule says, whichever way the row was made (most rows take no per-cell quoting test)."""

from __future__ import annotations

import csv
import io

from hypothesis import given, settings
from hypothesis import strategies as st

from tabench_dsl.review.export import csv_row, csv_text

FORMULA = ("=", "+", "-", "@", "\t", "\r")


def by_the_rule(value: object) -> str:
    """A cell per docs: None empty, booleans true/false, a formula-like text with a leading `'`,
    quoted (quotes doubled) when it holds a comma, a quote, a carriage return or a line feed."""
    if value is None:
        text = ""
    elif value is True or value is False:
        text = "true" if value else "false"
    elif isinstance(value, str):
        text = "'" + value if value.startswith(FORMULA) else value
    else:
        text = str(value)
    return '"' + text.replace('"', '""') + '"' if any(c in text for c in ',"\r\n') else text


cells = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**12), 10**12),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(alphabet=st.sampled_from(list("ab ,\"\r\n=+-@\t'é")), max_size=8),
)


@settings(derandomize=True, max_examples=300)
@given(st.lists(st.lists(cells, min_size=3, max_size=3), max_size=6))
def test_each_cell_is_written_by_the_rule(rows: list[list[object]]) -> None:
    columns = ["a", "b,c", "d"]
    dicts = [dict(zip(columns, row, strict=True)) for row in rows]
    text = csv_text(columns, dicts)
    expected = 'a,"b,c",d\n' + "".join(",".join(by_the_rule(v) for v in row) + "\n" for row in rows)
    assert text == expected
    parsed = list(csv.reader(io.StringIO(text, newline="")))
    assert len(parsed) == len(rows) + 1


# A NUL beside a formula's first character: `csv_row` looks at a row's texts joined with NULs.
row_texts = st.text(alphabet=st.sampled_from(list("ab ,\"\r\n=+-@\t'é\x00")), max_size=8)


@settings(derandomize=True, max_examples=300)
@given(
    st.lists(st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(0, 1), row_texts), max_size=12)
)
def test_an_export_row_is_written_by_the_rule(values: list[object]) -> None:
    assert csv_row(values) == ",".join(by_the_rule(v) for v in values) + "\n"
