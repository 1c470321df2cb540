"""How stable the judge's verdicts are: the flip rate of answers it was asked about more than once
(`grade --repeat K`, `Record.repeats`).

An answer flipped when its K asks did not all end with the same outcome (pass, fail, adjudicate or
error). The flip rate is flipped / repeated, with its Wilson interval, per question (across
systems) and per judge; an answer asked once counts in neither.
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from ..core.records import Record
from .audit import Proportion, proportion


class FlipRate(msgspec.Struct):
    """Of `repeated` answers asked more than once, `flipped` got differing verdicts."""

    name: str
    repeated: int = 0
    flipped: int = 0
    flip_rate: Proportion = msgspec.field(default_factory=Proportion)


class Stability(msgspec.Struct):
    """The flip rate over every repeated answer, per question and per judge."""

    asks: int
    overall: FlipRate
    questions: list[FlipRate] = msgspec.field(default_factory=list)
    judges: list[FlipRate] = msgspec.field(default_factory=list)


def flipped(record: Record) -> bool:
    """True when the asks of a repeated record did not all end alike."""
    return len({vote.verdict for vote in record.repetitions}) > 1


def stability(standing: Iterable[Record]) -> Stability | msgspec.UnsetType:
    """The flip rates of the standing records; UNSET (absent from totals' JSON) when no answer was
    asked more than once."""
    overall = FlipRate("all")
    questions: dict[str, FlipRate] = {}
    judges: dict[str, FlipRate] = {}
    asks = 0
    for record in standing:
        if len(record.repetitions) < 2:
            continue
        asks = max(asks, len(record.repetitions))
        judge = record.repetitions[0].judge.describe()
        flip = flipped(record)
        for row in (
            overall,
            questions.setdefault(record.question, FlipRate(record.question)),
            judges.setdefault(judge, FlipRate(judge)),
        ):
            row.repeated += 1
            row.flipped += flip
    if not overall.repeated:
        return msgspec.UNSET
    rows = [overall, *questions.values(), *judges.values()]
    for row in rows:
        row.flip_rate = proportion(row.flipped, row.repeated)
    return Stability(
        asks=asks,
        overall=overall,
        questions=sorted(questions.values(), key=lambda r: r.name),
        judges=sorted(judges.values(), key=lambda r: r.name),
    )


def stability_table(found: Stability | msgspec.UnsetType):
    """The flip rates as a `rich` table, None when no answer was repeated."""
    if not isinstance(found, Stability):
        return None
    from rich.table import Table

    from ..core.display import literal

    table = Table(
        title=f"Stability: answers asked up to {found.asks} times (--repeat)",
        caption=literal(
            "flipped = the asks of an answer did not all give the same verdict (such an answer ends "
            "adjudicate, cause unstable)",
            style="table.caption",
        ),
    )
    for name in ("question / judge", "repeated", "flipped", "flip rate", "95% CI"):
        table.add_column(name, justify="left" if name == "question / judge" else "right", no_wrap=True)
    for row in (found.overall, *found.questions, *found.judges):
        rate = row.flip_rate
        interval = "-" if rate.ci_low is None else f"{100 * rate.ci_low:.1f}-{100 * (rate.ci_high or 0):.1f}%"
        share = "-" if rate.value is None else f"{100 * rate.value:.1f}%"
        table.add_row(literal(row.name), str(row.repeated), str(row.flipped), share, interval)
    return table
