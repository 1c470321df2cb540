"""`tabench align RESULTS --battery BATTERY`: people's verdicts that overturned the tool become
exemplars of the battery, and a held-out share of them measures whether the new exemplars help.

The decided answers (`review.align_cases`) are split by a seeded hash into training and held-out
shares; each training disagreement proposes an exemplar (`language.align`), written as a unified
diff of the rubric files (`--out`, default stdout). The held-out answers are then graded twice with
the same judge, against the battery as it is and as patched (read with the patched texts in place
of the files: nothing on disk changes), and the agreement and kappa with the people are shown
before and after (`align_recheck`). Adding an exemplar changes the compiled prompt: the patched
battery is a new battery, and `tabench breaking`'s verdict says so. `--apply` writes the patch.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.display import json_for_terminal, shown
from ..core.errors import UsageError
from .battery_flags import add_allow_dir
from .command_help import add_command
from .grading_flags import add_grading_options

if TYPE_CHECKING:
    from ..core.nodes import Battery
    from ..language.align import RubricPatch
    from ..review.align_cases import DecidedAnswer


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = add_command(
        sub,
        "align",
        help="turn people's verdicts that overturned the judge into exemplars, and measure them",
        description="Propose one exemplar per answer a person decided or audited against the tool's "
        "verdict (from a seeded training share), print the rubric files' unified diff, then grade the "
        "held-out decided answers against the battery as it is and as patched and report agreement "
        "and Cohen's kappa with the people before and after. Nothing changes without --apply.",
        exit_codes=((0, "done"),),
    )
    add = parser.add_argument
    add("results", type=Path, metavar="RESULTS", help="a results JSONL file written by `tabench grade`")
    add("--battery", type=Path, required=True, metavar="BATTERY", help="the battery graded (its folder)")
    add(
        "--decisions",
        type=Path,
        default=None,
        metavar="FILE",
        help="the decisions file (default: RESULTS.decisions.jsonl beside the results)",
    )
    add(
        "--holdout",
        type=float,
        default=0.3,
        metavar="SHARE",
        help="the share of decided answers held out to measure the patch (default 0.3)",
    )
    add("--seed", type=int, default=0, metavar="S", help="the seed of the held-out split (default 0)")
    add(
        "--out", type=Path, default=None, metavar="PATCH", help="write the unified diff here (default stdout)"
    )
    add("--apply", action="store_true", help="write the new exemplars into the rubric files")
    add(
        "--max-per-question",
        type=int,
        default=3,
        metavar="N",
        help="new exemplars one question takes at most (default 3)",
    )
    add_allow_dir(parser)
    add_grading_options(parser)
    add("--json", action="store_true", help="print one JSON object (the diff then only to --out)")
    add(
        "--dry-run",
        action="store_true",
        help="build no judge, send nothing, write nothing but --out: the proposal and the re-check's calls",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ..language.align import plan_patch, unified_patch
    from ..language.battery import load_battery
    from ..review.align_cases import proposals, split_decided
    from .align_recheck import breaking_verdict, dry_run_lines, recheck, report_lines, summary

    if not 0 <= args.holdout < 1:
        raise UsageError("--holdout is a share of the decided answers, from 0 up to (not including) 1")
    if args.max_per_question < 1:
        raise UsageError("--max-per-question must be at least 1")
    battery = load_battery(args.battery, allow_dirs=args.allow_dirs)
    decided = _decided(args)
    training, held_out = split_decided(decided, holdout=args.holdout, seed=args.seed)
    proposed = proposals(training)
    patch = plan_patch(battery, proposed, max_per_question=args.max_per_question)
    diff = unified_patch(patch)
    patched = _patched(args, patch)
    breaking = breaking_verdict(battery, patched)
    _write_patch(args, diff, battery, patch)
    for line in _proposal_notes(patch):
        print(f"tabench: {line}", file=sys.stderr)
    if args.dry_run:
        for line in dry_run_lines(args, battery, patched, held_out, breaking):
            print(line, file=sys.stderr if args.json or args.out is None else sys.stdout)
        return 0
    before, after = recheck(args, battery, patched, held_out)
    document = summary(decided, training, held_out, proposed, patch, before, after, breaking)
    if args.apply and patch.files:
        _apply(patch)
    if args.json:
        import msgspec

        print(json_for_terminal(msgspec.json.encode(document)).decode())
    else:
        out = sys.stderr if args.out is None else sys.stdout  # stdout holds the diff without --out
        for line in report_lines(document, applied=args.apply):
            print(line, file=out)
    return 0


def _decided(args: argparse.Namespace) -> list[DecidedAnswer]:
    """Every decided answer of the results, its decisions applied (`--decisions` or beside it)."""
    from ..review.align_cases import decided_answers
    from ..review.decisions import apply_decisions
    from ..review.outcomes import latest
    from ..store.decisions import decisions_path, load_decisions
    from ..store.results import iter_records

    if not args.results.is_file():
        raise UsageError(f"{shown(str(args.results))}: no such results file")
    problems: list[str] = []
    records = list(iter_records(args.results, on_problem=problems.append))
    for problem in problems:
        print(f"tabench: warning: {shown(problem)} (skipped)", file=sys.stderr)
    if args.decisions is not None and not args.decisions.is_file():
        raise UsageError(f"{shown(str(args.decisions))}: no such decisions file (--decisions)")
    decisions = load_decisions(args.decisions or decisions_path(args.results))
    decided = decided_answers(latest(apply_decisions(records, decisions)).values())
    if not decided:
        raise UsageError(
            f"{shown(str(args.results))}: no answer a person decided or audited (align learns from them)"
        )
    return decided


def _patched(args: argparse.Namespace, patch: RubricPatch) -> Battery:
    """The battery as patched, read with the patched texts in place of its rubric files."""
    from ..language.battery import load_battery
    from ..language.files import texts_in_place_of_files

    with texts_in_place_of_files(patch.texts):
        return load_battery(args.battery, allow_dirs=args.allow_dirs)


def _write_patch(args: argparse.Namespace, diff: str, battery: Battery, patch: RubricPatch) -> None:
    """The diff to `--out` (never over an input, never through a link), else to stdout."""
    if args.out is None:
        if not args.json:
            sys.stdout.write(shown(diff, lines=True) if diff else "")
        return
    import os

    from ..core.safe_open import open_for_rewrite
    from ..outputs import check_output

    inputs: dict[str, str | Path | None] = {
        "the results file": args.results,
        "the decisions file": args.decisions,
    }
    inputs |= {f"a rubric file ({path})": path for path in {q.pos.path for q in battery.questions}}
    check_output(args.out, option="--out", kind="a patch", recognise=lambda p: True, inputs=inputs)
    fd = open_for_rewrite(args.out)
    with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
        f.write(diff)


def _proposal_notes(patch: RubricPatch) -> list[str]:
    """What a reader of the patch must know: W104 exemplars, and those left out."""
    notes = []
    for placed in patch.placed:
        if placed.t1_passes:
            notes.append(
                f"warning: W104: {shown(placed.path)}:{placed.line}: T1 passes this answer to "
                f"{shown(placed.exemplar.question)} before the judge sees any exemplar; an exemplar "
                "cannot fail it (write `t1 off` in the question, or a trap)"
            )
    for left in patch.left_out:
        notes.append(
            f"left out: {shown(left.exemplar.system)} · {shown(left.exemplar.question)}: {shown(left.reason)}"
        )
    return notes


def _apply(patch: RubricPatch) -> None:
    from .fmt_cmd import replace_file

    for path, (_, after) in sorted(patch.files.items()):
        replace_file(Path(path), after)
        print(f"tabench: wrote {shown(path)}", file=sys.stderr)
