"""The totals of a results file: `totals_of`, the one place every command gets them from.

`tabench totals`, the totals `grade` prints at its end, the report and the viewer all show the
totals of a results file with the decisions beside it applied, the standing records of `--tag`
only, priced at `--price`. Counting a million records takes tens of seconds however it is done in
Python, and the figures of a file that has not changed are the figures it had, so `totals_of`
keeps them in the index beside the results file (`store.results_index`) under a name made of
everything they depend on, and gives them back while nothing of that changed:

- the results file's bytes (`load_exact`: its size, modification time, inode and hashes of its
  content, all as they were; a file appended to, rewritten, truncated or replaced is counted again);
- the decisions file's whole content (its sha256), `--price`, `--tag`, and the order counted in;
- the files of the code that counts (`core`, `store` and `review`, hashed once per process): an
  upgrade or an edit of tabench counts again rather than serve figures an older version computed.

Otherwise they are counted in one of three ways, each giving what `compute_totals` gives for the
standing records: as a grading wrote them (`run_totals.RunTotals`, `written`: no read at all), as
the records stream by (`streamed_totals`, the file's order), or, in (system, question) order as the
viewer lists them, at the places its columns keep (`placed`) or from the records held. A blind
audit among the decisions needs the records whole (`counted_records`), held in a list as always.

The lines that were not records are kept too, and named again on every call, as a fresh count
names them. A kept value is only ever the msgpack of a `Totals` this code computed (signed:
`core.index_key`); one that does not read back as one is computed again. msgpack, not JSON: the
totals of 200,000 questions read back in tens of milliseconds rather than a quarter of a second
(every later `grade --resume` and `view` reads them), and they are the same values (msgpack keeps
every float and string as it was). `KEPT_FORM` is in the name, so a value kept as JSON by an
older tabench is not read.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

import msgspec

from ..core.errors import UsageError
from ..core.price import Price
from ..core.records import Decision, Record, record_decoder
from ..store.light_records import LightLines
from ..store.line_ranges import map_ranges, processes_for
from ..store.results_index import Extent, measure, open_index
from ..store.standing_verdicts import Standing
from .counted_records import counted_records, decisions_beside, reads_whole
from .decisions import decided_record, decisions_by_pair
from .index_names import kept_name
from .kept_count import CountState, count_state, counter_of
from .outcomes import latest
from .slices import select_tagged
from .streamed_totals import BegunRead, Beside, ResultsChanged, streamed_totals
from .totals import StandingCounter, Totals, compute_totals

if TYPE_CHECKING:
    from .run_totals import RunTotals

#: The order the standing records are counted in: the file's (`tabench totals`, `grade`, the
#: report) or their pairs' (the viewer's). It matters: judges are listed as first met, and prices
#: are added in it.
Order = Literal["file", "pair"]


class PlacedRecords(Protocol):
    """Standing records read from a results file at places kept for it (the viewer's columns),
    in (system, question) order, their `--tag` slice taken."""

    @property
    def extent(self) -> Extent | None:
        """The file as it was when the places were read."""
        ...

    def __len__(self) -> int: ...

    def each_from_file(
        self, decode: Callable[[bytes], Record], start: int = 0, stop: int | None = None
    ) -> Iterator[Record]: ...


class PairCount:
    """The viewer's totals counted while a first read of its columns decodes each standing record
    anyway, in (system, question) order (`column_store`): each part of the read counts its records
    (`add`) on a `StandingCounter` of its own, and the parts' counters merged in order are `counter`,
    which `totals_of` finishes when its inputs are the same (the file as the columns read it, these
    decisions, this price, no `--tag`), instead of reading every standing record again."""

    def __init__(self, decisions_file: Path | None, price: Price | None) -> None:
        self.decisions = decisions_beside(decisions_file)
        self.decided = decisions_by_pair(self.decisions)
        self.price = price
        #: The count of every standing record, once the read has merged it (used once).
        self.counter: StandingCounter | None = None
        #: The count `totals_of` finished the viewer's totals from when it counted them, which
        #: the viewer counts decisions onto; None when it had none (read from the index).
        self.finished: StandingCounter | None = None

    def new_counter(self) -> StandingCounter:
        return StandingCounter(self.price)

    def add(self, counter: StandingCounter, record: Record) -> None:
        """Count one standing record (read whole), the decisions applied as `totals_of` applies them."""
        counter.add(decided_record(record, self.decided))

    def take(self, decisions: list[Decision], price: Price | None) -> StandingCounter | None:
        """The counter, when it counted with these `decisions` and `price` (None otherwise); once."""
        counter, self.counter = self.counter, None
        same = decisions == self.decisions and price == self.price
        return counter if same else None


#: How the kept totals are encoded, in their name (`_variant`): a value of another form is not read.
KEPT_FORM = "msgpack"


class _KeptTotals(msgspec.Struct):
    """What the index keeps: the totals, and each skipped line's problem without the file's name."""

    totals: Totals
    problems: list[str]


_kept_decoder = msgspec.msgpack.Decoder(_KeptTotals)
_count_decoder = msgspec.msgpack.Decoder(CountState)


def _unnamed(problem: str) -> None:
    """A caller that names the file's bad lines itself (the viewer's columns' read)."""


def totals_of(
    results: Path,
    decisions_file: Path | None,
    *,
    price: Price | None = None,
    tags: Sequence[str] | None = None,
    on_problem: Callable[[str], None] = _unnamed,
    order: Order = "file",
    placed: PlacedRecords | None = None,
    written: RunTotals | None = None,
    on_standing: Callable[[Standing], None] | None = None,
    pair_count: PairCount | None = None,
    beside: Beside | None = None,
    begun: BegunRead | None = None,
) -> Totals:
    """The totals of `results`: the decisions of `decisions_file` (when it exists) applied, the
    standing records of `tags` only (when given), priced at `price` over each record's own, counted
    in `order`. Each line that is not a record goes to `on_problem`, as `counted_records` words it.
    Read from the index when it holds them for exactly these inputs; else counted (from `written`,
    the grading that wrote the file, when it counted them all; else from `placed`, which a first
    read of the viewer's columns may have counted already (`pair_count`), else the file) and kept
    there. `on_standing`: handed the standing verdicts of the file when it is read in its order (a
    resume's done pairs, `streamed_totals`); never called for kept or counted totals. `beside`:
    another reader's taker that the same read hands each record (the report's answers shown,
    `streamed_totals.Beside`), so a file with no index is decoded once for both; given nothing
    when the totals are not counted from such a read. `begun`: a resume's first read of the file,
    begun before (`begin_resume_read`), which a count from the file in its order takes in place
    of reading it when it read what this count would."""
    variant = _variant(order, decisions_file, price, tags)
    index = open_index(results) if variant is not None else None
    prefix = f"{results}:"
    if index is not None and variant is not None:
        kept = _decode(index.load_exact(variant))
        if kept is not None:
            for problem in kept.problems:
                on_problem(prefix + problem)
            return kept.totals
    extent = measure(results)  # before the read: a line appended meanwhile makes it stale
    problems: list[str] = []
    counter: StandingCounter | None = None
    counted = written.totals(results) if written is not None and price is None and not tags else None
    if counted is not None and written is not None:
        totals = counted
        if extent is not None and not extent.size == extent.end == written.end:
            extent = None  # grown since the writer let go: not the file they count, nothing kept
    elif order == "pair":
        totals, counter = _count_by_pair(results, decisions_file, price, tags, extent, placed, pair_count)
        if pair_count is not None:
            pair_count.finished = counter
    else:
        totals = _count(
            results, decisions_file, price, tags, extent, problems, on_problem, on_standing, beside, begun
        )
    named = all(problem.startswith(prefix) for problem in problems)
    if index is not None and variant is not None and extent is not None and named:
        kept_problems = [problem[len(prefix) :] for problem in problems]
        index.store(variant, extent, msgspec.msgpack.encode(_KeptTotals(totals, kept_problems)))
        if counter is not None:  # the viewer's: kept apart, read only at its first decision
            index.store(_count_variant(variant), extent, msgspec.msgpack.encode(count_state(counter)))
    return totals


def begin_resume_read(results: Path, decisions_file: Path | None) -> BegunRead | None:
    """The first read a resume's `totals_of(results, decisions_file, on_standing=...)` makes,
    begun now (`streamed_totals.BegunRead`); None when that count would not read the file so (a
    blind audit among the decisions: counted whole) or its last line is torn (a begun read covers
    whole lines, and the count reads the torn one too) or the decisions cannot be read."""
    extent = measure(results)
    if extent is None or extent.size != extent.end:
        return None
    try:
        decisions = decisions_beside(decisions_file)
    except (UsageError, OSError):  # said by the count, in its turn
        return None
    if any(decision.is_audit for decision in decisions):
        return None
    return BegunRead(results, decisions, extent)


def _count(
    results: Path,
    decisions_file: Path | None,
    price: Price | None,
    tags: Sequence[str] | None,
    extent: Extent | None,
    problems: list[str],
    on_problem: Callable[[str], None],
    on_standing: Callable[[Standing], None] | None = None,
    beside: Beside | None = None,
    begun: BegunRead | None = None,
) -> Totals:
    """The totals counted from the file in its order, each bad line's problem onto `problems` and
    then to `on_problem`. Streamed (`streamed_totals`: memory bounded by the pairs, not the
    records) unless a blind audit is among the decisions: it needs the records whole
    (`counted_records`), held in a list as they always were."""
    decisions = decisions_beside(decisions_file)
    if not any(decision.is_audit for decision in decisions):
        try:
            totals = streamed_totals(
                results,
                decisions,
                price=price,
                extent=extent,
                on_problem=problems.append,
                tags=tags,
                on_standing=on_standing,
                beside=beside,
                begun=begun,
            )
        except ResultsChanged:  # truncated or rewritten while it was read: counted again, whole
            problems.clear()
        except UsageError:  # an unknown --tag, after the lines that were not records are named
            for problem in problems:
                on_problem(problem)
            raise
        else:
            for problem in problems:
                on_problem(problem)
            return totals
    records = counted_records(results, decisions_file, on_problem=problems.append)
    for problem in problems:  # named before an unknown --tag stops the count, as they always were
        on_problem(problem)
    if tags:  # the standing record of a pair says which slice it is in
        records = select_tagged(latest(records).values(), tags)
    return compute_totals(records, price=price)


def _count_by_pair(
    results: Path,
    decisions_file: Path | None,
    price: Price | None,
    tags: Sequence[str] | None,
    extent: Extent | None,
    placed: PlacedRecords | None,
    pair_count: PairCount | None = None,
) -> tuple[Totals, StandingCounter | None]:
    """The totals in (system, question) order, and the count they were finished from. While the
    file is as `placed` read it, its standing records are read at their places one at a time
    (unless the columns' read counted them, `pair_count`), with the decisions applied as
    `counted_records` applies them (whole where an audit checks an answer, else light): ten million
    records are counted in the memory of the counts. A file changed since is counted as
    `counted_records` reads it, its records held (its bad lines are named by the caller's read;
    no count is given)."""
    if placed is not None and extent is not None and placed.extent == extent:
        decisions = decisions_beside(decisions_file)
        standing = _standing_at(placed, decisions)
        counter = None if pair_count is None or tags else pair_count.take(decisions, price)
        if counter is None:
            counter = _shared_counter(standing, len(placed), price, processes_for(results))
        return counter.totals(lambda: standing(0, None)), counter
    records = counted_records(results, decisions_file, on_problem=_unnamed)
    held = select_tagged(latest(records).values(), tags)
    held.sort(key=lambda record: record.key)
    return compute_totals(held, price=price), None


def pair_counter(
    results: Path, decisions_file: Path | None, price: Price | None, placed: PlacedRecords
) -> StandingCounter:
    """The count (not finished) of the standing records at `placed`'s places, the decisions of
    `decisions_file` applied: what the viewer holds to count a decision onto (it takes the record
    back and adds it decided, `StandingCounter.subtract`)."""
    standing = _standing_at(placed, decisions_beside(decisions_file))
    return _shared_counter(standing, len(placed), price, processes_for(results))


def _standing_at(
    placed: PlacedRecords, decisions: list[Decision]
) -> Callable[[int, int | None], Iterator[Record]]:
    """The standing records at `placed`'s places (from `start` to `stop`), with `decisions` applied
    as `counted_records` applies them (whole where an audit checks an answer, else light)."""
    decided = decisions_by_pair(decisions)
    whole = reads_whole(decisions)

    def standing(start: int = 0, stop: int | None = None) -> Iterator[Record]:
        decode = record_decoder.decode if whole else LightLines().decode
        return (decided_record(record, decided) for record in placed.each_from_file(decode, start, stop))

    return standing


def _shared_counter(
    standing: Callable[[int, int | None], Iterator[Record]], count: int, price: Price | None, processes: int
) -> StandingCounter:
    """The count of the `count` standing records `standing(start, stop)` gives, their positions
    shared out over `processes` (`line_ranges.map_ranges`), each range counted in a process of its
    own and the counts merged in their order (`StandingCounter.merge`)."""

    def counted(start: int, stop: int) -> StandingCounter:
        counter = StandingCounter(price)
        for record in standing(start, stop):
            counter.add(record)
        return counter

    cuts = [count * part // processes for part in range(processes + 1)]
    counters = map_ranges(counted, [(a, b) for a, b in itertools.pairwise(cuts) if a < b])
    if not counters:
        return StandingCounter(price)
    first, *later = counters
    for counter in later:
        first.merge(counter)
    return first


def _decode(body: bytes | None) -> _KeptTotals | None:
    if body is None:
        return None
    try:
        return _kept_decoder.decode(body)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None


def kept_counter(
    results: Path, decisions_file: Path | None, price: Price | None, tags: Sequence[str] | None
) -> StandingCounter | None:
    """The count the viewer's totals of these inputs were finished from, as the index keeps it
    beside them (`kept_count`) for exactly the file as it is now, else None."""
    variant = _variant("pair", decisions_file, price, tags)
    index = open_index(results) if variant is not None else None
    if index is None or variant is None:
        return None
    body = index.load_exact(_count_variant(variant))
    if body is None:
        return None
    try:
        return counter_of(_count_decoder.decode(body), price)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None


def _count_variant(variant: str) -> str:
    """The name the count a kept value of the viewer's totals was finished from is kept under."""
    return "count-of-" + variant


def _variant(
    order: Order, decisions_file: Path | None, price: Price | None, tags: Sequence[str] | None
) -> str | None:
    """The index's name for the totals of these inputs (`index_names.kept_name`)."""
    kind = "totals" if order == "file" else "viewer-totals"
    return kept_name(kind, [decisions_file], KEPT_FORM, msgspec.to_builtins(price), list(tags or ()))
