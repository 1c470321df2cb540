"""A results file as `report --html` reads it: its totals and the answers it shows chosen as the
records stream by, and whole only the answers the page shows.

The page counts every record but shows at most `--max-answers` of them in full. So nothing is held
per record: the totals are `totals`' own (`totals_of`), the answers shown
are chosen as the records stream by (`streamed_listing`, without their texts, each with its line's
offset), and only the lines of the answers shown are read again, whole (`records_at`), each given
the decision and audit the light read applied. A file that changed between these reads (a grading
appending) is read again. The page is the one `viewer.run.load_run` gives, byte for byte. Where a
streamed read could tell otherwise (an audit that checks its answer, an answer shown whose line
only the light decoder takes, `--max-answers 0`, which shows every answer) the standing records
are held, read light or whole as before.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import msgspec

from ..core.errors import UsageError
from ..core.price import Price
from ..core.records import Decision, Record
from ..store.decisions import decisions_path, load_decisions
from ..store.light_records import iter_light_records, iter_records_of
from ..store.records_at import records_at
from ..store.results_index import measure
from .counted_records import reads_whole
from .decisions import StaleDecision, apply_decisions
from .last_records import ResultsChanged
from .outcomes import latest
from .report import listed_answers
from .slices import select_tagged
from .streamed_listing import listing_beside, streamed_listing
from .totals import Totals
from .totals_of import totals_of
from .viewer.run import Run, compile_battery_at, load_run

#: Streamed reads tried before the file is read whole (each is tried again when the file changed).
STREAM_TRIES = 2


def report_run(
    results_path: str | Path,
    *,
    max_answers: int,
    battery: str | Path | None = None,
    allow_dirs: Iterable[str | Path] = (),
    tags: Sequence[str] | None = None,
    price: Price | None = None,
) -> tuple[Run, list[Record], Totals | None]:
    """The run `load_run` reads, the records its page shows in full (read whole,
    `report.listed_answers` of them) and, when the records streamed by and the run holds none of
    them, its totals at `price` (`streamed`); raises what `load_run` raises."""
    path = Path(results_path)
    read = _streamed(path, tags, max_answers, price) if max_answers >= 1 else None
    if read is not None:
        run, listed, totals = read
    else:
        (run, listed), totals = _held(path, tags, max_answers), None
    if battery is not None:
        run.compiled = compile_battery_at(battery, allow_dirs=allow_dirs)
        run.battery_path = Path(battery)
    return run, listed, totals


def _held(path: Path, tags: Sequence[str] | None, max_answers: int) -> tuple[Run, list[Record]]:
    """The run with its standing records held (light where they can be) and the answers shown."""
    light = _light_run(path, tags)
    listed = None if light is None else _whole(light, listed_answers(light.records, max_answers))
    if light is not None and listed is not None:
        return light, listed
    run = load_run(path, tags=tags)
    return run, listed_answers(run.records, max_answers)


def _streamed(
    path: Path, tags: Sequence[str] | None, max_answers: int, price: Price | None
) -> tuple[Run, list[Record], Totals] | None:
    """The run with no records, the answers shown (whole) and the totals, the totals as every
    command has them (`totals_of`: kept in the index, else counted as the records stream by) and
    the answers shown chosen as they stream by (`streamed_listing`), so a page of ten million
    records never holds them; None where the file is read as before: decisions holding an audit
    of an answer or that cannot be read (that read says what is wrong, in its order), no standing
    record (then that read says why), a file changed between reads, an answer shown whose line
    only the light decoder takes."""
    found = _decisions(path)
    if found is None or found[2] is not None:
        return None
    dpath, decisions, _ = found
    for _ in range(STREAM_TRIES):  # a file growing meanwhile (a grading appending) is read again
        read = _stream(path, dpath, decisions, tags, max_answers, price)
        if read is not None:
            return read
    return None


def _stream(
    path: Path,
    dpath: Path,
    decisions: list[Decision],
    tags: Sequence[str] | None,
    max_answers: int,
    price: Price | None,
) -> tuple[Run, list[Record], Totals] | None:
    """One streamed read of `_streamed`'s; None when the file changed during it (or as there)."""
    problems: list[str] = []
    before = measure(path)
    try:
        # a file with no index is decoded once: its totals' first read chooses the answers shown too
        beside = listing_beside(decisions, tags=tags, limit=max_answers)
        totals = totals_of(path, dpath, price=price, tags=tags, on_problem=problems.append, beside=beside)
        if not totals.records:
            return None
        listed, stale = streamed_listing(path, decisions, tags=tags, limit=max_answers, beside=beside)
    except ResultsChanged:
        return None
    if before is None or measure(path) != before:  # the totals and the answers shown of one file
        return None
    run = Run(path, dpath, [], problems, stale)
    whole = _whole_at(run, listed)
    return None if whole is None else (run, whole, totals)


