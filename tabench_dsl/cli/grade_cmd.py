"""`tabench grade BATTERY --answers ANSWERS.jsonl ...`: grade answers, append results, print totals.

Decided where the spec is silent:
- `--out` defaults to `results.jsonl` in the working folder. An existing non-empty results file is
  only appended to with `--resume` (which skips the pairs already done); without it the command
  stops with a usage error rather than mixing two gradings in one file.
- `--retries N` is the number of transport retries after the first try (default 5: six attempts).
- The totals printed at the end are those of the whole results file (earlier runs included, the
  last record of each pair standing, human decisions applied), as `tabench totals` prints them.
- `--workers N` grades in N processes (tabench_dsl/grading/parallel/), this one alone writing the results;
  the default is 1: a real judge is latency bound and one process keeps up with it.
- `--question`, `--system`, `--tag` and `--limit` grade a slice: the filters apply before `--resume`'s
  skip, and `--limit` counts only answers sent to grading, so `--resume --limit N` grades the next N.
  A `--question` the battery lacks, or a `--tag` none of its questions has, is a usage error; a
  `--system` no answer has grades nothing.
- Every system seen is expected to answer every question of the slice (`--question`, `--tag`): the
  questions it has no answer to are named per system on stderr and, with `--missing-as-fail`,
  recorded as `fail` with cause `missing` (grading/missing.py). With `--limit` the file is not read
  to its end, so nothing is called missing (and `--missing-as-fail` is a usage error).
- `--dry-run` builds no judge, sends nothing and writes no file (`dry_run`): it counts and estimates.
- `--answers` may be repeated, and may name a folder: the files are read in turn as one stream
  (a pair given twice across them is a duplicate), a folder standing for the Inspect AI logs in it
  and below. A `.eval` or `.json` file is an Inspect log (grading/inspect_log.py: its model is the
  system unless `--system-from` names a metadata field or task argument, its sample ids the
  questions unless `--question-from` names a metadata field, the final completions the answers,
  each epoch after the first its own system `SYSTEM#epochN`); it needs the `inspect` extra.
- Exit status: 0 when every answer got a verdict, 1 when some ended in `error`, some answer
  lines were bad or a `--workers` process died, 2 for a bad battery or command line or a judge that
  cannot be used at all (grading/reachability.py), 130 on Ctrl-C (records written are kept).
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from ..core.display import json_for_terminal, shown
from ..core.errors import UsageError
from ..grading.causes import CauseTally
from ..grading.inspect_log import is_inspect_log
from .answer_slice import DEFAULT_OUT, answer_slice, stderr_line
from .batch_flags import (
    BatchLog,
    add_batch_options,
    batches_left_running,
    check_batch_options,
    grader_factory,
)
from .battery_flags import add_allow_dir
from .cause_lines import print_causes
from .command_help import add_command
from .grading_flags import add_grading_options, check_grading_options, grading_options, notice_line
from .reasoning_flags import add_reasoning_option, with_reasoning_flag
from .regrade import without_changed
from .scale_flags import add_scale_options
from .spend_flags import add_max_cost_option, cap_message, capped_options, check_max_cost
from .tag_flags import add_tag_option

#: Bad answer lines whose messages `grade --json` lists (all are counted and named on stderr).
MAX_BAD_LINES_KEPT = 100

if TYPE_CHECKING:
    from ..grading.answers import AnswerReader
    from ..grading.runner import RunStats
    from .missing_answers import MissingAnswers


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = add_command(
        sub,
        "grade",
        help="grade an answers file against a battery",
        description="Grade every answer of an answers file against a battery, append one record per "
        "answer to a results file, and print the totals of the whole results file.",
        exit_codes=(
            (0, "every answer got a verdict"),
            (1, "some answers ended in error, some answer lines were bad, or a --workers process died"),
        ),
    )
    add = parser.add_argument
    add("battery", type=Path, metavar="BATTERY", help="the battery folder (or its battery.yaml)")
    add_allow_dir(parser)
    add(
        "--answers",
        type=Path,
        action="append",
        required=True,
        metavar="ANSWERS.jsonl",
        help="answers JSONL, one {system, question, answer} object a line, or CSV (a .csv file with a "
        "system,question,answer header), or an Inspect AI log (.eval, .json) or a folder of them "
        "(the inspect extra); repeatable",
    )
    add(
        "--system-from",
        default=None,
        metavar="FIELD",
        help="Inspect logs: the system is this sample metadata field, else this task argument "
        "(default: the log's model)",
    )
    add(
        "--question-from",
        default=None,
        metavar="FIELD",
        help="Inspect logs: the question is this sample metadata field (default: the sample id)",
    )
    add(
        "--out",
        type=Path,
        default=None,
        metavar="RESULTS.jsonl",
        help=f"results JSONL to append to (default: {DEFAULT_OUT} in the working folder)",
    )
    add(
        "--resume",
        action="store_true",
        help="append to an existing --out: skip pairs done, grade again those in error",
    )
    add(
        "--regrade-changed",
        action="store_true",
        help="with --resume: grade again the pairs whose question's prompt changed since (prompt_sha256)",
    )
    add_grading_options(parser)
    add_reasoning_option(parser)
    add_max_cost_option(parser)
    add_batch_options(parser)
    add_scale_options(parser)
    add(
        "--workers",
        default="1",
        metavar="N",
        help="grading processes sharing --concurrency: a number, or auto (2 with 4 CPUs or more); default 1. "
        "More than one pays off only against a judge fast enough to keep one core busy",
    )
    add("--json", action="store_true", help="print the totals as one JSON document")
    add(
        "--dry-run",
        action="store_true",
        help="build no judge and send nothing: count the answers, T1 passes, reply-cache hits and the "
        "judge calls still needed, estimate their tokens and, with a price, their cost",
    )
    add_slice_options(parser)
    add(
        "--missing-as-fail",
        action="store_true",
        help="record each question of the slice a system gave no answer to as fail (cause missing), "
        "so leaving a question out cannot raise a score (without it they are only named)",
    )
    parser.set_defaults(run=run)


def add_slice_options(parser: argparse.ArgumentParser) -> None:
    """`--limit`, `--question` and `--system`: grade a slice of the answers first (a quick look at a
    new judge or battery before paying for the whole file)."""
    add = parser.add_argument
    add(
        "--limit",
        type=int,
        default=None,
        metavar="N",
        help="send at most N answers to grading (after --question/--system; answers --resume skips "
        "do not count)",
    )
    add(
        "--question",
        action="append",
        dest="questions",
        default=None,
        metavar="ID",
        help="grade only the answers to this question (repeatable)",
    )
    add(
        "--system",
        action="append",
        dest="systems",
        default=None,
        metavar="NAME",
        help="grade only the answers of this system (repeatable)",
    )
    add_tag_option(parser, verb="grade")


def _check_args(args: argparse.Namespace) -> None:
    from ..grading.parallel import parse_workers

    args.workers = parse_workers(str(args.workers))
    check_grading_options(args)
    check_batch_options(args)
    check_max_cost(args)
    if args.regrade_changed and not args.resume:
        raise UsageError("--regrade-changed goes with --resume")
    args.answers = answer_files(args.answers)
    if (args.system_from or args.question_from) and not any(is_inspect_log(f) for f in args.answers):
        flag = "--system-from" if args.system_from else "--question-from"
        raise UsageError(f"{flag} applies to Inspect AI logs (.eval, .json); no --answers file is one")


def answer_files(given: list[Path]) -> list[Path]:
    """The answers files `--answers` names, in order, a folder standing for the Inspect logs in it
    and below (Inspect's own listing). A missing path, or a folder without logs, is a usage error."""
    from ..grading.inspect_log import logs_in_folder

    files: list[Path] = []
    for path in given:
        if path.is_dir():
            logs = logs_in_folder(path)
            if not logs:
                raise UsageError(f"{path}: a folder with no Inspect AI log (.eval, .json) in it")
            files.extend(logs)
        elif path.is_file():
            files.append(path)
        else:
            raise UsageError(f"{path}: no such answers file")
    return files


def _grading_inputs(args: argparse.Namespace) -> dict[str, str | Path | None]:
    """The files this grading reads, that `--out` must not be: every answers file and the judge's."""
    from ..outputs import grading_inputs

    inputs = grading_inputs(judge=args.judge, answers=args.answers[0])
    for path in args.answers[1:]:
        inputs[f"the answers file {path}"] = path
    return inputs


def run(args: argparse.Namespace) -> int:
    """Grade, print the totals, return the exit status."""
    from ..core.interrupts import deferred_interrupts
    from ..core.results import ResultsWriter
    from ..core.standing_verdicts import done_pairs
    from ..grading.answers import AnswerReader, count_answers
    from ..grading.event_loop import quiet_gc, run_event_loop
    from ..language.battery import load_battery
    from ..language.render import compile_battery
    from ..outputs import check_results_out
    from .missing_answers import MissingAnswers
    from .progress import Progress

    _check_args(args)
    if args.dry_run:
        from . import dry_run

        return dry_run.run(args)
    out: Path = args.out or DEFAULT_OUT
    check_results_out(out, option="--out", inputs=_grading_inputs(args))
    if not args.resume and out.exists() and out.stat().st_size > 0:
        raise UsageError(
            f"{out} already holds results; pass --resume to continue that grading, or another --out"
        )
    pool = None
    try:
        if args.workers > 1:
            from ..grading.parallel import WorkerPool

            # Started before the battery is compiled: their start-up overlaps this process's.
            # Started and reaped whole: an interrupt half-way would leave a process nobody reaps.
            pool = WorkerPool(args.workers, args.concurrency, on_log=stderr_line)
            with deferred_interrupts():
                pool.start()
        compiled = compile_battery(load_battery(args.battery, allow_dirs=args.allow_dirs))
        compiled = with_reasoning_flag(compiled, args)
        chosen = answer_slice(args, compiled.questions)
        unanswered = MissingAnswers(args, chosen, compiled, out)
        skip = unanswered.skip(done_pairs(out)) if args.resume else set()
        if args.regrade_changed:
            skip = without_changed(out, compiled, skip)

        total = count_answers(args.answers)
        if args.limit is not None:  # the answers --resume skips pass the limit and count as done
            total = min(total, args.limit + len(skip))
        progress = Progress(total)
        if pool is not None:
            pool.on_log = progress.log
        bad_lines: list[str] = []

        def bad_line(problem) -> None:
            if len(bad_lines) < MAX_BAD_LINES_KEPT:
                bad_lines.append(problem.render())
            progress.log(problem.render())

        reader = AnswerReader(
            args.answers,
            compiled.questions,
            on_problem=bad_line,
            on_warning=lambda p: progress.log(f"tabench: warning: {p.render()}"),
            system_from=args.system_from,
            question_from=args.question_from,
        )
        answers = chosen.select(unanswered.watch(reader), skip)
        causes = CauseTally()
        batch_log = BatchLog(progress.log, progress.status) if args.batch else None

        def on_record(record) -> None:
            causes.add(record)
            progress.advance(record)

        created = not out.exists()
        writer = None
        try:
            writer = ResultsWriter(out)
            if writer.repaired:
                progress.log(
                    f"{out}: cut a torn last line ({writer.repaired} bytes) left by an earlier crash"
                )
            if pool is None:
                grading = functools.partial(
                    _grade, args, compiled, answers, writer, progress, on_record, skip, batch_log
                )
            else:
                grading = functools.partial(
                    _grade_in_workers, pool, args, compiled, answers, writer, progress, on_record, skip
                )
            with quiet_gc(), batches_left_running(args, out):
                stats = run_event_loop(grading)
            unanswered.finish(writer, on_record)
        finally:
            progress.close()
            if writer is not None:
                writer.close()
                if created and writer.count == 0:
                    out.unlink(missing_ok=True)  # e.g. a judge that could not be configured
    finally:
        if pool is not None:
            with deferred_interrupts():
                pool.close()

    return _report(args, out, stats, _Seen(reader, bad_lines, causes, unanswered, batch_log, total))


@dataclasses.dataclass(frozen=True)
class _Seen:
    """What one `grade` run met beside its stats, for its report: the answers reader (its bad lines
    and unreadable logs), the first bad lines' messages, the causes of errors and adjudicates, the
    unanswered questions, the batch log (None without --batch) and how many answers there were."""

    reader: AnswerReader
    bad_lines: list[str]
    causes: CauseTally
    unanswered: MissingAnswers
    batch_log: BatchLog | None
    total: int


def _report(args: argparse.Namespace, out: Path, stats: RunStats, seen: _Seen) -> int:
    """Say what the run did (stderr), print the totals of the whole results file, return the exit
    status."""
    reader, bad_lines, causes, unanswered = seen.reader, seen.bad_lines, seen.causes, seen.unanswered
    batch_log, total = seen.batch_log, seen.total
    if stats.graded == 0 and stats.skipped:
        done = f"nothing to grade: all {stats.skipped} answer(s) already done (--resume)"
    else:
        done = (
            f"graded {stats.graded} answer(s) ({stats.t1} by T1, {stats.calls} judge call(s), "
            f"{stats.cache_hits} from cache), skipped {stats.skipped} already done"
        )
    print(
        f"judge: {shown(str(stats.judge))}\n"
        f"{done}; {stats.errors} error(s), {reader.problems} bad answer line(s); "
        f"results in {shown(str(out))}",
        file=sys.stderr,
    )
    if batch_log is not None:
        print(batch_log.summary(), file=sys.stderr)
    for line in unanswered.lines():
        print(line, file=sys.stderr)
    summary = causes.summary()
    print_causes(summary)
    run_json = {
        "graded": stats.graded,
        "skipped": stats.skipped,
        "t1": stats.t1,
        "judge_calls": stats.calls,
        "cache_hits": stats.cache_hits,
        "errors": stats.errors,
        "adjudicate": stats.adjudicate,
        "causes": summary,
        "bad_lines": reader.problems,
        "bad_line_messages": bad_lines,
        "workers_lost": stats.workers_lost,
        **unanswered.as_json(),
    }
    _print_totals(out, as_json=args.json, run_json=run_json)
    if stats.workers_lost:
        print(f"{stats.workers_lost} grading worker(s) died; --resume grades what they left", file=sys.stderr)
    if reader.unreadable_logs:  # named above; the other files were graded
        return 2
    if stats.spend_capped:
        left = max(0, total - stats.graded - stats.skipped - reader.problems)
        print(cap_message(stats, args.max_cost, left), file=sys.stderr)
        return 1
    return 1 if stats.errors or reader.problems or stats.workers_lost else 0


async def _grade(args, compiled, reader, writer, progress, on_record, skip, batch_log=None):
    from ..grading.session import open_grader

    async with open_grader(
        compiled,
        capped_options(grading_options(args), args, args.out or DEFAULT_OUT),
        writer=writer,
        on_record=on_record,
        on_skip=progress.skipped,
        on_notice=lambda notice: progress.log(notice_line(notice)),
        grader=grader_factory(args, batch_log),
    ) as grader:
        stats = await grader.run(reader, skip=skip)
        if batch_log is not None:
            batch_log.finished(grader)
        return stats


async def _grade_in_workers(pool, args, compiled, reader, writer, progress, on_record, skip):
    from ..grading.parallel import WorkerConfig

    return await pool.run(
        WorkerConfig(battery=compiled, options=grading_options(args)),
        reader,
        writer=writer,
        skip=skip,
        on_record=on_record,
        on_skip=progress.skipped,
        on_notice=lambda notice: progress.log(notice_line(notice)),
    )


def _print_totals(out: Path, *, as_json: bool, run_json: dict | None = None) -> None:
    """The totals of the whole results file, as `tabench totals` prints them (a line that is not a
    record is named on stderr, as there, and left out of the count). With `as_json`, `run_json`
    (what this run did: its errors and their causes, its bad answer lines) is the document's
    `"run"`: the totals alone would hide them."""
    from ..review.decisions import decisions_path
    from ..review.indexed_totals import standing_totals
    from ..review.totals import compute_totals, totals_json
    from .totals_cmd import print_tables

    problems: list[str] = []
    # Through the index beside the results (review/indexed_totals.py), which this keeps current.
    if out.exists():
        totals = standing_totals(out, decisions_path(out), on_problem=problems.append)
    else:
        totals = compute_totals([])
    for problem in problems:
        print(f"tabench: warning: {shown(problem)} (skipped)", file=sys.stderr)
    if as_json:
        document = msgspec.json.decode(totals_json(totals))
        if run_json is not None:
            document["run"] = run_json
        sys.stdout.buffer.write(json_for_terminal(msgspec.json.encode(document)) + b"\n")
        sys.stdout.flush()
    else:
        print_tables(totals)
