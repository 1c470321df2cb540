"""A `totals.StandingCounter` as the index keeps it, beside the viewer's totals.

The viewer counts a person's decision onto the count its totals were finished from (the record
taken back, `StandingCounter.subtract`, and added decided). A later view of an unchanged file
reads its totals from the index, so the count is kept beside them (`totals_of`, a value of its
own, read only at the viewer's first decision), as plain values:
every row, each system's spend, the graded bits, the tags' and the served models' counts, in
the order they were first met (which the totals list them in), so the counter read back gives
the totals it gave, and the same after any decision.
"""

from __future__ import annotations

import msgspec

from ..core.price import Price
from ..core.records import JudgeInfo
from .costs import Spend, TokenCounts
from .slices import TagSystem, TagTotals
from .totals import QuestionTotals, StandingCounter, SystemTotals


class SpendState(msgspec.Struct, array_like=True):
    """One system's `Spend`: its calls, tokens, unpriced calls and tokens billed at each price."""

    calls: int
    tokens: TokenCounts
    unpriced_calls: int
    billed: list[tuple[Price, TokenCounts]]


class CountState(msgspec.Struct, array_like=True):
    """Everything a `StandingCounter` holds, each mapping as its (ordered) items."""

    systems: list[SystemTotals]
    spends: list[SpendState]
    questions: list[QuestionTotals]
    facets: dict[str, int]
    judges: list[JudgeInfo]
    numbered: list[str]
    graded: list[tuple[str, bytes, bytes]]
    tags: list[TagTotals]
    cells: list[tuple[str, TagSystem]]
    served: list[tuple[str, str, int]]
    records: int
    seen: list[str]


def count_state(counter: StandingCounter) -> CountState:
    """What `counter` holds, as the index keeps it."""
    counter.settle()
    graded = counter.graded
    return CountState(
        systems=list(counter.systems.values()),
        spends=[
            SpendState(spend.calls, spend.tokens, spend.unpriced_calls, spend.billed())
            for spend in counter.spends.values()
        ],
        questions=list(counter.questions.values()),
        facets=counter.facets,
        judges=list(counter.judges.values()),
        numbered=list(graded.number),
        graded=[(name, bytes(bits), bytes(graded.passed[name])) for name, bits in graded.graded.items()],
        tags=[msgspec.structs.replace(row, systems=[]) for row in counter.tagged.tags.values()],
        cells=[(tag, cell) for (tag, _), cell in counter.tagged.cells.items()],
        served=[(judge, model, calls) for (judge, model), calls in counter.served.counts.items()],
        records=counter.records,
        seen=sorted(counter.seen),
    )


def counter_of(state: CountState, price: Price | None) -> StandingCounter:
    """The `StandingCounter` `state` was taken from (counted at `price`)."""
    counter = StandingCounter(price)
    counter.systems = {row.system: row for row in state.systems}
    counter.spends = {
        row.system: Spend.restored(price, kept.calls, kept.tokens, kept.unpriced_calls, kept.billed)
        for row, kept in zip(state.systems, state.spends, strict=True)
    }
    counter.questions = {row.question: row for row in state.questions}
    counter.facets = state.facets
    counter.judges = {(judge.backend, judge.model): judge for judge in state.judges}
    graded = counter.graded
    graded.number = {name: bit for bit, name in enumerate(state.numbered)}
    for name, bits, passed in state.graded:
        graded.graded[name], graded.passed[name] = bytearray(bits), bytearray(passed)
    counter.tagged.tags = {row.tag: row for row in state.tags}
    counter.tagged.cells = {(tag, cell.system): cell for tag, cell in state.cells}
    counter.served.counts = {(judge, model): calls for judge, model, calls in state.served}
    counter.records = state.records
    counter.seen = set(state.seen)
    return counter
