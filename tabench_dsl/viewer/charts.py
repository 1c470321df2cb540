"""Stacked-bar charts of pass / fail / adjudicate / error, drawn as inline SVG text.

The viewer and the static report show the same charts and neither may load anything from the
network, so the SVG is written here by hand. Every label is escaped: system names and question ids
come from files a person wrote.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

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


def outcome_bars(
    rows: Sequence[SystemTotals | QuestionTotals], *, title: str, kind: str, max_bars: int = MAX_BARS
) -> str:
    """An SVG chart with one 100%-stacked bar per row (at most `max_bars`, worst score first when cut).

    `kind` is `system` or `question`: each bar carries `data-<kind>` so a page can filter on click.
    Each segment has a `<title>` tooltip with its count and share.
    """
    shown = list(rows)
    note = ""
    if len(shown) > max_bars:
        shown.sort(key=lambda r: (r.score if r.score is not None else -1.0, _label(r)))
        shown = shown[:max_bars]
        note = f"the {max_bars} {kind}s with the lowest score, of {len(rows):,}"
    height = _TOP + _ROW_H * max(len(shown), 1) + 8
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
    if not shown:
        out.append(f'<text x="0" y="{_TOP + 14}" fill="#555">no answers</text>')
    for i, row in enumerate(shown):
        y = _TOP + i * _ROW_H
        label = _label(row)
        counts = _counts(row)
        total = sum(counts.values())
        out.append(f'<g class="bar" data-{kind}="{escape(label)}">')
        out.append(f'<text x="{_LABEL_W - 6}" y="{y + 14}" text-anchor="end"><title>{escape(label)}</title>'
                   f"{escape(_short(label))}</text>")
        bx = float(_LABEL_W)
        for name, count in counts.items():
            if not count:
                continue
            w = _BAR_W * count / total
            share = 100 * count / total
            out.append(f'<rect x="{bx:.1f}" y="{y + 3}" width="{w:.1f}" height="{_ROW_H - 6}" '
                       f'fill="{COLOURS[name]}"><title>{escape(label)}: {count} {name} '
                       f"({share:.1f}%)</title></rect>")
            bx += w
        score = "-" if row.score is None else f"{100 * row.score:.0f}%"
        out.append(f'<text x="{_LABEL_W + _BAR_W + 6}" y="{y + 14}">{score}</text></g>')
    out.append("</svg>")
    return "".join(out)


def _label(row: SystemTotals | QuestionTotals) -> str:
    return row.system if isinstance(row, SystemTotals) else row.question
