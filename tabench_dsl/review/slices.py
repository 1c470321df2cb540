"""Slices of a results file by rubric tag: `--tag` on totals, report and view, and the scores per
tag that totals, the viewer and the report show.

Each record carries its question's tags from the time it was graded (`Record.tags`), so a results
file is sliced without its battery, and a battery edited since cannot move an answer between
slices. A file graded before tags were recorded has none: asking it for a tag is a usage error that
says so, rather than an empty table.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence

import msgspec

from ..core.display import shown
from ..core.errors import UsageError
from ..core.records import Record
from ..store.light_records import LightRecord
from .outcomes import add_counts, count_outcome, outcome, score_interval, score_of

#: Most systems the per-tag table gives a score column each (more would not fit a terminal).
MAX_TAG_COLUMNS = 6


def select_tagged(records: Iterable[Record], tags: Sequence[str] | None) -> list[Record]:
    """The records whose question has any of `tags` (all of them when `tags` is empty or None).

    Raises `UsageError` for a tag no record has, naming it (and saying when no record has any tag)."""
    records = list(records)
    if not tags:
        return records
    wanted = set(tags)
    check_tags(tags, {tag for record in records for tag in record.tags})
    return [record for record in records if wanted.intersection(record.tags)]


def check_tags(tags: Iterable[str], seen: set[str]) -> None:
    """Raise `select_tagged`'s `UsageError` for a tag of `tags` that is not among the tags `seen`
    on the standing records."""
    unknown = sorted(set(tags) - seen)
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


class TagSystem(msgspec.Struct):
    """One system's counts on the questions carrying a tag."""

    system: str
    answers: int = 0
    passed: int = msgspec.field(default=0, name="pass")
    fail: int = 0
    adjudicate: int = 0
    error: int = 0
    score: float | None = None


class TagTotals(msgspec.Struct):
    """Counts for the answers to the questions carrying one tag: overall (with the score's 95%
    Wilson interval) and per system."""

    tag: str
    answers: int = 0
    passed: int = msgspec.field(default=0, name="pass")
    fail: int = 0
    adjudicate: int = 0
    error: int = 0
    score: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    systems: list[TagSystem] = msgspec.field(default_factory=list)


def tag_totals(standing: Iterable[Record]) -> list[TagTotals]:
    """Per tag, sorted: the counts and score of the standing records (decisions applied) whose
    question carries it, overall and per system. An answer counts once under each of its tags;
    the score is the totals' own, pass / (pass + fail + adjudicate)."""
    counter = TagCounter()
    for record in standing:
        counter.add(record)
    return counter.totals()


class TagCounter:
    """`tag_totals` one record at a time (`add`), for a count that streams the records."""

    def __init__(self) -> None:
        self.tags: dict[str, TagTotals] = {}
        self.cells: dict[tuple[str, str], TagSystem] = {}

    def add(self, record: Record | LightRecord, change: int = 1) -> None:
        """Count one standing record under each of its tags (`change` -1: take it back)."""
        if not record.tags:
            return
        verdict = outcome(record)
        for tag in record.tags:
            row = self.tags.setdefault(tag, TagTotals(tag=tag))
            cell = self.cells.setdefault((tag, record.system), TagSystem(system=record.system))
            count_outcome(row, verdict, change)
            count_outcome(cell, verdict, change)

    def merge(self, other: TagCounter) -> None:
        """Add what `other` counted (over a later part of the file), before `totals`."""
        for tag, row in other.tags.items():
            add_counts(self.tags.setdefault(tag, TagTotals(tag=tag)), row)
        for key, cell in other.cells.items():
            add_counts(self.cells.setdefault(key, TagSystem(system=cell.system)), cell)

    def totals(self) -> list[TagTotals]:
        """The tags counted, sorted, their scores and intervals worked out (again at each call)."""
        tags, cells = self.tags, self.cells
        for row in tags.values():
            row.systems = []
        for key in sorted(cells):
            tags[key[0]].systems.append(cells[key])
        scored: list[TagTotals | TagSystem] = [*tags.values(), *cells.values()]
        for item in scored:
            item.score = score_of(item)
        for row in tags.values():
            row.ci_low, row.ci_high = score_interval(row)
        return [tags[tag] for tag in sorted(tags)]


#: The per-tag table's columns in the order they go as the terminal narrows (`table_fit`); the tag,
#: its score and interval and the systems' scores always stay.
TAG_DROP_ORDER = ("answers", "adjud.", "error", "fail", "pass")


def tag_table(totals, limit: int | None = None, width: int | None = None):
    """Scores per tag of a `totals.Totals` as a `rich` table (a column per system when there are
    at most `MAX_TAG_COLUMNS`), or None when no record carries a tag. Names are `display.literal`.
    At most `limit` tags (`useful_rows`: the lowest scores first; None: all). The table fits
    `width` columns (None: every column): where the systems' names do not fit as column headers,
    short labels (S1, S2, ...) head them, with their key under the table."""
    from rich.text import Text

    from ..core.display import literal
    from .outcomes import percent, score_text
    from .table_fit import Column, fits, fitted_table, label_key, short_labels
    from .useful_rows import cut_note, score_first, useful_rows, with_cut_note

    if not totals.tags:
        return None
    names = [s.system for s in totals.systems] if len(totals.systems) <= MAX_TAG_COLUMNS else []
    shown = useful_rows(totals.tags, limit, score_first)
    note = cut_note("tag", len(shown), len(totals.tags))
    by_system = [{cell.system: cell.score for cell in row.systems} for row in shown]
    columns = [
        Column("tag", [literal(row.tag) for row in shown], justify="left", kept=True, fold=True),
        Column("answers", [str(row.answers) for row in shown]),
        Column("pass", [str(row.passed) for row in shown]),
        Column("fail", [str(row.fail) for row in shown]),
        Column("adjud.", [str(row.adjudicate) for row in shown]),
        Column("error", [str(row.error) for row in shown]),
        # with the errors it leaves out, as the per-system table
        Column("score", [score_text(row) for row in shown], kept=True),
        Column(
            "95% CI",
            ["-" if row.ci_low is None else f"{percent(row.ci_low)}-{percent(row.ci_high)}" for row in shown],
            kept=True,
        ),
    ]

    def system_columns(headers: list[str]) -> list[Column]:
        return [
            Column(header, [percent(scores.get(name)) for scores in by_system], kept=True)
            for header, name in zip(headers, names, strict=True)
        ]

    caption: Text | None = None
    every = columns + system_columns([literal(name).plain for name in names])
    if not fits(every, width, TAG_DROP_ORDER):
        labels = short_labels(names)
        every = columns + system_columns([labels[name] for name in names])
        caption = label_key(labels)
    table = fitted_table(
        every,
        width=width,
        drop_order=TAG_DROP_ORDER,
        title="Per tag (an answer counts under each tag of its question)",
        caption=caption,
    )
    return with_cut_note(table, note)


class TagSlice:
    """`--tag`'s slice of the standing records as they stream by: the tags seen on them noted, so
    an unknown tag is refused after the count as `select_tagged` refuses it before."""

    def __init__(self, tags: Sequence[str] | None) -> None:
        self.wanted = set(tags or ())
        self.seen: set[str] = set()

    def takes(self, record: Record | LightRecord) -> bool:
        if not self.wanted:
            return True
        self.seen.update(record.tags)
        return not self.wanted.isdisjoint(record.tags)

    def select(self, standing: Callable[[], Iterable[Record]]) -> Iterator[Record]:
        return (record for record in standing() if self.takes(record))

    def check(self) -> None:
        if self.wanted:
            check_tags(self.wanted, self.seen)
