"""How a `grade` run ends: what it did on stderr (the judge, the counts, the batches, the missing
answers, the causes of errors and adjudicates), the totals of the whole results file on stdout,
and the exit status."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from ..core.display import json_for_terminal, shown
from .cause_lines import print_causes
from .spend_flags import cap_message

if TYPE_CHECKING:
    from ..grading.causes import CauseCount
    from ..grading.runner import RunStats
    from ..review.run_totals import RunTotals
    from .grade_options import GradeOptions
    from .grade_run import RunAccount


def report(options: GradeOptions, stats: RunStats, seen: RunAccount) -> int:
    """Say what the run did (stderr), print the totals of the whole results file, return the exit
    status: 2 when an Inspect log could not be read, 1 when the spend cap stopped the grading or
    some answers ended in error, some answer lines were bad or a worker died, else 0."""
    reader = seen.reader
    _say_run(options.out, stats, seen)
    summary = seen.causes.summary()
    print_causes(summary)
    run_json = _run_json(stats, seen, summary) if options.json else None  # every missing question
    print_totals(options.out, as_json=options.json, run_json=run_json, counted=seen.counted)
    if stats.workers_lost:
        print(f"{stats.workers_lost} grading worker(s) died; --resume grades what they left", file=sys.stderr)
    if reader.unreadable_logs:  # named above; the other files were graded
        return 2
    if stats.spend_capped:
        left = max(0, seen.total - stats.graded - stats.skipped - reader.problems)
        print(cap_message(stats, options.grading.max_cost or 0.0, left), file=sys.stderr)
        return 1
    return 1 if stats.errors or reader.problems or stats.workers_lost else 0


def _say_run(out: Path, stats: RunStats, seen: RunAccount) -> None:
    """The run on stderr: its judge, what it graded and skipped, its errors and bad lines, where the
    results are; the batches' summary and the systems with questions missing."""
    if stats.graded == 0 and stats.skipped:
        done = f"nothing to grade: all {stats.skipped} answer(s) already done (--resume)"
    else:
        done = (
            f"graded {stats.graded} answer(s) ({stats.t1} by T1, "
            + (f"{stats.matched} by match checks, " if stats.matched else "")
            + f"{stats.calls} judge call(s), "
            f"{stats.cache_hits} from cache), skipped {stats.skipped} already done"
        )
    # A run that graded nothing creates no results file: saying "results in" it would send a reader
    # to a file that is not there.
    where = (
        f"results in {shown(str(out))}"
        if out.exists()
        else f"no results written ({shown(str(out))} not created)"
    )
    print(
        f"judge: {shown(str(stats.judge))}\n"
        f"{done}; {stats.errors} error(s), {seen.reader.problems} bad answer line(s); {where}",
        file=sys.stderr,
    )
    if seen.batch_log is not None:
        print(seen.batch_log.summary(), file=sys.stderr)
    for line in seen.unanswered.lines():
        print(line, file=sys.stderr)


def _run_json(stats: RunStats, seen: RunAccount, causes: list[CauseCount]) -> dict:
    """What this run did, as `grade --json`'s `"run"` entry."""
    return {
        "graded": stats.graded,
        "skipped": stats.skipped,
        "t1": stats.t1,
        "match": stats.matched,
        "judge_calls": stats.calls,
        "cache_hits": stats.cache_hits,
        "errors": stats.errors,
        "adjudicate": stats.adjudicate,
        "causes": causes,
        "bad_lines": seen.reader.problems,
        "bad_line_messages": seen.bad_lines,
        "workers_lost": stats.workers_lost,
        **seen.unanswered.as_json(),
    }


def print_totals(
    out: Path, *, as_json: bool, run_json: dict | None = None, counted: RunTotals | None = None
) -> None:
    """The totals of the whole results file: the per-system table and a line naming what else
    `tabench totals` shows (a line that is not a record is named on stderr, as there, and left out
    of the count), or with `as_json` every figure, as `totals --json` prints them, and `run_json`
    (what this run did: its errors and their causes, its bad answer lines) is the document's
    `"run"`: the totals alone would hide them. `counted`: the records the run wrote, counted as it
    wrote them (`review.run_totals`), the file's totals when they are all of it."""
    from ..review.totals import compute_totals, totals_json
    from ..review.totals_of import totals_of
    from ..store.decisions import decisions_path
    from .totals_cmd import print_system_table

    problems: list[str] = []
    # Through the index beside the results (review/totals_of.py), which this keeps current.
    if out.exists():
        totals = totals_of(out, decisions_path(out), on_problem=problems.append, written=counted)
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
        print_system_table(totals, out)
