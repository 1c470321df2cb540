"""Pair keys held as a byte a key (`store/key_cells.py`) read as the plain set of ints they stand
for, whichever way they are laid out: in rows, in the set beside them, or in another's rows."""

from __future__ import annotations

from array import array

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tabench_dsl.store import key_cells
from tabench_dsl.store.key_cells import KEY_BASE, KeyCells

# Few systems and questions so that keys meet; question 200,000 makes the rows of two systems too
# wide for a few keys (every key then goes to the set); system 9 and question 7 are rarely in the
# rows, so blocks mix keys with cells and keys without.
SYSTEMS = st.sampled_from([0, 1, 2, 9])
QUESTIONS = st.sampled_from([0, 1, 2, 3, 7, 200_000])
KEYS = st.lists(st.builds(lambda s, q: s * KEY_BASE + q, SYSTEMS, QUESTIONS), max_size=14)
#: A block of one system's keys (what a file written system by system gives the reader).
ONE_SYSTEM = st.builds(lambda s, qs: [s * KEY_BASE + q for q in qs], SYSTEMS, st.lists(QUESTIONS, max_size=6))
BLOCK = KEYS | ONE_SYSTEM | st.just([-(1 << 62) + 3])  # a key of a name not numbered: negative


@pytest.fixture(autouse=True)
def rows_from_any_count(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows however few the keys (they start at `DENSE_FROM` otherwise)."""
    monkeypatch.setattr(key_cells, "DENSE_FROM", 0)


@settings(derandomize=True, max_examples=400, deadline=None)
@given(keys=KEYS, more=BLOCK, block=BLOCK, gone=KEYS, probe=st.integers(-3, 10 * KEY_BASE))
def test_key_cells_are_the_set_of_their_keys(keys, more, block, gone, probe) -> None:
    for cells in (KeyCells(keys), KeyCells(array("Q", keys)), KeyCells(keys, like=KeyCells(keys[:2]))):
        held = set(keys)
        assert set(cells) == held and len(cells) == len(held) and sorted(cells) == sorted(held)
        assert (probe in cells) == (probe in held)
        assert cells.issuperset(block) == held.issuperset(block)
        assert cells.isdisjoint(block) == held.isdisjoint(block)
        left = cells.difference(gone)
        assert set(left) == held - set(gone) and set(cells) == held  # a copy: `cells` unchanged
        assert set(cells.difference(KeyCells(gone))) == held - set(gone)
        cells.add_all(more)
        held |= set(more)
        assert set(cells) == held and len(cells) == len(held)
        assert all(key in cells for key in held)


def test_dense_keys_are_held_in_rows_and_sparse_ones_in_the_set() -> None:
    dense = [s * KEY_BASE + q for s in range(50) for q in range(2000)]
    cells = KeyCells(dense)
    assert not cells.loose and cells.width == 2000 and len(cells) == 100_000
    assert cells.issuperset(dense[:4000]) and not cells.issuperset([50 * KEY_BASE])
    sparse = [s * KEY_BASE + 100_000 + s for s in range(1000)]  # rows would be 1000 x 101,000 cells
    assert KeyCells(sparse).loose == set(sparse)
    # laid out as another's: a key outside its rows goes to the set
    seen = KeyCells(like=cells)
    seen.add_all([3 * KEY_BASE + 5, 3 * KEY_BASE + 2000, 77 * KEY_BASE])
    assert seen.loose == {3 * KEY_BASE + 2000, 77 * KEY_BASE} and len(seen) == 3


def test_a_question_just_past_the_rows_is_no_cell_of_the_next_row() -> None:
    cells = KeyCells([0 * KEY_BASE + 3, 1 * KEY_BASE + 0, 1 * KEY_BASE + 3])  # rows of width 4
    past = [0 * KEY_BASE + 4]  # where row 1's first cell would be, were it row 0's fifth
    assert cells.width == 4 and not cells.issuperset(past) and cells.isdisjoint(past)
    cells.add_all([1 * KEY_BASE + 4])  # past the last row: into the set, not out of the bytes
    assert cells.loose == {1 * KEY_BASE + 4} and len(cells) == 4


def test_fewer_keys_than_dense_from_are_held_in_the_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(key_cells, "DENSE_FROM", 1001)
    keys = [s * KEY_BASE + q for s in range(10) for q in range(100)]
    assert KeyCells(keys).loose == set(keys) and KeyCells(keys).width == 0
    assert not KeyCells([*keys, 10 * KEY_BASE]).loose  # from DENSE_FROM on: rows
    few = set(keys)
    assert KeyCells(few).loose is few and not KeyCells({*keys, 10 * KEY_BASE}).loose  # a set: kept
