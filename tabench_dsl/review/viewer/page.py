"""The viewer's one page, rendered once from review/templates/viewer.html.j2, viewer.css.j2 and
viewer.js (package data: no build step, nothing fetched from a network).

The style sheet and the script are inlined so the page is a single response, and its
Content-Security-Policy allows exactly those two texts (by hash) and nothing else. The page holds no
data of a run; the words and colours the script shows (the cause texts, the outcome names and
colours, the chart's geometry, the filter keys) are rendered into it as JSON from their one
definition on the server, so the script keeps no copy of them.
"""

from __future__ import annotations

from functools import cache
from typing import Any, get_args

import msgspec

from ...core.records import CAUSE_TEXTS, Outcome, Tier
from ..templating import inline, render
from .charts import COLOURS, GEOMETRY, legend
from .queries import FILTER_KEYS


class Page(msgspec.Struct, frozen=True):
    """The page as served: its HTML and the Content-Security-Policy header that goes with it."""

    html: str
    csp: str


def page_constants() -> dict[str, Any]:
    """What the page's script and its filters need to know that is defined on the server."""
    return {
        "verdicts": list(get_args(Outcome)),
        "tiers": list(get_args(Tier)),
        "causes": dict(CAUSE_TEXTS),
        "filters": list(FILTER_KEYS),
        "colours": dict(COLOURS),
        "chart": msgspec.to_builtins(GEOMETRY),
        "legend": msgspec.to_builtins(legend()),
    }


@cache
def viewer_page() -> Page:
    """The page and its policy, rendered on first use and kept: they are the same for every run."""
    style = inline("viewer.css.j2", colours=COLOURS)
    script = inline("viewer.js")
    html = render("viewer.html.j2", style=style, script=script, constants=page_constants())
    csp = (
        f"default-src 'none'; script-src {script.source}; style-src {style.source}; img-src data:; "
        "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    )
    return Page(html=html, csp=csp)
