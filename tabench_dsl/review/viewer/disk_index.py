"""The viewer's index over a results file of any size: the records stay in the file.

`DiskIndex` answers every request `Index` answers, with the same JSON, but holds no record whole
in memory beyond a page: the list's filters run over integer columns (`columns.Table`, kept in the
index beside the results file by `column_store`), a page's rows and a detail are decoded from
their lines (`disk_records.RecordsOnDisk`), the totals come from the index (`totals_of`), and
the decisions file is overlaid at start and on each decision. The text search `q` is the one
filter that reads texts: it reads again the lines of the records the other filters left.

At 1,000,000 records (bench/scale_bench.py `--only view`) the page's first requests are answered
about 0.6 s after start in under 150 MB, where `load_run` decoded every record whole (~20 s,
~2.3 GB); the first view of a file builds the columns and counts the totals on the way
(`column_read`). A later one loads only the pages of the columns its requests read
(`column_pages`), and counts nothing for the filters' choices or the answers awaiting a decision
(kept with the columns): at a million records 0.3 s in 55 MB on a quiet machine; at ten million
(one run, on a machine loaded to 2.6 times its quiet msgspec pass) a first view in 714 MB, a later
one in 1.2 s and 157 MB (was 3.4 s and 0.7 GB), a decision 0.66 s. A decision
is counted onto the count the totals were finished from (`StandingCounter.subtract`, then
`add`): the first read's, or the one kept in the index beside the totals (`kept_count`). What
still reads the whole file: `q` (a few seconds at a million), and the totals after a person's
blind audit, or of a run with a panel or repeats, which are counted again.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import msgspec

from ...core.errors import UsageError
from ...core.price import Price
from ...core.records import Decision, Record
from ...store.decisions import decisions_path, load_decisions
from ..audit import DECIDED, draw_audit_sample
from ..decisions import apply_decisions
from ..slices import check_tags
from ..totals import StandingCounter, Totals
from ..totals_of import PairCount, kept_counter, pair_counter, totals_of
from .column_store import standing_columns
from .columns import Table
from .disk_records import Positions, RecordsOnDisk
from .queries import Filters, Index
from .run import Run, compile_battery_at


class DiskIndex(Index):
    """`Index` with its records read from the results file (module docstring)."""

    def __init__(
        self,
        run: Run,
        records: RecordsOnDisk,
        *,
        reviewer: str | None,
        tags: Sequence[str] | None,
        state: tuple[_State, _State],
        pair_count: PairCount | None = None,
    ) -> None:  # `Index.__init__` is not called: it would index every record in memory
        self.run = run
        self.reviewer = reviewer
        self.compare = None
        self.other = {}
        self.records = records
        self.position = Positions(records.table)
        self.tags = tags
        self._cache: tuple[Filters, Sequence[int]] | None = None
        self._totals: Totals | None = None
        self._choices: dict[str, list[str]] | None = None
        #: The results file before its columns were read and the decisions file before its
        #: decisions were (`_file_state`); the second then as this index's last decision left it.
        self._state = state
        #: The totals counted as the columns were first read, if they were (`totals_of.PairCount`).
        self._pair_count = pair_count
        #: The count the totals were finished from, which decisions are counted onto (`counter`).
        self._counter: StandingCounter | None = None

    @property
    def table(self) -> Table:
        assert isinstance(self.records, RecordsOnDisk)
        return self.records.table

    def totals(self) -> Totals:
        if self._totals is None:
            run = self.run
            assert isinstance(self.records, RecordsOnDisk)
            self._totals = totals_of(
                run.results_path,
                run.decisions_path,
                price=run.price,
                tags=self.tags,
                order="pair",
                placed=self.records,
                pair_count=self._pair_count,
            )
            self._counter = None if self._pair_count is None else self._pair_count.finished
        return self._totals

    def counter(self) -> StandingCounter:
        """The count of the standing records as this index holds them: the one the totals were
        finished from (`totals_of.PairCount.finished`, or kept in the index beside them:
        `totals_of.kept_counter`), else counted now from the columns' places (after a change to
        the file or the decisions)."""
        run, records = self.run, self.records
        assert isinstance(records, RecordsOnDisk)
        if self._counter is None:
            self._counter = kept_counter(run.results_path, run.decisions_path, run.price, self.tags)
        if self._counter is None:
            self._counter = pair_counter(run.results_path, run.decisions_path, run.price, records)
        return self._counter

    def decide(
        self, system: str, question: str, verdict: str, *, note: str = "", prompt_sha256: str | None = None
    ) -> Record:
        """`Index.decide`, the totals then counted from the count they were finished from, the
        record taken back and added decided (`StandingCounter.subtract`), rather than from the
        file, where they can be: while the results file is as it was when the viewer started and
        the decisions file as this index left it (a grading appending to the one, or another
        viewer deciding into the other, makes them counted again)."""
        totals = self._totals
        before = self.find(system, question)
        run = self.run
        unchanged = (_file_state(run.results_path), _file_state(run.decisions_path)) == self._state
        counter = self.counter() if totals is not None and countable(totals) and unchanged else None
        updated = super().decide(system, question, verdict, note=note, prompt_sha256=prompt_sha256)
        if unchanged:  # the decisions file holds what this index holds: its own decision added
            self._state = (self._state[0], _file_state(run.decisions_path))
        if counter is not None:
            counter.subtract(before)
            counter.add(updated)
            self._totals = counter.totals(self._audited)
        else:
            self._counter = None  # counted again, this decision in it, when next needed
        return updated

    def record_audit(self, system: str, question: str, verdict: str, *, note: str = "") -> Record:
        """`Index.record_audit`: the totals, which now hold the audit, are counted again."""
        self._counter = None
        return super().record_audit(system, question, verdict, note=note)

    def _audited(self) -> Iterator[Record]:
        """The standing records a T1 audit checked, in order: all `StandingCounter.totals` reads
        again of the totals a decision can be counted onto (`countable`)."""
        table = self.table
        audited = table.codes_where("audit", lambda verdict: verdict != "")
        for position in table.narrowed(range(len(table)), "audit", audited):
            yield self.records[position]

    def awaiting(self) -> int:
        """`Index.awaiting` from the columns: counted as they were read, kept up at each decision
        (`columns.Table.set_code`)."""
        return self.table.awaiting

    def filter_choices(self) -> dict[str, list[str]]:
        table = self.table
        return {
            "systems": table.used("system"),
            "questions": table.used("question"),
            "facets": sorted({name for seen in table.used("facets") for name in seen}),
            "causes": sorted(cause for cause in table.used("cause") if cause),
            "tags": sorted({tag for tags in table.used("tags") for tag in tags}),
        }

    def audit_sample(self, n: int, seed: int) -> list[Record]:
        """As `Index.audit_sample` draws, from the columns: only the records drawn are read."""
        table = self.table
        decided = table.codes_where("verdict", lambda verdict: verdict in DECIDED)
        undecided = table.codes_where("human", lambda human: human == "")
        positions = table.narrowed(table.narrowed(range(len(table)), "verdict", decided), "human", undecided)
        assert isinstance(self.records, RecordsOnDisk)
        audited = {key for key, held in self.records.overlay.items() if held.audited_by_human is not None}
        skipped = {self.position[key] for key in audited}
        systems, questions, verdicts = (table.table(field) for field in ("system", "question", "verdict"))
        columns = [table.columns[field].whole() for field in ("system", "question", "verdict")]
        candidates = (
            _Candidate(systems[columns[0][i]], questions[columns[1][i]], verdicts[columns[2][i]])
            for i in positions
            if i not in skipped
        )
        drawn = draw_audit_sample(candidates, n, seed=seed)
        return [self.find(candidate.system, candidate.question) for candidate in drawn]

    def matching(self, f: Filters) -> Sequence[int]:
        """Positions of the records that pass every filter, in index order (as `Index.matching`);
        every position (a `range`, no list of them) when no filter is set."""
        if self._cache is not None and self._cache[0] == f:
            return self._cache[1]
        table = self.table
        hits: Sequence[int] = range(len(table))
        for field, wanted in _tests(f):
            hits = table.narrowed(hits, field, table.codes_where(field, wanted))
        if f.compared and f.compared != "missing":  # no second grading: every pair is "missing"
            hits = []
        if f.q:
            assert isinstance(self.records, RecordsOnDisk)
            hits = self.records.matching_text(list(hits), f.q.casefold())
        out = hits if isinstance(hits, range) else list(hits)
        self._cache = (f, out)
        return out


class _Candidate(msgspec.Struct, frozen=True, gc=False):
    """A decided, undecided-by-a-person, unaudited record as the audit draw reads it."""

    system: str
    question: str
    verdict: str
    decision: Decision | None = None
    audited_by_human: Decision | None = None


def _tests(f: Filters) -> Iterable[tuple[str, object]]:
    """(field, test of a value of its table) for each filter `f` sets, as `Index.matching` reads it."""
    for field in ("verdict", "tier", "cause", "system", "question"):
        value = getattr(f, field)
        if value:
            yield field, value.__eq__
    if f.facet:
        yield "facets", lambda seen: f.facet in seen
    if f.human in ("decided", "undecided"):
        yield "human", (lambda human: human != "") if f.human == "decided" else (lambda human: human == "")
    if f.audit:
        audited = {"agree": ("pass",), "disagree": ("fail",)}.get(f.audit)
        yield "audit", (lambda verdict: verdict in audited) if audited else (lambda verdict: verdict != "")
    if f.tag:
        yield "tags", lambda tags: f.tag in tags


_State = tuple[int, int, int] | None


def countable(totals: Totals) -> bool:
    """Whether a decision can be counted onto the count `totals` were finished from: not when they
    hold what only the records read whole count (a panel's agreement, repeats' stability, people's
    blind audits), which are counted again. A decision settles an adjudicated answer only, so T1's
    audit (of T1 passes) stays what it was."""
    if totals.panel is not None or totals.stability is not msgspec.UNSET:
        return False
    if totals.usage.audit is not msgspec.UNSET or totals.usage.validated_score is not msgspec.UNSET:
        return False
    return all(s.audit is msgspec.UNSET and s.validated_score is msgspec.UNSET for s in totals.systems)


def _file_state(path: Path) -> _State:
    """The results file's size, modification time and inode: any write to it changes them."""
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_size, info.st_mtime_ns, info.st_ino


