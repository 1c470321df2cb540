"""`grade --resume`'s first read of a results file its index knows nothing of: one read for both
the done pairs the plan takes out (`store.standing_verdicts`) and the totals `grade` prints at its
end (`review.totals_of`), each kept in the index, where the plan and the totals then find it.

Read apart, the two are two reads of the file, each a decode of every line; read together, the
done pairs cost a byte a record: the totals' first read numbers each pair's last record anyway,
and keeps each record's verdict beside (`review.streamed_totals.standing_of`). A resume that
grades nothing (the file unchanged) then prints totals read from the index; one that grades some
counts its totals again at its end, as it always did.

The same read notes what graded each record, which the checks that refuse a mixed resume need
(`store.resume_checks`), and it is begun before the battery is compiled (`ResumeRead`): the
compile has one core, and a forked child reads the file on the other meanwhile.

Only when the index holds no map of the done pairs at all: one kept for the file's first lines is
extended by the lines appended since, which reads only those (no totals read at the start). A
file the totals refuse (not a results file) is left to the plan's own read, which says so as ever.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..core.errors import UsageError
from ..store.resume_checks import Found, ScanAhead
from ..store.standing_verdicts import Standing, keep_read, kept_any


def scan_ahead(out: Path) -> ScanAhead | None:
    """The resume's read of `out`, begun before the battery is compiled (the compile has a core of
    its own, and the read takes the other): the totals' first read, when it would be made
    (`ResumeRead`), else the scan for the rules that graded it (`store.resume_checks.ScanAhead`);
    None when there is no file to read."""
    if not out.is_file():
        return None
    return ResumeRead(out) if _reads_whole(out) else ScanAhead(out)


def _reads_whole(out: Path) -> bool:
    """Whether the resume reads `out` whole for its done pairs and totals (`read_for_resume`)."""
    from ..store.results_index import open_index

    return open_index(out) is not None and not kept_any(out)


class ResumeRead(ScanAhead):
    """A resume's one read of its results file, begun ahead (`scan_ahead`): the totals' first read
    (`review.totals_of.begin_resume_read`) notes what graded each record, so that the checks that
    refuse a mixed resume need no scan of their own (`found`), and the done pairs and the totals
    are counted from it (`read_for_resume`). A file that read cannot take (a line that is not a
    record, a decision that needs the records whole) is scanned and read as ever."""

    def __init__(self, out: Path) -> None:
        from ..review.totals_of import begin_resume_read
        from ..store.decisions import decisions_path

        self.begun = begin_resume_read(out, decisions_path(out))
        super().__init__(out, begin=self.begun is None)

    def found(self) -> tuple[Found, Callable[[], None]]:
        begun = self.begun
        if begun is not None and (read := begun.read()) is not None and read.graded is not None:
            self.take_read(read.graded, begun.extent)
        return super().found()

    def cancel(self) -> None:
        if self.begun is not None:
            self.begun.cancel()
        super().cancel()


def read_for_resume(out: Path, ahead: ScanAhead | None = None) -> None:
    """One read of the results file `out` for the resume's done pairs and the totals, both kept in
    its index (module docstring); nothing when its index already holds the done pairs or cannot
    be kept. `ahead`: the read begun before the battery was compiled (`scan_ahead`)."""
    from ..review.totals_of import totals_of
    from ..store.decisions import decisions_path
    from ..store.results_index import measure

    if not out.is_file() or not _reads_whole(out):
        return
    extent = measure(out)
    if extent is None:
        return
    found: list[Standing] = []
    begun = ahead.begun if isinstance(ahead, ResumeRead) else None
    try:  # its bad lines: named at the end
        totals_of(out, decisions_path(out), on_standing=found.append, begun=begun)
    except UsageError:
        return
    if found:
        keep_read(out, extent, found[0])
