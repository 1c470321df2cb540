"""The grading a `grade` command line asks for, from its `GradeOptions` to the records written:
the worker processes (`--workers`), the battery compiled and the slice chosen, the answers read,
the results file opened, the event loop run, the missing answers recorded.

It says what happens as it goes (the progress bar, bad answer lines, batch states) and returns the
run's stats with what it met (`RunAccount`); `grade_report` prints the ending.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import itertools
from collections.abc import Callable, Iterable, Iterator, Set
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from ..core.display import shown
from ..core.errors import UsageError
from ..grading.causes import CauseTally
from .answer_slice import AnswerSlice, answer_slice, count_selected, stderr_line
from .batch_flags import grader_factory
from .batch_log import BatchLog, batches_left_running
from .grade_options import GradeOptions
from .grading_flags import notice_line
from .missing_answers import MissingAnswers
from .progress import Progress
from .reasoning_flags import with_reasoning_flag
from .regrade import without_changed
from .resume_skip import ResumeSkip
from .spend_flags import capped_options

if TYPE_CHECKING:
    from ..core.compiled import CompiledBattery
    from ..core.records import Answer, Record
    from ..core.results import ResultsWriter
    from ..grading.answers import AnswerReader
    from ..grading.parallel import WorkerPool
    from ..grading.runner import RunStats
    from ..review.run_totals import RunTotals

#: Bad answer lines whose messages `grade --json` lists (all are counted and named on stderr).
MAX_BAD_LINES_KEPT = 100


@dataclasses.dataclass(frozen=True)
class GradingPlan:
    """What one run grades, worked out before the first answer is read: the compiled battery (with
    `--reasoning-tags`), the slice, the account of unanswered questions, the pairs skipped
    (`--resume`, less `--regrade-changed`'s) and how many answers the progress bar expects."""

    compiled: CompiledBattery
    chosen: AnswerSlice
    unanswered: MissingAnswers
    skip: Set[tuple[str, str]]
    total: int


@dataclasses.dataclass(frozen=True)
class RunAccount:
    """What one `grade` run met beside its stats, for its report: the answers reader (its bad lines
    and unreadable logs), the first bad lines' messages, the causes of errors and adjudicates, the
    unanswered questions, the batch log (None without --batch), how many answers there were, and
    the records written, counted (`run_totals`: the totals without a read of the file)."""

    reader: AnswerReader
    bad_lines: list[str]
    causes: CauseTally
    unanswered: MissingAnswers
    batch_log: BatchLog | None
    total: int
    counted: RunTotals


def grade_answers(options: GradeOptions) -> tuple[RunStats, RunAccount]:
    """Grade the answers `options` name into `options.out`; the stats and what the run met."""
    from ..review.run_totals import RunTotals

    with worker_pool(options) as pool:
        plan = plan_grading(options)
        progress = Progress(plan.total)
        if pool is not None:
            pool.on_log = progress.log
        bad_lines: list[str] = []
        done = ResumeSkip(plan.skip, plan.chosen, plan.unanswered.coverage, progress.skipped)
        reader = _answer_reader(options, plan.compiled, progress, bad_lines, done if plan.skip else None)
        answers = plan.chosen.select(plan.unanswered.watch(done.told(reader)), plan.skip)
        causes = CauseTally()
        batch_log = BatchLog(progress.log, progress.status) if options.batch.enabled else None
        counted = RunTotals()

        def on_record(record: Record) -> None:
            causes.add(record)
            progress.advance(record)
            counted.add(record)

        stats = _write_results(options, plan, pool, answers, progress, on_record, batch_log, counted)
    stats.skipped += done.count  # taken out by the reader, before the grader's own skip test
    return stats, RunAccount(reader, bad_lines, causes, plan.unanswered, batch_log, plan.total, counted)


@contextlib.contextmanager
def worker_pool(options: GradeOptions) -> Iterator[WorkerPool | None]:
    """The `--workers` processes (None for one), started before the battery is compiled so their
    start-up overlaps this process's, and reaped on the way out. Both happen whole: an interrupt
    half-way would leave a process nobody reaps."""
    from ..core.interrupts import deferred_interrupts

    if options.workers <= 1:
        yield None
        return
    from ..grading.parallel import WorkerPool

    pool = WorkerPool(options.workers, options.grading.concurrency, on_log=stderr_line)
    try:
        with deferred_interrupts():
            pool.start()
        yield pool
    finally:
        with deferred_interrupts():
            pool.close()


def plan_grading(options: GradeOptions) -> GradingPlan:
    """The battery compiled, the slice checked against it, and the pairs `--resume` skips."""
    from ..core.standing_verdicts import done_pairs
    from ..grading.answer_counts import count_answers
    from ..language.compile_cache import compiled_battery

    out = options.out
    compiled = compiled_battery(options.battery, allow_dirs=options.allow_dirs)
    compiled = with_reasoning_flag(compiled, options.reasoning_tags)
    chosen = answer_slice(options.slice, compiled.questions, missing_as_fail=options.missing_as_fail)
    if options.resume:
        refuse_another_battery(out, compiled.name)
    unanswered = MissingAnswers(chosen, compiled, out, record=options.missing_as_fail, resume=options.resume)
    skip = unanswered.skip(done_pairs(out)) if options.resume else set()
    if options.regrade_changed:
        skip = without_changed(out, compiled, skip)
    if chosen.filters:  # progress counts the answers selected; a --system no answer is from is an error
        total = count_selected(_quiet_reader(options, compiled), chosen, compiled.questions)
    else:
        total = count_answers(list(options.answers))
    if chosen.limit is not None:  # the answers --resume skips pass the limit and count as done
        total = min(total, chosen.limit + len(skip))
    return GradingPlan(compiled, chosen, unanswered, skip, total)


class _RecordBattery(msgspec.Struct):
    """The battery a result record names (the other fields are not decoded)."""

    system: str
    question: str
    battery: str = ""


#: How many lines of a results file `refuse_another_battery` looks at for a record.
_LINES_LOOKED_AT = 64


def refuse_another_battery(out: Path, battery: str) -> None:
    """`UsageError` when `--resume` would append to `out` the records of another battery than the
    one its records name: one file of two batteries gives one totals table that mixes them, and the
    default `--out results.jsonl` makes that easy. Read before the index or the file is written."""
    from ..core.jsonl import BadLine, decode_line

    if not out.is_file():
        return
    decoder = msgspec.json.Decoder(_RecordBattery)
    with open(out, "rb") as lines:
        for line in itertools.islice(lines, _LINES_LOOKED_AT):
            try:
                named = decode_line(decoder, line).battery
            except BadLine:
                continue
            if named and named != battery:
                raise UsageError(
                    f"{shown(str(out))} holds the results of battery {shown(named)}, not {shown(battery)}: "
                    "--resume would mix the two in one file; give this grading another --out"
                )
            return


def _quiet_reader(options: GradeOptions, compiled: CompiledBattery) -> AnswerReader:
    """A reader of the answers files that reports nothing: the grading's own reader says each bad
    line once."""
    from ..grading.answers import AnswerReader

    return AnswerReader(
        list(options.answers),
        compiled.questions,
        system_from=options.system_from,
        question_from=options.question_from,
    )


def _answer_reader(
    options: GradeOptions,
    compiled: CompiledBattery,
    progress: Progress,
    bad_lines: list[str],
    done: ResumeSkip | None,
) -> AnswerReader:
    """The reader of the answers files: each bad line said on the progress log, the first
    `MAX_BAD_LINES_KEPT` kept in `bad_lines` for `--json`; `done` takes out --resume's done pairs."""
    from ..grading.answers import AnswerReader

    def bad_line(problem) -> None:
        if len(bad_lines) < MAX_BAD_LINES_KEPT:
            bad_lines.append(problem.render())
        progress.log(problem.render())

    return AnswerReader(
        list(options.answers),
        compiled.questions,
        on_problem=bad_line,
        on_warning=lambda p: progress.log(f"tabench: warning: {p.render()}"),
        system_from=options.system_from,
        question_from=options.question_from,
        passed_over=None if done is None else done.passed_over,
        passed_over_all=None if done is None else done.passed_over_all,
        pair_numbers=None if done is None else done.numbers,
        pair_cells=None if done is None else done.cells,
        keep_scans=done is not None,
    )


def _write_results(
    options: GradeOptions,
    plan: GradingPlan,
    pool: WorkerPool | None,
    answers: Iterable[Answer],
    progress: Progress,
    on_record: Callable[[Record], None],
    batch_log: BatchLog | None,
    counted: RunTotals,
) -> RunStats:
    """Open the results file, grade `answers` into it (here, or in the `pool`), then record the
    missing answers; `counted` learns what the file held and how many records were written. A
    results file this run created and wrote nothing to is removed."""
    from ..core.results import ResultsWriter
    from ..grading.event_loop import quiet_gc, run_event_loop

    out = options.out
    created = not out.exists()
    writer = None
    try:
        writer = ResultsWriter(out)
        counted.follow(writer.opened_size)
        if writer.repaired:
            progress.log(f"{out}: cut a torn last line ({writer.repaired} bytes) left by an earlier crash")
        if pool is None:
            grading = functools.partial(
                _grade, options, plan, answers, writer, progress, on_record, batch_log
            )
        else:
            grading = functools.partial(
                _grade_in_workers, pool, options, plan, answers, writer, progress, on_record
            )
        with quiet_gc(), batches_left_running(options.batch, out):
            stats = run_event_loop(grading)
        plan.unanswered.finish(writer, on_record)
    finally:
        progress.close()
        if writer is not None:
            writer.close()
            counted.written, counted.end = writer.count, writer.end
            if created and writer.count == 0:
                out.unlink(missing_ok=True)  # e.g. a judge that could not be configured
    return stats


async def _grade(
    options: GradeOptions,
    plan: GradingPlan,
    answers: Iterable[Answer],
    writer: ResultsWriter,
    progress: Progress,
    on_record: Callable[[Record], None],
    batch_log: BatchLog | None,
) -> RunStats:
    from ..grading.session import open_grader

    async with open_grader(
        plan.compiled,
        capped_options(options.grading, options.out),
        writer=writer,
        on_record=on_record,
        on_skip=progress.skipped,
        on_notice=lambda notice: progress.log(notice_line(notice)),
        grader=grader_factory(options.batch, batch_log),
    ) as grader:
        stats = await grader.run(answers, skip=plan.skip)
        if batch_log is not None:
            batch_log.finished(grader)
        return stats


async def _grade_in_workers(
    pool: WorkerPool,
    options: GradeOptions,
    plan: GradingPlan,
    answers: Iterable[Answer],
    writer: ResultsWriter,
    progress: Progress,
    on_record: Callable[[Record], None],
) -> RunStats:
    from ..grading.parallel import WorkerConfig

    return await pool.run(
        WorkerConfig(battery=plan.compiled, options=options.grading),
        answers,
        writer=writer,
        skip=plan.skip,
        on_record=on_record,
        on_skip=progress.skipped,
        on_notice=lambda notice: progress.log(notice_line(notice)),
    )
