"""A chart of more rows than it draws keeps the lowest scores, those without one first, by label
among equal scores: the rows `outcome_chart` chooses are the first of them sorted so, as a sort of
every row would choose them."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tabench_dsl.review.totals import QuestionTotals, SystemTotals
from tabench_dsl.review.viewer.charts import outcome_chart

#: A few scores, so that equal scores (ordered by their label) are common; None: nothing graded.
SCORES = st.sampled_from([None, 0.0, 0.25, 0.5, 1.0])


def sorted_cut(rows, label: str, bars: int) -> list[str]:
    """What sorting every row by (score, None as -1, label) and keeping the first `bars` gives."""
    chosen = sorted(rows, key=lambda r: (r.score if r.score is not None else -1.0, getattr(r, label)))
    return [getattr(row, label) for row in chosen[:bars]]


@settings(derandomize=True, max_examples=200, deadline=None)
@given(scores=st.lists(SCORES, min_size=1, max_size=40), bars=st.integers(1, 12), systems=st.booleans())
def test_the_bars_cut_are_those_a_sort_of_every_row_keeps(scores, bars: int, systems: bool) -> None:
    names = [f"n{(7 * i) % 41:02d}" for i in range(len(scores))]  # labels not in score order
    if systems:
        rows = [SystemTotals(system=name, score=score) for name, score in zip(names, scores, strict=True)]
    else:
        rows = [QuestionTotals(question=name, score=score) for name, score in zip(names, scores, strict=True)]
    label = "system" if systems else "question"
    chart = outcome_chart(rows, title="t", kind=label, max_bars=bars)
    expected = sorted_cut(rows, label, bars) if len(rows) > bars else names
    assert [bar.label for bar in chart.bars] == expected
    assert bool(chart.note) == (len(rows) > bars)
