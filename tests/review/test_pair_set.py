"""Done pairs as one int a pair (`store/pair_set.py`) read as the set of tuples they stand for, and
the standing verdicts kept as arrays (`store/standing_verdicts.Standing`) give back the map they
were made from, or nothing when their bytes are not such a map."""

from __future__ import annotations

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from tabench_dsl.store.key_cells import KEY_BASE
from tabench_dsl.store.pair_set import PairSet, pair_keys
from tabench_dsl.store.standing_verdicts import Standing

NAMES = st.sampled_from(["a", "b", "q1", "q2", "pass", "", " ", "é"])
PAIRS = st.sets(st.tuples(NAMES, NAMES), max_size=12)


def pair_set(pairs: set[tuple[str, str]], numbers: dict[str, int]) -> PairSet:
    for name in sorted({n for pair in pairs for n in pair}):
        numbers.setdefault(name, len(numbers))
    return PairSet(numbers, pair_keys(numbers, [s for s, _ in pairs], [q for _, q in pairs]))


@settings(derandomize=True, max_examples=200, deadline=None)
@given(pairs=PAIRS, others=PAIRS, probe=st.tuples(NAMES, NAMES | st.just("unknown")))
def test_a_pair_set_is_the_set_of_its_pairs(pairs, others, probe) -> None:
    numbers: dict[str, int] = {}
    done = pair_set(pairs, numbers)
    assert done == pairs and set(done) == pairs and len(done) == len(pairs)
    assert (probe in done) == (probe in pairs)
    assert done - others == pairs - others  # any collection of pairs
    assert done - pair_set(others, numbers) == pairs - others  # one numbered alike
    systems, questions = [s for s, _ in others], [q for _, q in others]
    assert done.keys.issuperset(pair_keys(numbers, systems, questions)) == (others <= pairs)
    assert done.has_all(systems, questions) == (others <= pairs)
    # `Set`'s other operators, either side: the plain sets they stand for
    assert (done & others, done | others, done ^ others) == (pairs & others, pairs | others, pairs ^ others)
    assert (others & done, others | done, others - done) == (others & pairs, others | pairs, others - pairs)


@settings(derandomize=True, max_examples=200, deadline=None)
@given(
    last=st.dictionaries(st.tuples(NAMES, NAMES), st.sampled_from(["pass", "fail", "error", "missing:fail"]))
)
def test_standing_verdicts_kept_as_arrays_give_back_their_map(last) -> None:
    standing = Standing.decode(Standing.of(last).encode())
    assert standing is not None
    assert standing.as_dict() == last and list(standing.as_dict()) == list(last)
    assert standing.pairs_where(lambda v: v != "error") == {p for p, v in last.items() if v != "error"}


def test_bytes_that_are_no_kept_map_give_none() -> None:
    good = Standing.of({("a", "q"): "pass"})
    out_of_range = msgspec.msgpack.encode([good.names, (7 * KEY_BASE).to_bytes(8, "little"), bytes(4)])
    for body in (b"", b"\x93", out_of_range, msgspec.msgpack.encode([["a"], b"\x01", b""])):
        assert Standing.decode(body) is None
