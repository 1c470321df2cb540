"""Slices of a results file by rubric tag (`--tag` on totals, report and view).

Each record carries its question's tags from the time it was graded (`Record.tags`), so a results
file is sliced without its battery, and a battery edited since cannot move an answer between
slices. A file graded before tags were recorded has none: asking it for a tag is a usage error that
says so, rather than an empty table.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..core.display import shown
from ..core.errors import UsageError
from ..core.records import Record


def select_tagged(records: Iterable[Record], tags: Sequence[str] | None) -> list[Record]:
    """The records whose question has any of `tags` (all of them when `tags` is empty or None).

    Raises `UsageError` for a tag no record has, naming it (and saying when no record has any tag)."""
    records = list(records)
    if not tags:
        return records
    wanted = set(tags)
    seen = {tag for record in records for tag in record.tags}
    unknown = sorted(wanted - seen)
    if unknown:
        named = ", ".join(shown(tag) for tag in unknown)
        if not seen:
            raise UsageError(
                f"--tag {named}: no record carries a tag (graded before tags were recorded, or the "
                "battery's questions have no `tags` field)"
            )
        raise UsageError(
            f"--tag: no record has tag {named} (tags in the results: {', '.join(map(shown, sorted(seen)))})"
        )
    return [record for record in records if wanted.intersection(record.tags)]