def load_disk_index(
    results_path: str | Path,
    *,
    battery: str | Path | None = None,
    allow_dirs: Iterable[str | Path] = (),
    tags: Sequence[str] | None = None,
    price: Price | None = None,
    reviewer: str | None = None,
) -> DiskIndex:
    """The `DiskIndex` of a results file, as `Index(load_run(...))` would index it (same errors:
    a missing file, a file with no record, an unknown tag, a bad battery)."""
    results_path = Path(results_path)
    if not results_path.is_file():
        raise UsageError(f"{results_path}: no such results file")
    state = _file_state(results_path)
    dpath = decisions_path(results_path)
    # A first read of the columns decodes every standing record: the totals are counted on the way.
    pair_count = PairCount(dpath, price)
    table = standing_columns(results_path, pair_count)
    state_of_decisions = _file_state(dpath)  # before they are read, as the results are
    problems = [f"{results_path}:{problem}" for problem in table.problems]
    if not len(table) and problems:
        raise UsageError(f"{problems[0]} (is this a results file written by `tabench grade`?)")
    records = RecordsOnDisk(results_path, table, {})
    run = Run(results_path, dpath, [], problems, price=price)  # its records: `DiskIndex.records`
    _overlay_decisions(records, load_decisions(dpath), run)
    if tags:
        check_tags(tags, {tag for tagged in table.used("tags") for tag in tagged})
        chosen = table.codes_where("tags", lambda carried: bool(set(tags).intersection(carried)))
        table.kept(table.narrowed(range(len(table)), "tags", chosen))
    if battery is not None:
        run.compiled = compile_battery_at(battery, allow_dirs=allow_dirs)
        run.battery_path = Path(battery)
    return DiskIndex(
        run,
        records,
        reviewer=reviewer,
        tags=tags,
        state=(state, state_of_decisions),
        pair_count=pair_count,
    )


def _overlay_decisions(records: RecordsOnDisk, decisions, run: Run) -> None:
    """Apply the decisions file to the records it names (read whole from the file), as `load_run`
    applies it to every record; the stale decisions go to `run.stale`."""
    positions = Positions(records.table)
    named = {(decision.system, decision.question) for decision in decisions}
    found = sorted(position for key in named if (position := positions.get(key)) is not None)
    for record in apply_decisions([records[position] for position in found], decisions, stale=run.stale):
        records[positions[record.key]] = record
