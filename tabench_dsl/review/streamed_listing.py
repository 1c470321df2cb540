"""The answers a cut report shows in full, chosen as the results stream by (`report --html`).

`report.listed_answers` chooses from a list of every standing record: at ten million records that
list alone takes gigabytes. Here the file is read as a stream, and each standing record, its pair's
decisions applied and within the `--tag` slice, is handed to a `report.FairCut`, which keeps at most
`limit` light records a verdict and system (a large file's first read shared out over its cores,
`streamed_totals.first_read`: the cut does not depend on the order records come in). A stream cannot
know a record is its pair's last before the end: while no pair has come twice (most files), every
record read is; once one comes again, that read only numbers each pair's last record
(`last_records.LastRecords`, 8 bytes a pair) and a second read hands those over. What it chooses is
what `listed_answers` chooses from the list. The decisions that do not apply are found as
`report_run` finds them: from the standing records they name.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..core.records import Decision, Record
from ..store.light_records import LightLines, LightRecord
from ..store.records_at import iter_light_structs_at
from .decisions import StaleDecision, apply_decisions, decided_record, decisions_by_pair
from .last_records import ResultsChanged
from .report import FairCut
from .slices import TagSlice
from .streamed_totals import Beside, first_read


def listing_beside(
    decisions: list[Decision], *, tags: Sequence[str] | None, limit: int
) -> Beside[AnswerChoice]:
    """The listing's taker, for the totals' first read to carry (`totals_of`'s `beside`) and
    `streamed_listing` to finish from, so that a report of a file with no index decodes it once."""
    decided = decisions_by_pair(decisions)
    return Beside(lambda: AnswerChoice(decided, tags, limit))


def streamed_listing(
    results: Path,
    decisions: list[Decision],
    *,
    tags: Sequence[str] | None,
    limit: int,
    beside: Beside[AnswerChoice] | None = None,
) -> tuple[list[tuple[Record, int]], list[StaleDecision]]:
    """`listed_answers(records, limit)` of the standing records of `results` (as far as the
    listing reads them, `AnswerChoice`: the page reads the answers it shows whole, at the offset
    given with each, `FairCut.chosen_at`), with the
    decisions applied and only those of `tags`, and the decisions that do not apply (`stale`, as
    `apply_decisions` words them). `ResultsChanged` when the file changed between its two reads.
    From the totals' first read when it carried `beside` (`listing_beside`, made with the same
    decisions, tags and limit), else from a first read of its own."""
    decided = decisions_by_pair(decisions)
    if beside is not None and beside.last is not None:
        chosen, last = beside.taker, beside.last
    else:  # its bad lines are reported by the totals' read
        first = first_read(results, lambda: AnswerChoice(decided, tags, limit), None)
        chosen, last = first.taker, first.last
    if chosen is None:  # the records read were not all standing: chosen on a second read
        chosen = AnswerChoice(decided, tags, limit)
        number = 0
        for at, record in iter_light_structs_at(results):
            if number == last.count:
                break
            if last.is_last(number, record.system, record.question):
                chosen.add(record, at)
            number += 1
        if number < last.count:
            raise ResultsChanged
    stale: list[StaleDecision] = []
    if decisions:
        apply_decisions(chosen.named, decisions, stale=stale)
    return chosen.cut.chosen_at(), stale


class AnswerChoice:
    """The standing records handed over (`add`, as decoded), decided, sliced and cut; those
    decisions name kept aside (`named`, light records). The cut reads of a record only its pair,
    verdict and decision, and the page reads the answers it shows whole (`report_run`), so any
    other is cut as its outline (`LightLines.outline`, made only of a record the cut keeps):
    making the light record of each costs as much as decoding its line. Carried by the totals'
    read, it cuts the record they made (`add_counted`) instead, where they made one."""

    def __init__(self, decided: dict[tuple[str, str], list[Decision]], tags, limit: int) -> None:
        self.decided = decided
        self.slicing = TagSlice(tags)
        self.cut = FairCut(limit)
        self.named: list[Record] = []
        self.lines = LightLines()

    def add(self, light: LightRecord, at: int) -> None:
        if self.decided and (light.system, light.question) in self.decided:
            record = self.lines.record(light)
            self.named.append(record)
            record = decided_record(record, self.decided)
            if self.slicing.takes(record):
                self.cut.add(record, at)
        elif self.slicing.takes(light):
            self.cut.add(light, at, self.lines.outline)

    def add_counted(self, light: LightRecord, counted: Record | LightRecord | None, at: int) -> None:
        """`add`, from the totals' read (`streamed_totals.Beside`): the record they made and
        counted (decided) is cut as it is, rather than an outline made again (what the cut and the
        page read of it is the same); one they counted as it came (`counted` is `light`) is cut as
        its outline, made only if the cut keeps it; None: outside the `--tag` slice."""
        if self.decided and (light.system, light.question) in self.decided:
            self.add(light, at)  # kept aside undecided too (`named`), and rare
        elif counted is light:  # counted with no `Record` made: its outline, if the cut keeps it
            self.cut.add(light, at, self.lines.outline)
        elif counted is not None:
            self.cut.add(counted, at)

    def merge(self, later: AnswerChoice) -> None:
        """Take what `later` took (the records right after these)."""
        self.named.extend(later.named)
        self.slicing.seen |= later.slicing.seen
        self.cut.merge(later.cut)

    def trim(self) -> None:
        self.cut.trim()  # what a range's cut sends back: what a merge can choose
