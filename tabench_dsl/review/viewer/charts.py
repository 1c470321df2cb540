"""Stacked-bar charts of pass / fail / adjudicate / error, for the report and the viewer.

The viewer and the static report show the same charts and neither may load anything from the
network. `outcome_chart` chooses what a chart shows (a `Chart`: labels, counts, scores); `lay_out`
places it on the page in pixels (a `DrawnChart`), which the report's template
(review/templates/chart.svg.j2) prints as inline SVG, every label shown as text and escaped (system
names and question ids come from files a person wrote). The viewer's page draws the same `Chart` in
the browser with the same `GEOMETRY` and `legend()`, which the server hands it, setting each label as
text.

Each bar carries a whisker: the score's 95% Wilson interval drawn over the bar on its 0-100% scale
(the score is pass / (pass + fail + adjudicate), so with no errors the pass segment ends inside it).
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from operator import attrgetter

import msgspec

from ..outcomes import score_interval
from ..totals import QuestionTotals, SystemTotals

#: Outcome -> bar colour, in the order the segments are stacked (colour-blind-safe hues).
COLOURS: dict[str, str] = {
    "pass": "#1b7837",
    "fail": "#c2372b",
    "adjudicate": "#e0a100",
    "error": "#7f7f7f",
}
#: Most bars one chart draws; the rest are summarised in the caption.
MAX_BARS = 40


class ChartGeometry(msgspec.Struct, frozen=True):
    """Where a chart's parts go, in pixels: one definition for the report's SVG and the viewer's page.

    `label_limit` is how many characters of a label show beside its bar (the whole label is its
    tooltip).
    """

    label_width: int = 150
    bar_width: int = 340
    row_height: int = 22
    top: int = 48
    label_limit: int = 22


#: The geometry both pages draw with.
GEOMETRY = ChartGeometry()


def _counts(row: SystemTotals | QuestionTotals) -> dict[str, int]:
    return {"pass": row.passed, "fail": row.fail, "adjudicate": row.adjudicate, "error": row.error}


def _short(label: str, limit: int) -> str:
    return label if len(label) <= limit else label[: limit - 1] + "…"


class Bar(msgspec.Struct, frozen=True):
    """One row of a chart: its label (a system name or question id), its counts and its score, with
    the score's 95% interval (None when nothing was graded)."""

    label: str
    counts: dict[str, int]
    score: float | None
    ci_low: float | None = None
    ci_high: float | None = None


class Chart(msgspec.Struct, frozen=True):
    """What a chart shows, before it is drawn: the viewer's page draws it in the browser from this
    data (text set as text), the report as SVG from its layout (`lay_out`). `note` says how it was
    cut."""

    title: str
    kind: str
    bars: list[Bar]
    note: str = ""


def outcome_chart(
    rows: Sequence[SystemTotals | QuestionTotals], *, title: str, kind: str, max_bars: int = MAX_BARS
) -> Chart:
    """One bar per row, at most `max_bars` (the lowest scores first when cut).

    `kind` is `system` or `question`: each drawn bar carries `data-<kind>` so a page can filter on
    click.
    """
    chosen = list(rows)
    note = ""
    if len(chosen) > max_bars:
        chosen = _lowest(chosen, max_bars)
        note = f"the {max_bars} {kind}s with the lowest score, of {len(rows):,}"
    bars = [Bar(_label(row), _counts(row), row.score, *score_interval(row)) for row in chosen]
    return Chart(title=title, kind=kind, bars=bars, note=note)


class LegendItem(msgspec.Struct, frozen=True):
    """One outcome in a chart's legend: its name, its colour and where its swatch starts."""

    name: str
    colour: str
    x: int


def legend() -> list[LegendItem]:
    """The legend every chart carries, one item per outcome in stacking order."""
    items, x = [], 0
    for name, colour in COLOURS.items():
        items.append(LegendItem(name, colour, x))
        x += 22 + 8 * len(name)  # swatch, gap, and about 8 px per character of the name
    return items


class Segment(msgspec.Struct, frozen=True):
    """One outcome's part of a bar, its position and width already written as the SVG shows them."""

    outcome: str
    count: int
    colour: str
    x: str
    width: str
    share: str


class Whisker(msgspec.Struct, frozen=True):
    """A bar's score interval placed on the chart: from `x1` to `x2`, and its tooltip text."""

    x1: str
    x2: str
    text: str


class DrawnBar(msgspec.Struct, frozen=True):
    """One bar placed on the chart: `label` whole (tooltip, `data-` attribute), `short` beside it."""

    label: str
    short: str
    y: int
    segments: list[Segment]
    score: str
    whisker: Whisker | None = None


class DrawnChart(msgspec.Struct, frozen=True):
    """A `Chart` laid out in pixels, ready for the report's SVG template to print."""

    title: str
    kind: str
    note: str
    width: int
    height: int
    geometry: ChartGeometry
    legend: list[LegendItem]
    bars: list[DrawnBar]


def lay_out(chart: Chart, geometry: ChartGeometry = GEOMETRY) -> DrawnChart:
    """Place `chart` on a 100%-stacked bar chart: one row per bar, a segment per outcome seen."""
    g = geometry
    bars = []
    for i, bar in enumerate(chart.bars):
        total = sum(bar.counts.values())
        segments, x = [], float(g.label_width)
        for name, count in bar.counts.items():
            if not count:
                continue
            width = g.bar_width * count / total
            segments.append(
                Segment(name, count, COLOURS[name], f"{x:.1f}", f"{width:.1f}", f"{100 * count / total:.1f}%")
            )
            x += width
        score = "-" if bar.score is None else f"{100 * bar.score:.0f}%"
        short, y = _short(bar.label, g.label_limit), g.top + i * g.row_height
        bars.append(DrawnBar(bar.label, short, y, segments, score, whisker(bar, g)))
    return DrawnChart(
        title=chart.title,
        kind=chart.kind,
        note=chart.note,
        width=g.label_width + g.bar_width + 50,
        height=g.top + g.row_height * max(len(chart.bars), 1) + 8,
        geometry=g,
        legend=legend(),
        bars=bars,
    )


def whisker(bar: Bar, geometry: ChartGeometry = GEOMETRY) -> Whisker | None:
    """Where `bar`'s score interval goes on the bar's 0-100% scale; None without an interval."""
    if bar.ci_low is None or bar.ci_high is None:
        return None
    x1 = geometry.label_width + geometry.bar_width * bar.ci_low
    x2 = geometry.label_width + geometry.bar_width * bar.ci_high
    text = f"{bar.label}: score 95% interval {100 * bar.ci_low:.1f}% – {100 * bar.ci_high:.1f}%"
    return Whisker(f"{x1:.1f}", f"{x2:.1f}", text)


def _lowest(rows: list, count: int) -> list:
    """The `count` rows with the lowest score, those without one first, by label among equal
    scores: the first `count` of the rows sorted so, found without a Python call per row (at ten
    million records a run can have 200,000 questions)."""
    label = "system" if isinstance(rows[0], SystemTotals) else "question"
    unscored = sorted((row for row in rows if row.score is None), key=attrgetter(label))
    if len(unscored) >= count:
        return unscored[:count]
    scored = rows if not unscored else [row for row in rows if row.score is not None]
    return unscored + heapq.nsmallest(count - len(unscored), scored, key=attrgetter("score", label))


def _label(row: SystemTotals | QuestionTotals) -> str:
    return row.system if isinstance(row, SystemTotals) else row.question
