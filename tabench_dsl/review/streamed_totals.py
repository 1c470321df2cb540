"""Totals of a results file counted as its records stream by, never all of them held at once.

`compute_totals` takes a list of records and keeps the standing one of each pair in a dict: at ten
million records, gigabytes. Here the file is read as a stream (`light_records.iter_light_records`)
and each record is counted as it comes (`totals.StandingCounter`), which holds only per-system,
per-question and per-judge counts and a bit per pair; what is held per pair is the number of its
last record (`last_records.LastRecords`, 8 bytes a pair).

A record counts only if it is its pair's last, which a stream cannot know before the end. The
first read counts every record as standing while no pair has come twice; most files have one
record a pair, and then that read is the count. Once a pair comes again, the first read only
numbers the pairs' last records, and a second read counts those. What some record has that must be
read whole (a panel, audits, repeats: rare) is counted by the same functions
`compute_totals` calls, over a further read of the standing records (`totals.count_standing`).

Every read after the first checks it finds the records the first numbered (each record's pair
noted, no fewer records, the file still beginning with the bytes measured before the first read):
a file truncated or rewritten in between raises `ResultsChanged`, and the caller counts again.
"""

from __future__ import annotations

import functools
import itertools
import operator
from array import array
from collections.abc import Callable, Iterator, Sequence
from itertools import repeat
from pathlib import Path
from typing import Generic, Protocol, Self, TypeVar, get_args

from ..core.jsonl import BadLine
from ..core.price import Price
from ..core.records import Decision, Outcome, Record
from ..store.key_cells import KEY_BASE
from ..store.light_records import LightLines, LightRecord, bad_line_reporter, reviewed
from ..store.line_ranges import line_ranges, map_ranges, processes_for
from ..store.read_ahead import ReadAhead
from ..store.records_at import iter_light_structs_at
from ..store.results_index import Extent, starts_with
from ..store.resume_checks import GradingsTally
from ..store.standing_verdicts import MISSING_MARK, Standing
from .decisions import decided_record, decisions_by_pair
from .last_records import LastRecords, ResultsChanged
from .slices import TagSlice
from .totals import StandingCounter, Totals, count_standing

__all__ = [
    "BegunRead",
    "Beside",
    "FirstRead",
    "ResultsChanged",
    "first_read",
    "streamed_totals",
]


def streamed_totals(
    results: Path,
    decisions: list[Decision],
    *,
    price: Price | None,
    extent: Extent | None,
    on_problem: Callable[[str], None],
    tags: Sequence[str] | None = None,
    processes: int | None = None,
    on_standing: Callable[[Standing], None] | None = None,
    beside: Beside | None = None,
    begun: BegunRead | None = None,
) -> Totals:
    """What `compute_totals(apply_decisions(records, decisions))` gives for the records of
    `results` (bad lines to `on_problem`, as `iter_light_records` words them). `decisions` holds
    no blind audit (those need the records whole: `counted_records`). `extent` is the file as
    measured before this read; a file that no longer begins with it raises `ResultsChanged`.
    With `tags`, only the standing records of those tags count (`slices.select_tagged`, whose
    `UsageError` an unknown tag raises). The first read is shared out over `processes`
    (`first_read`). `on_standing` is handed the verdict of each pair's last record, as
    `store.standing_verdicts` keeps them, from the same read (a resume's done pairs). `beside`:
    another reader's taker, handed the same records by the same first read (`Beside`). `begun`:
    a resume's first read begun before, taken in place of one when it is the same (`_begun`)."""
    decided = decisions_by_pair(decisions)
    coded = on_standing is not None

    def counting() -> StandingCount:
        return StandingCount(decided, price, tags)

    other = None
    if beside is None:
        first = _begun(begun, decisions, price, tags, extent, coded) or first_read(
            results, counting, on_problem, processes, coded
        )
        last, codes, count = first.last, first.codes, first.taker
    else:
        make = beside.make
        both = first_read(results, lambda: _Both(counting(), make()), on_problem, processes, coded)
        last, codes = both.last, both.codes
        if both.taker is not None:
            count, other = both.taker.count, both.taker.other
        else:
            count = None
    if on_standing is not None and codes is not None:
        on_standing(standing_of(last, codes))
    if beside is not None and count is None:  # the standing records read again: handed it too
        other = beside.make()
        handed = [other]  # on the first pass over them only
        whole = functools.partial(_standing, results, last, decided, handed)
    else:
        whole = functools.partial(_standing, results, last, decided)
    slicing = count.slicing if count is not None else TagSlice(tags)
    standing = functools.partial(slicing.select, whole) if tags else whole
    totals = count.counter.totals(standing) if count is not None else count_standing(standing, price=price)
    slicing.check()
    if extent is not None and not starts_with(results, extent):
        raise ResultsChanged
    if beside is not None:
        beside.taken(last, other)
    return totals


