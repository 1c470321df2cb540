"""A results file as `report --html` reads it: every standing record without its texts, and whole
only the answers the page shows.

The page counts every record but shows at most `--max-answers` of them in full. So the standing
records are read as totals reads them (`light_records.iter_light_records`: no answer, reason or
reply text is built), which is all the totals, the charts and the choice of the answers shown
need; then a second pass decodes whole only the lines of the answers shown
(`light_records.iter_records_of`), each given the decision and audit the light read applied. The
page is the one `viewer.run.load_run` gives, byte for byte. Where a light read could tell otherwise
(an audit that checks its answer, an answer shown whose line only the light decoder takes), the
file is read whole as before.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import msgspec

from ..core.errors import UsageError
from ..core.light_records import iter_light_records, iter_records_of
from ..core.records import Decision, Record
from .decisions import StaleDecision, apply_decisions, decisions_path, load_decisions
from .outcomes import latest
from .report import listed_answers
from .slices import select_tagged
from .viewer.run import Run, compile_battery_at, load_run


def report_run(
    results_path: str | Path,
    *,
    max_answers: int,
    battery: str | Path | None = None,
    allow_dirs: Iterable[str | Path] = (),
    tags: Sequence[str] | None = None,
) -> tuple[Run, list[Record]]:
    """The run `load_run` reads (its records light) and the records its page shows in full (read
    whole, `report.listed_answers` of them); raises what `load_run` raises."""
    run = _light_run(Path(results_path), tags)
    listed = None if run is None else _whole(run, listed_answers(run.records, max_answers))
    if run is None or listed is None:
        run = load_run(results_path, tags=tags)
        listed = listed_answers(run.records, max_answers)
    if battery is not None:
        run.compiled = compile_battery_at(battery, allow_dirs=allow_dirs)
        run.battery_path = Path(battery)
    return run, listed


def _light_run(results_path: Path, tags: Sequence[str] | None) -> Run | None:
    """`load_run` of the file, read light; None when its decisions hold an audit of an answer."""
    if not results_path.is_file():
        raise UsageError(f"{results_path}: no such results file")
    dpath = decisions_path(results_path)
    try:
        decisions, failed = load_decisions(dpath), None
    except UsageError as exc:  # raised after the results are read, where `load_run` raises it
        decisions, failed = [], exc
    if any(_checks_answer(decision) for decision in decisions):
        return None
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


def _checks_answer(decision: Decision) -> bool:
    """True for an audit that names the answer it was made on (it is stale if that changed)."""
    return decision.is_audit and isinstance(decision.answer_sha256, str)


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
        whole.append(msgspec.structs.replace(line, decision=light.decision, human_audit=light.human_audit))
    return whole
