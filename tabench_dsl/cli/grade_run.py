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
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING

from ..grading.causes import CauseTally
from ..grading.missing_answers import MissingAnswers
from .batch_flags import grader_factory
from .batch_log import BatchLog, batches_left_running
from .grade_options import GradeOptions
from .grading_flags import notice_line
from .progress import Progress
from .reasoning_flags import with_reasoning_flag
from .slice_flags import stderr_line
from .spend_flags import capped_options

if TYPE_CHECKING:
    from ..core.records import Answer, Record
    from ..grading.answers import AnswerReader
    from ..grading.parallel import WorkerPool
    from ..grading.plan import GradingPlan
    from ..grading.runner import RunStats
    from ..review.run_totals import RunTotals
    from ..store.results import ResultsWriter

#: Bad answer lines whose messages `grade --json` lists (all are counted and named on stderr).
MAX_BAD_LINES_KEPT = 100


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
        plan, total = plan_grading(options)
        progress = Progress(total)
        if pool is not None:
            pool.on_log = progress.log
        bad_lines: list[str] = []
        reader = _answer_reader(options, plan, progress, bad_lines)
        answers = plan.answers(reader, on_skipped=progress.skipped)
        causes = CauseTally()
        batch_log = BatchLog(progress.log, progress.status) if options.batch.enabled else None
        counted = RunTotals()

        def on_record(record: Record) -> None:
            causes.add(record)
            progress.advance(record)
            counted.add(record)

        stats = _write_results(options, plan, pool, answers, progress, on_record, batch_log, counted)
    stats.skipped = plan.skipped  # the done pairs the plan took out (--resume)
    return stats, RunAccount(reader, bad_lines, causes, plan.unanswered, batch_log, total, counted)


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


def plan_grading(options: GradeOptions) -> tuple[GradingPlan, int]:
    """The battery compiled (with `--reasoning-tags`), what the run grades of the answers
    (`grading.plan`), and how many answers the progress bar expects; says on stderr how many
    `--regrade-changed` grades again."""
    from ..grading.plan import GradingPlan
    from ..language.compile_cache import compiled_battery
    from .grade_resume import read_for_resume, scan_ahead

    ahead = scan_ahead(options.out) if options.plan.resume else None  # read while the battery compiles
    try:
        compiled = compiled_battery(options.battery, allow_dirs=options.allow_dirs)
        compiled = with_reasoning_flag(compiled, options.reasoning_tags)
        plan = GradingPlan(
            compiled,
            options.out,
            options.plan,
            answers=list(options.answers),
            first_read=functools.partial(read_for_resume, ahead=ahead),
            scan_ahead=ahead,
        )
    finally:
        if ahead is not None:
            ahead.cancel()  # its results taken, or no longer wanted
    say_regraded(plan)
    selected = plan.selected(
        list(options.answers), system_from=options.system_from, question_from=options.question_from
    )
    return plan, plan.expected(selected)


def say_regraded(plan: GradingPlan) -> None:
    """`--regrade-changed`'s line on stderr: how many done answers are graded again."""
    if plan.regraded is not None:
        print(
            f"--regrade-changed: {plan.regraded.answers} answer(s) of {plan.regraded.questions} question(s) "
            "graded again: their prompt changed since they were graded",
            file=sys.stderr,
        )


def _answer_reader(
    options: GradeOptions, plan: GradingPlan, progress: Progress, bad_lines: list[str]
) -> AnswerReader:
    """The reader of the answers files (`GradingPlan.reader`: --resume's done pairs taken out):
    each bad line said on the progress log, the first `MAX_BAD_LINES_KEPT` kept in `bad_lines` for
    `--json`."""

    def bad_line(problem) -> None:
        if len(bad_lines) < MAX_BAD_LINES_KEPT:
            bad_lines.append(problem.render())
        progress.log(problem.render())

    return plan.reader(
        list(options.answers),
        on_problem=bad_line,
        on_warning=lambda p: progress.log(f"tabench: warning: {p.render()}"),
        system_from=options.system_from,
        question_from=options.question_from,
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
    from ..grading.event_loop import quiet_gc, run_event_loop
    from ..store.results import ResultsWriter

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
        plan.finish(writer, on_record)
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
        on_notice=lambda notice: progress.log(notice_line(notice)),
        grader=grader_factory(options.batch, batch_log),
    ) as grader:
        stats = await grader.run(answers)
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
        on_record=on_record,
        on_notice=lambda notice: progress.log(notice_line(notice)),
    )
