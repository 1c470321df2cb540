"""A pair table (`store/pair_table.py`) holds what a dict of its pairs holds, in rows while the pairs
are dense and in a dict once rows would hold far more cells than pairs."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tabench_dsl.store.pair_table import PairTable

IDS = st.integers(min_value=0, max_value=40) | st.integers(min_value=0, max_value=200_000)
PUTS = st.lists(st.tuples(IDS, IDS, st.integers(min_value=0, max_value=2**32 - 2)), max_size=300)


def check_against(table: PairTable, expected: dict[tuple[int, int], int], probes) -> None:
    assert len(table) == len(expected)
    for s, q in [*expected, *probes]:
        assert table.get(s, q) == expected.get((s, q), -1)
    assert table.systems() == {s for s, _ in expected}
    for s in table.systems() | {s for s, _ in probes}:
        assert table.questions_of(s) == sorted(q for t, q in expected if t == s)


@settings(derandomize=True, max_examples=300, deadline=None)
@given(puts=PUTS, probes=st.lists(st.tuples(IDS, IDS), max_size=20))
def test_a_pair_table_holds_what_a_dict_holds(puts, probes) -> None:
    table, expected = PairTable(), {}
    for s, q, value in puts:
        table.put(s, q, value)
        expected[(s, q)] = value
    check_against(table, expected, probes)


def test_rows_far_larger_than_the_pairs_move_to_a_dict_that_holds_the_same() -> None:
    table, expected = PairTable(), {}
    for s in range(300):  # each system one question, far from the others': rows would be sparse
        for q, value in ((s * 997, s), (s * 997 + 1, s + 1), (s * 997, s + 2)):
            table.put(s, q, value)
            expected[(s, q)] = value
    assert table.spread is not None and not table.rows
    check_against(table, expected, [(5, 1), (299, 0)])


def test_a_dense_table_stays_in_rows() -> None:
    table = PairTable()
    for s in range(50):
        for q in reversed(range(2000)):
            table.put(s, q, q)
    assert table.spread is None and len(table) == 100_000
    assert table.cells <= 4 * len(table) and table.get(49, 1999) == 1999