def _begun(
    begun: BegunRead | None,
    decisions: list[Decision],
    price: Price | None,
    tags: Sequence[str] | None,
    extent: Extent | None,
    coded: bool,
) -> FirstRead[StandingCount] | None:
    """`begun`'s read, when it is the one `streamed_totals` would make: of these decisions, no price
    or tags, the file as `extent` measures it, for `on_standing` (`coded`) and nothing beside."""
    if begun is None or not coded or price is not None or tags or begun.decisions != decisions:
        return None
    if extent is None or extent != begun.extent:
        return None
    return begun.read()


class Taker(Protocol):
    """What a first read hands each record to while every record read is standing (`add`: as
    decoded, for the taker to make a `Record` of those it needs, `LightLines.record`, with the
    offset its line starts at, for a taker that reads some lines again whole,
    `records_at.records_at`), and how two ranges' takers become one (`merge`: `later` took the
    records right after these)."""

    def add(self, record: LightRecord, at: int) -> None: ...

    def merge(self, later: Self) -> None: ...

    def trim(self) -> None:
        """Drop what no merge can use: a range's taker, read in a child, is sent back whole."""


TakerT = TypeVar("TakerT", bound=Taker)


class BesideTaker(Taker, Protocol):
    """A taker the totals' first read carries (`Beside`): handed each record with what the
    totals counted of it (`add_counted`: `StandingCount.count`'s, a `Record` with decisions
    applied when they made one, the record itself when they made none, None when outside the
    `--tag` slice), so that it need not make one of its own where they did."""

    def add_counted(self, record: LightRecord, counted: Record | LightRecord | None, at: int) -> None: ...


BesideT = TypeVar("BesideT", bound=BesideTaker)


class StandingCount:
    """The totals' taker: each standing record of the `--tag` slice counted, decisions applied."""

    def __init__(
        self, decided: dict[tuple[str, str], list[Decision]], price: Price | None, tags: Sequence[str] | None
    ) -> None:
        self.decided = decided
        self.slicing = TagSlice(tags)
        self.counter = StandingCounter(price)
        self.lines = LightLines()

    def add(self, record: LightRecord, at: int) -> None:
        self.count(record)

    def count(self, record: LightRecord) -> Record | LightRecord | None:
        """Count `record` when it is in the slice: the record counted, a `Record` with its
        decisions applied when it has any or reviews (a panel, an audit, repeats), else `record`
        itself, counted with no `Record` made of it (`StandingCounter.add_plain`: making one
        costs as much as decoding its line); None outside the slice."""
        if self.slicing.wanted and not self.slicing.takes(record):
            return None
        decided = self.decided
        if (decided and (record.system, record.question) in decided) or reviewed(record):
            counted = decided_record(self.lines.record(record), decided)
            self.counter.add(counted)
            return counted
        lines = self.lines
        attempts = lines.attempts(record.attempts) if record.attempts else lines.none_listed
        self.counter.add_plain(record, lines.same(record.judge), attempts)
        return record

    def merge(self, later: StandingCount) -> None:
        self.counter.merge(later.counter)
        self.slicing.seen |= later.slicing.seen

    def trim(self) -> None:
        pass  # every count merges


class Beside(Generic[BesideT]):
    """Another reader's taker (the report's choice of the answers it shows) carried by the totals'
    first read, so that a file with no index is decoded once for both: `make` gives the taker of
    a range of lines, as `first_read`'s does. Once the totals are counted from that read, `last`
    numbers each pair's last record and `taker` is what the other reader's took (None when a pair
    came twice: the reader hands it the standing records on a read of its own); `last` stays None
    when the totals were not counted from a read of the file in its order (kept in the index,
    counted otherwise), and the reader reads the file itself."""

    def __init__(self, make: Callable[[], BesideT]) -> None:
        self.make = make
        self.last: LastRecords | None = None
        self.taker: BesideT | None = None

    def taken(self, last: LastRecords, taker: BesideT | None) -> None:
        self.last, self.taker = last, taker


