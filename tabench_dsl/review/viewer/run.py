"""A graded run as the viewer, the report and `tabench adjudicate` see it.

`load_run` reads a results file once: the standing record of every (system, question) pair, with the
human decisions from `RESULTS.decisions.jsonl` applied, plus the problems met on the way (bad
lines, stale decisions). With a battery it also compiles the prompts, so each answer can be shown
with the exact SYSTEM, USER and STERN text its judge saw, and a drift warning where the battery's
prompt no longer hashes to the one recorded.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ...core.compiled import CompiledBattery
from ...core.errors import UsageError
from ...core.price import Price
from ...core.records import Record
from ...store.decisions import decisions_path, load_decisions
from ..decisions import StaleDecision, apply_decisions
from ..outcomes import latest
from ..slices import select_tagged


@dataclass
class Run:
    """The standing records of one results file, decisions applied, sorted by (system, question).

    `records` is empty in the run of a `disk_index.DiskIndex`: its records stay in the file."""

    results_path: Path
    decisions_path: Path
    records: list[Record]
    #: `path:line: message` for every line of the results file that was not a record.
    problems: list[str] = field(default_factory=list)
    stale: list[StaleDecision] = field(default_factory=list)
    compiled: CompiledBattery | None = None
    battery_path: Path | None = None
    #: The reader's price (`--price`): totals price every judge call at it, over the records' own.
    price: Price | None = None


@dataclass(frozen=True)
class Prompts:
    """The prompts one answer was judged with, as far as the battery can tell.

    `system` is None without a battery or when the battery lacks the question; `drift` explains why
    the text shown may differ from what the judge saw.
    """

    system: str | None
    user: str | None
    stern: str | None
    recorded_sha256: str
    battery_sha256: str | None
    drift: str | None


def load_run(
    results_path: str | Path,
    *,
    battery: str | Path | None = None,
    allow_dirs: Iterable[str | Path] = (),
    tags: Sequence[str] | None = None,
) -> Run:
    """Read a results file (and its decisions, and optionally compile a battery) into a `Run`.

    `allow_dirs`: folders outside the battery it may read (`--allow-dir`); `tags` keeps only the
    answers to questions with any of these tags (`--tag`, `slices.select_tagged`). Raises
    `UsageError` for a missing results file or an unknown tag; a bad battery raises its `SpecErrors`.
    """
    from ...store.results import iter_records

    results_path = Path(results_path)
    if not results_path.is_file():
        raise UsageError(f"{results_path}: no such results file")
    problems: list[str] = []
    standing = latest(iter_records(results_path, on_problem=problems.append))
    if not standing and problems:
        raise UsageError(f"{problems[0]} (is this a results file written by `tabench grade`?)")
    dpath = decisions_path(results_path)
    stale: list[StaleDecision] = []
    records = select_tagged(apply_decisions(standing.values(), load_decisions(dpath), stale=stale), tags)
    records.sort(key=lambda r: r.key)
    run = Run(results_path, dpath, records, problems, stale)
    if battery is not None:
        run.compiled = compile_battery_at(battery, allow_dirs=allow_dirs)
        run.battery_path = Path(battery)
    return run


def compile_battery_at(path: str | Path, *, allow_dirs: Iterable[str | Path] = ()) -> CompiledBattery:
    """Load and compile the battery at `path` (a folder or its `battery.yaml`)."""
    from ...language.battery import load_battery
    from ...language.render import compile_battery

    if not Path(path).exists():
        raise UsageError(f"{path}: no such battery")
    return compile_battery(load_battery(path, allow_dirs=allow_dirs))


def prompts_for(record: Record, compiled: CompiledBattery | None) -> Prompts:
    """The SYSTEM / USER / STERN text of `record` from the compiled battery, with any drift named."""
    if compiled is None:
        return Prompts(
            None,
            None,
            None,
            record.prompt_sha256,
            None,
            "no battery given (--battery): only the prompt's sha256 is known",
        )
    question = compiled.questions.get(record.question)
    if question is None:
        return Prompts(
            None,
            None,
            None,
            record.prompt_sha256,
            None,
            f"battery {compiled.name!r} has no question {record.question!r}",
        )
    drift = None
    if question.sha256 != record.prompt_sha256:
        drift = (
            "the battery's SYSTEM prompt differs from the one this answer was graded with "
            "(sha256 mismatch): the text shown is today's, not the judge's"
        )
    elif record.battery and record.battery != compiled.name:
        drift = f"the record names battery {record.battery!r}, the battery given is {compiled.name!r}"
    answer = record.graded_answer  # the judge read the final answer, its reasoning cut
    stern = compiled.stern.fill(answer) if any(a.kind == "stern" for a in record.all_attempts()) else None
    return Prompts(
        question.system,
        compiled.user.fill(answer),
        stern,
        record.prompt_sha256,
        question.sha256,
        drift,
    )
