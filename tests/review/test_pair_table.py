"""A pair table (`store/pair_table.py`) holds what a dict of its pairs holds, in rows while the pairs
are dense and in a dict once rows would hold far more cells than pairs."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from support.make_results import make_record, write_results

from tabench_dsl.store.pair_table import PairTable
from tabench_dsl.store.prompt_changes import changed_pairs

IDS = st.integers(min_value=0, max_value=40) | st.integers(min_value=0, max_value=200_000)
PUTS = st.lists(st.tuples(IDS, IDS, st.integers(min_value=0, max_value=2**32 - 2)), max_size=300)


def check_against(table: PairTable, expected: dict[tuple[int, int], int], probes) -> None:
    assert len(table) == len(expected)
    for s, q in [*expected, *probes]:
        assert table.get(s, q) == expected.get((s, q), -1)
    assert table.systems() == {s for s, _ in expected}
    for s in table.systems() | {s for s, _ in probes}:
        assert table.questions_of(s) == sorted(q for t, q in expected if t == s)
        # A row's cells in one call: each value + 1, 0 for a pair not held (a probe's question too).
        asked = [*table.questions_of(s), *(q for t, q in probes if t == s)]
        assert table.cells_at(s, asked) == [expected.get((s, q), -1) + 1 for q in asked]


@settings(derandomize=True, max_examples=300, deadline=None)
@given(puts=PUTS, probes=st.lists(st.tuples(IDS, IDS), max_size=20))
def test_a_pair_table_holds_what_a_dict_holds(puts, probes) -> None:
    table, expected = PairTable(), {}
    for s, q, value in puts:
        table.put(s, q, value)
        expected[(s, q)] = value
    check_against(table, expected, probes)


@settings(derandomize=True, max_examples=300, deadline=None)
@given(
    puts=PUTS, cut=st.integers(min_value=1, max_value=40), probes=st.lists(st.tuples(IDS, IDS), max_size=20)
)
def test_pairs_put_many_at_a_time_are_what_one_at_a_time_puts(puts, cut, probes) -> None:
    """`put_many` of each `cut` puts (systems mixed in a call, a pair put twice in one) holds what
    a `put` each holds, in rows or in a dict."""
    table, expected = PairTable(), {}
    for first in range(0, len(puts), cut):
        systems, questions, values = zip(*puts[first : first + cut], strict=True)
        table.put_many(list(systems), list(questions), list(values))
    for s, q, value in puts:
        expected[(s, q)] = value
    check_against(table, expected, probes)


def test_a_dense_table_put_many_at_a_time_stays_in_rows() -> None:
    table = PairTable()
    for s in range(50):
        for first in range(0, 2000, 128):
            questions = list(reversed(range(first, min(first + 128, 2000))))
            table.put_many([s] * len(questions), questions, questions)
    assert table.spread is None and len(table) == 100_000
    assert table.cells <= 4 * len(table) and table.get(49, 1999) == 1999


@settings(derandomize=True, max_examples=200, deadline=None)
@given(puts=PUTS)
def test_a_table_renumbered_holds_its_pairs_under_their_new_ids(puts) -> None:
    """Ids mapped to others (as `diff` puts one side's table in the other's numbering), whether
    the table is in rows or in a dict."""
    table, expected = PairTable(), {}
    for s, q, value in puts:
        table.put(s, q, value)
        expected[(s, q)] = value
    systems = [3 * s + 1 for s in range(200_001)]
    questions = [200_000 - q for q in range(200_001)]
    renumbered = {(systems[s], questions[q]): value for (s, q), value in expected.items()}
    check_against(table.renumbered(systems, questions), renumbered, [])


@settings(derandomize=True, max_examples=200, deadline=None)
@given(puts=PUTS)
def test_a_table_mapped_holds_each_value_looked_up(puts) -> None:
    """A table of record numbers made the table of what each record says (as `diff` codes a
    side), whether the table is in rows or in a dict."""
    table, expected = PairTable(), {}
    for number, (s, q, _) in enumerate(puts):
        table.put(s, q, number)
        expected[(s, q)] = number
    said = [(7 * number) % 1000 for number in range(len(puts))]
    check_against(table.mapped(said), {pair: said[number] for pair, number in expected.items()}, [])


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


@settings(derandomize=True, max_examples=100, deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            st.sampled_from(["a", "b", "é", ""]),
            st.sampled_from(["q1", "q2", "q3"]),
            st.sampled_from(["pass", "fail", "error", "t1"]),
            st.sampled_from(["old", "new"]),
        ),
        max_size=30,
    )
)
def test_the_changed_pairs_are_those_whose_last_record_is_final_under_another_prompt(rows) -> None:
    now = {"q1": "new", "q2": "new"}  # q3 is not in the battery any more
    last = {(system, question): (outcome, prompt) for system, question, outcome, prompt in rows}
    expected = {
        pair
        for pair, (outcome, prompt) in last.items()
        if outcome != "error" and pair[1] in now and prompt != now[pair[1]]
    }
    records = [make_record(s, q, outcome, prompt_sha256=prompt) for s, q, outcome, prompt in rows]
    with tempfile.TemporaryDirectory() as folder:
        path = write_results(Path(folder) / "r.jsonl", records)
        assert changed_pairs(path, now) == expected
