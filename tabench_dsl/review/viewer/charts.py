"""Stacked-bar charts of pass / fail / adjudicate / error, drawn as inline SVG text.

The viewer and the static report show the same charts and neither may load anything from the
network. `outcome_chart` chooses what a chart shows; the report draws it here as SVG text, written by
hand, every label shown as text and escaped (system names and question ids come from files a person
wrote); the viewer's page draws the same `Chart` in the browser, setting each label as text.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

import msgspec

from ...core.display import shown
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
_LABEL_W = 150
_BAR_W = 340
_ROW_H = 22
_TOP = 48


def _counts(row: SystemTotals | QuestionTotals) -> dict[str, int]:
    return {"pass": row.passed, "fail": row.fail, "adjudicate": row.adjudicate, "error": row.error}


def _short(label: str, limit: int = 22) -> str:
    return label if len(label) <= limit else label[: limit - 1] + "…"


class Bar(msgspec.Struct, frozen=True):
    """One row of a chart: its label (a system name or question id), its counts and its score."""

    label: str
    counts: dict[str, int]
    score: float | None


class Chart(msgspec.Struct, frozen=True):
    """What a chart shows, before it is drawn: the viewer's page draws it in the browser from this
    data (text set as text), the report as SVG text (`outcome_bars`). `note` says how it was cut."""

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
        chosen.sort(key=lambda r: (r.score if r.score is not None else -1.0, _label(r)))
        chosen = chosen[:max_bars]
        note = f"the {max_bars} {kind}s with the lowest score, of {len(rows):,}"
    bars = [Bar(_label(row), _counts(row), row.score) for row in chosen]
    return Chart(title=title, kind=kind, bars=bars, note=note)


def outcome_bars(
    rows: Sequence[SystemTotals | QuestionTotals], *, title: str, kind: str, max_bars: int = MAX_BARS
) -> str:
    """An SVG chart with one 100%-stacked bar per row (`outcome_chart` chooses the rows).

    Each segment has a `<title>` tooltip with its count and share. Labels are shown as text
    (`display.shown`: no control or bidi character acts) and escaped.
    """
    chart = outcome_chart(rows, title=title, kind=kind, max_bars=max_bars)
    note = chart.note
    height = _TOP + _ROW_H * max(len(chart.bars), 1) + 8
    width = _LABEL_W + _BAR_W + 50
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" font-family="system-ui, sans-serif" '
        f'font-size="12"><title>{escape(title)}{escape(" (" + note + ")" if note else "")}</title>',
    ]
    out.append(f'<text x="0" y="14" font-size="13" font-weight="600">{escape(title)}</text>')
    x = 0
    for name, colour in COLOURS.items():  # legend
        out.append(f'<rect x="{x}" y="24" width="12" height="12" fill="{colour}"/>'
                   f'<text x="{x + 16}" y="34">{name}</text>')
        x += 22 + 8 * len(name)
    if note:
        out.append(f'<text x="{width - 4}" y="14" text-anchor="end" fill="#555">{escape(note)}</text>')
    if not chart.bars:
        out.append(f'<text x="0" y="{_TOP + 14}" fill="#555">no answers</text>')
    for i, bar in enumerate(chart.bars):
        y = _TOP + i * _ROW_H
        label = escape(shown(bar.label))
        total = sum(bar.counts.values())
        out.append(f'<g class="bar" data-{kind}="{escape(bar.label)}">')
        out.append(f'<text x="{_LABEL_W - 6}" y="{y + 14}" text-anchor="end"><title>{label}</title>'
                   f"{escape(shown(_short(bar.label)))}</text>")
        bx = float(_LABEL_W)
        for name, count in bar.counts.items():
            if not count:
                continue
            w = _BAR_W * count / total
            share = 100 * count / total
            out.append(f'<rect x="{bx:.1f}" y="{y + 3}" width="{w:.1f}" height="{_ROW_H - 6}" '
                       f'fill="{COLOURS[name]}"><title>{label}: {count} {name} '
                       f"({share:.1f}%)</title></rect>")
            bx += w
        score = "-" if bar.score is None else f"{100 * bar.score:.0f}%"
        out.append(f'<text x="{_LABEL_W + _BAR_W + 6}" y="{y + 14}">{score}</text></g>')
    out.append("</svg>")
    return "".join(out)


def _label(row: SystemTotals | QuestionTotals) -> str:
    return row.system if isinstance(row, SystemTotals) else row.question
