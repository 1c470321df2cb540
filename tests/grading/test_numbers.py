"""The one reader of numbers (`core.numbers`) that T1, the match checks and the builtin judge share."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tabench_dsl.core.numbers import final_number, numeral, parse_number, ungrouped, ungrouped_text
from tabench_dsl.core.t1_reading import read, texts
from tabench_dsl.grading.judges.lexical import words


@pytest.mark.parametrize(
    ("written", "value", "as_written", "short_decades"),
    [
        ("1,499.00", "1499", "1499.00", "1499.00"),
        ("12,000,000.5", "12000000.5", "12000000.5", "12000000.5"),
        ("13,5", "13,5", "13,5", "13,5"),  # a comma that groups nothing stays
        ("1,2345", "1,2345", "1,2345", "1,2345"),
        ("3.10", "3.1", "3.10", "3.10"),  # a version is not its value
        ("12th", "12", "12", "12"),
        ("2nd", "2", "2", "2"),
        ("1920s", "1920s", "1920s", "1920s"),  # a decade is never its first year
        ("90s", "90s", "90s", "1990s"),
        ("20s", "20s", "20s", "2020s"),
        ("15s", "15s", "15s", "15s"),  # no decade: never a century
        ("007", "007", "007", "007"),
    ],
)
def test_a_numeral_reads_the_same_with_its_options_named(
    written: str, value: str, as_written: str, short_decades: str
) -> None:
    assert numeral(written) == value
    assert numeral(written, value=False) == as_written
    assert numeral(written, value=False, short_decades=True) == short_decades


@pytest.mark.parametrize("text", ["x1", "1x", "", "1.", ",1", "1%", "-1", "twelve"])
def test_what_is_not_a_numeral(text: str) -> None:
    assert numeral(text) is None


def test_the_two_readings_of_thousands_separators() -> None:
    # A token is ungrouped only when its commas all group it in threes; a text comma by comma.
    assert ungrouped("1,234,567.5") == "1234567.5" and ungrouped("12345,678") == "12345,678"
    assert ungrouped_text("paid 1,234,567.5 and 12345,678 for 10,000m") == (
        "paid 1234567.5 and 12345678 for 10,000m"
    )


def test_each_reader_keeps_its_named_difference() -> None:
    text = "Python 3.10, in the 90s, 8 per cent"
    assert texts(read(text)) == ["python", "3.1", "in", "the", "90s", "8", "%"]
    assert words(text) == ["python", "3.10", "in", "the", "1990s", "8", "per", "cent"]
    assert final_number("it rose 6.8%") == ("6.8%", Decimal("6.8"))
    assert parse_number("-1.5e-3") == Decimal("-0.0015")
    assert texts(read("four")) == ["four"] and words("four") == ["4"]  # number words: the judge's only


@settings(derandomize=True, max_examples=300)
@given(st.integers(min_value=0, max_value=10**15), st.integers(min_value=0, max_value=99))
def test_a_grouped_number_is_one_number_to_every_reader(whole: int, cents: int) -> None:
    written = f"{whole:,}.{cents:02d}"
    value = Decimal(f"{whole}.{cents:02d}")
    as_value = format(value.normalize(), "f")
    assert texts(read(f"It cost {written} in all.")) == ["it", "cost", as_value, "in", "all"]
    assert words(f"It cost {written} in all.")[2] == f"{whole}.{cents:02d}"
    assert final_number(f"It cost {written} in all.") == (written, value)
