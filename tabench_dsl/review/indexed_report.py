"""The HTML report of a results file kept in its index, for the next `report --html` of it.

A report reads every record whole and lays out thousands of answers; the page of a file that did
not change is the page it had, but for the time it says it was generated. So the page is kept as
rendered with a fixed time (`KEPT_NOW`), and each write puts the time of that write in its place
(`stamped`: the header's `generated ...</p>`, which no text from a file can imitate, as every such
text is HTML-escaped and has no `</p>`). A kept page is used when everything it depends on is as it
was: the results file's bytes (`results_index.load_exact`), its decisions file's content, the name
of the results as given, `--max-answers`, `--price` and `--tag`, and the code and templates that
write the page (`index_names.code_hash`). A report with `--battery` or `--compare` reads other
files, and one of a file with bad lines or stale decisions has warnings to repeat: neither is kept.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import msgspec

from ..core.price import Price
from ..core.safe_open import open_for_rewrite
from ..store.decisions import decisions_path
from ..store.results_index import Extent, open_index
from .index_names import kept_name

#: The time a kept page is rendered with, replaced by the time of each write.
KEPT_NOW = datetime(2000, 1, 1, tzinfo=UTC)
STAMP_FORMAT = "%Y-%m-%d %H:%M UTC"


class KeptReport(msgspec.Struct):
    """A page rendered at `KEPT_NOW`, with how many answers it counts and shows in full."""

    html: str
    answers: int
    in_full: int


def report_variant(
    results: Path, *, max_answers: int, price: Price | None, tags: Sequence[str] | None
) -> str | None:
    """The index's name for the report of `results` with these options; None when its decisions
    file cannot be read (then nothing is kept or used)."""
    price_named = msgspec.to_builtins(price)
    return kept_name(
        "report", [decisions_path(results)], str(results), max_answers, price_named, list(tags or ())
    )


def kept_report(results: Path, variant: str) -> KeptReport | None:
    """The page kept for `variant` when the results are exactly as they were, else None."""
    index = open_index(results)
    body = index.load_exact(variant) if index is not None else None
    if body is None:
        return None
    try:
        kept = msgspec.msgpack.decode(body, type=KeptReport)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    return kept if _stamp_at(kept.html, KEPT_NOW) >= 0 else None


def keep_report(results: Path, variant: str, extent: Extent, kept: KeptReport) -> None:
    """Keep `kept`, rendered from the bytes `extent` (measured before the read) covers."""
    index = open_index(results)
    if index is not None and _stamp_at(kept.html, KEPT_NOW) >= 0:
        index.store(variant, extent, msgspec.msgpack.encode(kept))


def _marker(now: datetime) -> str:
    return f"generated {now.strftime(STAMP_FORMAT)}</p>"


def _stamp_at(html: str, now: datetime) -> int:
    return html.find(_marker(now))


def stamped(html: str, now: datetime | None = None) -> str:
    """A page rendered at `KEPT_NOW` with the header saying it was generated at `now` (the time of
    the call when None)."""
    return html.replace(_marker(KEPT_NOW), _marker(now or datetime.now(UTC)), 1)


def write_page(out: str | Path, html: str) -> None:
    """Write the page to `out` from its start, never through a link (as `report.write_report`)."""
    with os.fdopen(open_for_rewrite(out), "w", encoding="utf-8") as f:
        f.write(html)
