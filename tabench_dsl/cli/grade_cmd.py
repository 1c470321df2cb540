"""`tabench grade BATTERY --answers ANSWERS.jsonl ...`: grade answers, append results, print totals.

Decided where the spec is silent:
- `--out` defaults to `results.jsonl` in the working folder. An existing non-empty results file is
  only appended to with `--resume` (which skips the pairs already done); without it the command
  stops with a usage error rather than mixing two gradings in one file.
- `--retries N` is the number of transport retries after the first try (default 5: six attempts).
- The totals printed at the end are those of the whole results file (earlier runs included, the
  last record of each pair standing, human decisions applied): the per-system table as `tabench
  totals` prints it, and a line naming what else `totals` shows (questions, tags, pairs...), so a
  large grading does not end in hundreds of lines; `--json` prints every figure.
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
from pathlib import Path

from .batch_flags import add_batch_options
from .battery_flags import add_allow_dir
from .command_help import add_command
from .grading_flags import add_grading_options
from .reasoning_flags import add_reasoning_option
from .scale_flags import add_scale_options
from .slice_flags import DEFAULT_OUT, add_slice_options
from .spend_flags import add_max_cost_option


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = add_command(
        sub,
        "grade",
        help="grade an answers file against a battery",
        description="Grade every answer of an answers file against a battery, append one record per "
        "answer to a results file, and print the per-system totals of the whole results file (tabench "
        "totals prints every section).",
        exit_codes=(
            (0, "every answer got a verdict"),
            (1, "some answers ended in error, some answer lines were bad, or a --workers process died"),
        ),
    )
    parser.add_argument(
        "battery", type=Path, metavar="BATTERY", help="the battery folder (or its battery.yaml)"
    )
    add_allow_dir(parser)
    _add_files_options(parser)
    add_grading_options(parser)
    add_reasoning_option(parser)
    add_max_cost_option(parser)
    add_batch_options(parser)
    add_scale_options(parser)
    _add_run_options(parser)
    add_slice_options(parser)
    parser.add_argument(
        "--missing-as-fail",
        action="store_true",
        help="record each question of the slice a system gave no answer to as fail (cause missing), "
        "so leaving a question out cannot raise a score (without it they are only named)",
    )
    parser.set_defaults(run=run)


def _add_files_options(parser: argparse.ArgumentParser) -> None:
    """The files a grading reads and writes: `--answers` (and how Inspect logs name systems and
    questions), `--out`, `--resume` and `--regrade-changed`."""
    add = parser.add_argument
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


def _add_run_options(parser: argparse.ArgumentParser) -> None:
    """`--workers`, `--json` and `--dry-run`: how the grading runs and what it prints."""
    add = parser.add_argument
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


def run(args: argparse.Namespace) -> int:
    """Grade, print the totals, return the exit status. The command line is read once, into a
    frozen `GradeOptions` (`grade_options`), which every step after is handed."""
    from ..language.files import manifest_path  # not .battery: its parser is not needed
    from .grade_options import check_results_file, grade_options
    from .grade_report import report
    from .grade_run import grade_answers

    options = grade_options(args)
    if options.dry_run:
        from . import dry_run

        return dry_run.run(options)
    manifest_path(options.battery)  # a misnamed battery is the error to report, not the --out it meets
    check_results_file(options)
    stats, seen = grade_answers(options)
    return report(options, stats, seen)