class _Both(Generic[BesideT]):
    """The totals' taker and a `Beside`'s, handed the same records (and the record counted)."""

    def __init__(self, count: StandingCount, other: BesideT) -> None:
        self.count = count
        self.other = other

    def add(self, record: LightRecord, at: int) -> None:
        self.other.add_counted(record, self.count.count(record), at)

    def merge(self, later: _Both[BesideT]) -> None:
        self.count.merge(later.count)
        self.other.merge(later.other)

    def trim(self) -> None:
        self.count.trim()
        self.other.trim()


class FirstRead(Generic[TakerT]):
    """The first read of a results file (or of a range of its lines): each pair's last record
    numbered (`last`), and every record handed to `taker` until a pair comes twice (then `taker`
    is None: the records read so far are not all standing, and the caller reads the standing
    ones again)."""

    def __init__(self, taker: TakerT, *, coded: bool = False) -> None:
        self.last = LastRecords()
        self.taker: TakerT | None = taker
        #: With `coded` (a resume's read), each record's verdict in `VERDICT_CODES`, a byte a
        #: record in file order, and what graded the records (`GradingsTally`), which the resume
        #: checks before it goes on.
        self.codes: array | None = array("B") if coded else None
        self.graded: GradingsTally | None = GradingsTally() if coded else None
        self.clean = True

    def read(
        self, results: Path, on_bad: Callable[[int, BadLine], None], start: int = 0, stop: int | None = None
    ) -> None:
        last, taker = self.last, self.taker
        code = None if self.codes is None else self.codes.append
        grading = None if self.graded is None else self.graded.note
        for at, record in iter_light_structs_at(results, on_bad, start, stop):
            if code is not None and grading is not None:
                code(_CODE[record.verdict] + (_MISSING if record.cause == "missing" else 0))
                grading(record)
            repeated = last.note(record.system, record.question)
            if taker is not None:
                if repeated:  # this pair's earlier record was taken: the standing ones are read again
                    taker = None
                else:
                    taker.add(record, at)
        self.taker = taker

    def merge(self, later: FirstRead[TakerT]) -> None:
        """Add the read of the lines right after these."""
        self.clean = self.clean and later.clean
        repeated = self.last.merge(later.last)
        if self.codes is not None and later.codes is not None:
            self.codes.extend(later.codes)
        if self.graded is not None and later.graded is not None:
            self.graded.merge(later.graded)
        if self.taker is None or later.taker is None or repeated:
            self.taker = None
        else:
            self.taker.merge(later.taker)


def first_read(
    results: Path,
    make: Callable[[], TakerT],
    on_problem: Callable[[str], None] | None,
    processes: int | None = None,
    coded: bool = False,
) -> FirstRead[TakerT]:
    """The first read of `results`, its records handed to a taker `make` gives (and, `coded`,
    each one's verdict kept: `FirstRead.codes`). Shared out over
    `processes` (default: `line_ranges.processes_for`), each reading a range of whole lines with
    a taker of its own, merged in file order; a range holding a line that is not a record reads
    the whole file again in this process, so that its problems go to `on_problem` (and a file
    that is no results file is refused) exactly as one read does."""
    shared = processes_for(results) if processes is None else processes
    if shared > 1:
        ranges = line_ranges(results, shared)
        merged = _merged(map_ranges(functools.partial(_read_range, results, make, coded), ranges))
        if merged is not None:
            return merged
    first = FirstRead(make(), coded=coded)
    first.read(results, bad_line_reporter(results, on_problem))
    return first


def _merged(reads: list[FirstRead[TakerT]]) -> FirstRead[TakerT] | None:
    """The reads of a file's ranges (in file order) as one; None when one held a bad line."""
    if not reads or not all(read.clean for read in reads):
        return None
    first, *later = reads
    for read in later:
        first.merge(read)
    return first


def _joined(earlier: FirstRead[TakerT], later: FirstRead[TakerT]) -> FirstRead[TakerT]:
    earlier.merge(later)
    return earlier


