"""`grade --resume`'s first read of a results file its index knows nothing of: one read for both
the done pairs the plan takes out (`store.standing_verdicts`) and the totals `grade` prints at its
end (`review.totals_of`), each kept in the index, where the plan and the totals then find it.

Read apart, the two are two reads of the file, each a decode of every line; read together, the
done pairs cost a byte a record: the totals' first read numbers each pair's last record anyway,
and keeps each record's verdict beside (`review.streamed_totals.standing_of`). A resume that
grades nothing (the file unchanged) then prints totals read from the index; one that grades some
counts its totals again at its end, as it always did.

Only when the index holds no map of the done pairs at all: one kept for the file's first lines is
extended by the lines appended since, which reads only those (no totals read at the start). A
file the totals refuse (not a results file) is left to the plan's own read, which says so as ever.
"""

from __future__ import annotations

from pathlib import Path

from ..core.errors import UsageError
from ..store.resume_checks import ScanAhead
from ..store.standing_verdicts import Standing, keep_read, kept_any


def scan_ahead(out: Path) -> ScanAhead | None:
    """The resume's scan of `out` for the rules that graded it, begun before the battery is
    compiled (`store.resume_checks.ScanAhead`: the compile has a core of its own, and the scan
    takes the other); None when there is no file to scan."""
    return ScanAhead(out) if out.is_file() else None


def read_for_resume(out: Path) -> None:
    """One read of the results file `out` for the resume's done pairs and the totals, both kept in
    its index (module docstring); nothing when its index already holds the done pairs or cannot
    be kept."""
    from ..review.totals_of import totals_of
    from ..store.decisions import decisions_path
    from ..store.results_index import measure, open_index

    if not out.is_file() or open_index(out) is None or kept_any(out):
        return
    extent = measure(out)
    if extent is None:
        return
    found: list[Standing] = []
    try:
        totals_of(out, decisions_path(out), on_standing=found.append)  # its bad lines: named at the end
    except UsageError:
        return
    if found:
        keep_read(out, extent, found[0])
