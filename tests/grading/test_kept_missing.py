"""A replayed resume's missing questions (`plan_outcome.KeptMissing`): read back, each system's
list reads as the list it was, while `grade`'s lines decode none of it."""

from __future__ import annotations

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from tabench_dsl.grading.missing import NAMED, missing_line
from tabench_dsl.grading.plan_outcome import KeptMissing, MissingQuestions

SLICES = st.builds(
    slice,
    st.none() | st.integers(-30, 30),
    st.none() | st.integers(-30, 30),
    st.none() | st.sampled_from([1, 2, -1]),
)


@settings(derandomize=True, max_examples=300)
@given(st.lists(st.text(min_size=1, max_size=5), max_size=25), st.lists(SLICES, max_size=4))
def test_missing_questions_read_back_as_the_list_they_were(names: list[str], slices: list[slice]) -> None:
    kept = msgspec.msgpack.decode(msgspec.msgpack.encode(KeptMissing.of(names)), type=KeptMissing)
    read = MissingQuestions(kept)
    assert len(read) == len(names)
    for at in slices:
        assert read[at] == names[at]
    for at in range(-len(names), len(names)):
        assert read[at] == names[at]
    assert list(read) == names
    assert missing_line("s", read, 40, recorded=False) == missing_line("s", names, 40, recorded=False)


def test_the_line_grade_says_decodes_no_list() -> None:
    names = [f"q{n}" for n in range(100)]
    kept = KeptMissing.of(names)
    damaged = MissingQuestions(msgspec.structs.replace(kept, every=msgspec.Raw(b"\xc1")))  # no msgpack
    line = missing_line("s", damaged, 200, recorded=False)
    assert line == missing_line("s", names, 200, recorded=False)
    assert f"q{NAMED - 1}, ... (90 more)" in line