def _decisions(path: Path) -> tuple[Path, list[Decision], UsageError | None] | None:
    """The decisions file's path, its decisions and the error reading it gave (raised after the
    results are read, where `load_run` raises it); None when they hold an audit of an answer (the
    records are then read whole). A missing results file is a `UsageError`."""
    if not path.is_file():
        raise UsageError(f"{path}: no such results file")
    dpath = decisions_path(path)
    try:
        decisions, failed = load_decisions(dpath), None
    except UsageError as exc:
        decisions, failed = [], exc
    if reads_whole(decisions):
        return None
    return dpath, decisions, failed


def _light_run(results_path: Path, tags: Sequence[str] | None) -> Run | None:
    """`load_run` of the file, read light; None when its decisions hold an audit of an answer."""
    found = _decisions(results_path)
    if found is None:
        return None
    dpath, decisions, failed = found
    problems: list[str] = []
    standing = latest(iter_light_records(results_path, on_problem=problems.append))
    if not standing and problems:
        raise UsageError(f"{problems[0]} (is this a results file written by `tabench grade`?)")
    if failed is not None:
        raise failed
    records = list(standing.values())
    del standing
    stale: list[StaleDecision] = []
    if decisions:
        _apply(records, decisions, stale)
    records = select_tagged(records, tags)
    records.sort(key=lambda r: r.key)
    return Run(results_path, dpath, records, problems, stale)


def _apply(records: list[Record], decisions: list[Decision], stale: list[StaleDecision]) -> None:
    """`apply_decisions` on `records` in place, given only the records the decisions name: what it
    makes of them is the same, without an index of a million records."""
    named = {(decision.system, decision.question) for decision in decisions}
    at = [i for i, record in enumerate(records) if record.key in named]
    applied = apply_decisions([records[i] for i in at], decisions, stale=stale)
    for i, record in zip(at, applied, strict=True):
        records[i] = record


def _whole(run: Run, listed: list[Record]) -> list[Record] | None:
    """`listed` read whole from the results, each with the decision and audit set on it; None when
    one has no line the whole decoder takes."""
    found: dict[tuple[str, str], Record | None] = {}
    for record in iter_records_of(run.results_path, {record.key for record in listed}):
        if isinstance(record, tuple):  # a line the light read took and a whole read does not
            found[record] = None
        else:
            found[record.key] = record  # the last stands
    whole = []
    for light in listed:
        line = found.get(light.key)
        if line is None or line.verdict != light.verdict:
            return None
        whole.append(_decided_as(line, light))
    return whole


def _whole_at(run: Run, listed: list[tuple[Record, int]]) -> list[Record] | None:
    """`_whole` of the records `listed`, each read at the offset of its line (its pair's last,
    which a whole read of the file would find last): None when one holds no whole record of that
    pair and verdict."""
    found = records_at(run.results_path, [at for _, at in listed])
    whole = []
    for light, at in listed:
        line = found[at]
        if line is None or line.key != light.key or line.verdict != light.verdict:
            return None
        whole.append(_decided_as(line, light))
    return whole


def _decided_as(line: Record, light: Record) -> Record:
    """The record of `light`'s line read whole, with the decision and audits set on `light`."""
    human = {"human_audit": light.human_audit, "reviewer_audits": light.reviewer_audits}
    return msgspec.structs.replace(line, decision=light.decision, **human)
