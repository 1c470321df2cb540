"""A `grade` command line read once into a frozen `GradeOptions`: the grading, the dry run and the
ending report are handed that struct and never look at the `argparse.Namespace` again.

Each group of flags is read by the module that defines it (`grading_flags`, `batch_flags`,
`spend_flags`, `reasoning_flags`, `slice_flags`), which raises the `UsageError` naming the flag;
this module puts the groups together and checks what only `grade` has.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import msgspec

from ..core.errors import UsageError
from ..grading.inspect_log import is_inspect_log
from ..grading.plan import PlanOptions
from ..grading.session import GradingOptions
from .batch_flags import BatchOptions, batch_options
from .grading_flags import grading_options
from .reasoning_flags import reasoning_tags_option
from .slice_flags import DEFAULT_OUT, slice_flags
from .spend_flags import max_cost_option


class GradeOptions(msgspec.Struct, frozen=True):
    """Everything a `grade` command line says, checked: the battery (and `--allow-dir`s), the answers
    files (a folder already expanded to its Inspect logs) and how Inspect logs name systems and
    questions, the results file (`--out`, else `DEFAULT_OUT`), what to grade of the answers (`plan`:
    the slice, `--resume`, `--regrade-changed`, `--missing-as-fail`), how to grade (`grading`,
    `--max-cost` included), the batch flags, `--reasoning-tags` (None: the manifest's),
    `--workers`, `--json` and `--dry-run`."""

    battery: Path
    answers: tuple[Path, ...]
    out: Path
    grading: GradingOptions
    batch: BatchOptions
    plan: PlanOptions
    allow_dirs: tuple[Path, ...] = ()
    system_from: str | None = None
    question_from: str | None = None
    reasoning_tags: tuple[tuple[str, str], ...] | None = None
    workers: int = 1
    json: bool = False
    dry_run: bool = False


def grade_options(args: argparse.Namespace) -> GradeOptions:
    """The `GradeOptions` of a parsed `grade` command line; `UsageError` naming the flag for one
    that is out of range or does not go with another."""
    from ..grading.parallel import parse_workers

    workers = parse_workers(str(args.workers))
    grading = grading_options(args)
    batch = batch_options(args, workers=workers)
    max_cost = max_cost_option(args, workers=workers, batch=batch.enabled)
    if args.regrade_changed and not args.resume:
        raise UsageError("--regrade-changed goes with --resume")
    answers = answer_files(args.answers)
    if (args.system_from or args.question_from) and not any(is_inspect_log(f) for f in answers):
        flag = "--system-from" if args.system_from else "--question-from"
        raise UsageError(f"{flag} applies to Inspect AI logs (.eval, .json); no --answers file is one")
    return GradeOptions(
        battery=args.battery,
        answers=tuple(answers),
        out=args.out or DEFAULT_OUT,
        grading=msgspec.structs.replace(grading, max_cost=max_cost),
        batch=batch,
        plan=PlanOptions(
            slice=slice_flags(args),
            resume=args.resume,
            missing_as_fail=args.missing_as_fail,
            regrade_changed=args.regrade_changed,
        ),
        allow_dirs=tuple(args.allow_dirs),
        system_from=args.system_from,
        question_from=args.question_from,
        reasoning_tags=reasoning_tags_option(args),
        workers=workers,
        json=args.json,
        dry_run=args.dry_run,
    )


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


def check_results_file(options: GradeOptions) -> None:
    """`UsageError` unless `options.out` is a results file this grading may append to: one tabench
    wrote (or none yet), none of the files the grading reads, and empty unless `--resume`."""
    from ..outputs import check_results_out, grading_inputs

    out, grading = options.out, options.grading
    first_judge = grading.judge if grading.judge is not None else next(iter(grading.panel), None)
    inputs = grading_inputs(judge=first_judge, answers=options.answers[0])
    for path in options.answers[1:]:
        inputs[f"the answers file {path}"] = path
    check_results_out(out, option="--out", inputs=inputs)
    if not options.plan.resume and out.exists() and out.stat().st_size > 0:
        raise UsageError(
            f"{out} already holds results; pass --resume to continue that grading, or another --out"
        )