class BegunRead:
    """A resume's first read of a whole results file (`first_read`, `coded`), begun before this
    process is free for it: a forked child takes its ranges now (`store.read_ahead.ReadAhead`),
    and this process the rest once it asks for the read (`read`). `grade --resume` begins it
    before it compiles the battery, which has a core of its own: the other reads meanwhile.
    `streamed_totals` counts from it when it counts with the same `decisions` (no price, no
    tags) a file still as it was measured then (`extent`, whose whole lines it reads)."""

    def __init__(self, results: Path, decisions: list[Decision], extent: Extent) -> None:
        self.decisions = decisions
        self.extent = extent
        decided = decisions_by_pair(decisions)

        def counting() -> StandingCount:
            return StandingCount(decided, None, None)

        work = functools.partial(_read_range, results, counting, True)
        self._ahead = ReadAhead(results, work, 0, extent.end, join=_joined)
        self._read: FirstRead[StandingCount] | None = None
        self._asked = False

    def read(self) -> FirstRead[StandingCount] | None:
        """The read, merged (asked once; later asks give it again); None when a range held a
        line that is not a record (the file is then read as ever, so that those are named)."""
        if not self._asked:
            self._asked = True
            self._read = _merged(self._ahead.results())
        return self._read

    @property
    def forked(self) -> bool:
        return self._ahead.forked

    def cancel(self) -> None:
        """Stop the child; a read not asked for by now is never given (`read`: None)."""
        self._ahead.cancel()
        self._asked = True


def _read_range(
    results: Path, make: Callable[[], TakerT], coded: bool, start: int, stop: int
) -> FirstRead[TakerT]:
    """The first read of the lines from `start` to `stop`, its bad lines only noted (`clean`)."""
    read = FirstRead(make(), coded=coded)

    def on_bad(number: int, bad: BadLine) -> None:
        read.clean = False

    read.read(results, on_bad, start, stop)
    if read.taker is not None:
        read.taker.trim()
    return read


def _standing(
    results: Path,
    last: LastRecords,
    decided: dict[tuple[str, str], list[Decision]],
    handed: list[BesideTaker] | None = None,
) -> Iterator[Record]:
    """The standing records of `results`, in file order (the order `outcomes.latest` keeps),
    decisions applied; `ResultsChanged` when the file no longer holds the records `last` noted.
    A `Beside` taker in `handed` is handed each standing record as decoded, then taken out: the
    count's later passes (a panel's, audits') are not its."""
    taker = handed.pop() if handed else None
    lines = LightLines()
    number = 0
    for at, light in iter_light_structs_at(results):  # its bad lines were reported by the first read
        if number == last.count:
            break
        if last.is_last(number, light.system, light.question):
            if taker is not None:
                taker.add(light, at)
            yield decided_record(lines.record(light), decided)
        number += 1
    if number < last.count:
        raise ResultsChanged


#: The standing verdicts a first read codes (`FirstRead.codes`), as `store.standing_verdicts`
#: names them: each verdict, then each after `MISSING_MARK` (a missing answer's record).
VERDICT_CODES = (*get_args(Outcome), *(MISSING_MARK + verdict for verdict in get_args(Outcome)))
_CODE = {verdict: number for number, verdict in enumerate(get_args(Outcome))}
_MISSING = len(_CODE)


def standing_of(last: LastRecords, codes: array) -> Standing:
    """The standing verdicts (`store.standing_verdicts.Standing`) of a read that numbered each
    pair's last record (`last`) and coded each record's verdict (`codes`): no dict of pairs, and
    no work a record beyond its code."""
    numbers: dict[str, int] = {}
    for name in itertools.chain(last.systems, last.questions, VERDICT_CODES):
        numbers.setdefault(name, len(numbers))
    question_numbers = [numbers[name] for name in last.questions]
    verdict_numbers = [numbers[name] for name in VERDICT_CODES]
    system_names = list(last.systems)
    keys, verdicts = array("Q"), array("I")
    for s, questions, lasts in last.by_system():
        base = numbers[system_names[s]] * KEY_BASE
        keys.extend(map(operator.add, repeat(base), map(question_numbers.__getitem__, questions)))
        verdicts.extend(map(verdict_numbers.__getitem__, map(codes.__getitem__, lasts)))
    return Standing(list(numbers), keys, verdicts)
