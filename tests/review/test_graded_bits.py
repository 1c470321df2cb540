"""`GradedBits.merge`: the bits of two parts of a file, merged, are those of the whole file in
one count, whatever order each part met its questions in (runs moved whole, or bit by bit)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tabench_dsl.review.graded_bits import GradedBits
from tabench_dsl.review.last_records import MOST_RUNS

outcomes = st.lists(
    st.tuples(
        st.sampled_from("abc"), st.integers(0, 3 * MOST_RUNS), st.sampled_from(["pass", "fail", "error"])
    ),
    max_size=400,
)


def named(bits: GradedBits) -> dict[str, tuple[set[str], set[str]]]:
    """Each system's graded and passed questions, by name (the numbering left out)."""
    names = {bit: name for name, bit in bits.number.items()}

    def of(number: int) -> set[str]:
        return {name for bit, name in names.items() if number >> bit & 1}

    return {system: (of(row.questions), of(row.passed)) for system, row in bits.table().items()}


def counted(noted: list[tuple[str, int, str]]) -> GradedBits:
    bits = GradedBits()
    for system, question, verdict in noted:
        bits.add(system, f"q{question}", verdict)
    return bits


@settings(derandomize=True, max_examples=300)
@given(outcomes, outcomes, st.booleans())
def test_two_parts_merged_are_the_whole_counted_at_once(first, later, rotate):
    """Pairs of the later part are other pairs (another system name), met in a shuffled or a
    rotated order of questions."""
    later = [(system.upper(), question, verdict) for system, question, verdict in later]
    if rotate:
        later = sorted(later, key=lambda one: (one[1] + 7) % (3 * MOST_RUNS + 1))
    whole, parts = counted(first + later), counted(first)
    parts.merge(counted(later))
    assert named(parts) == named(whole)


def test_many_runs_are_merged_bit_by_bit():
    first = [("a", n, "pass") for n in range(4 * MOST_RUNS)]
    later = [("b", n, "fail" if n % 3 else "pass") for n in range(4 * MOST_RUNS)][::-2]
    whole, parts = counted(first + later), counted(first)
    parts.merge(counted(later))
    assert named(parts) == named(whole)
    assert named(parts)["b"][1] == {f"q{n}" for n in range(4 * MOST_RUNS)[::-2] if n % 3 == 0}
