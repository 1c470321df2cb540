"""`tabench calibrate BATTERY`: grade the battery's exemplars and report how the judge agrees.

Decided where the spec is silent:
- The exemplars' records go to `--out` when given (appended, as `tabench grade` writes them, so
  `tabench view` can show them); otherwise to a temporary file that is removed afterwards.
- Exit status: 0 done, 1 when agreement is below `--min-agreement` (a fraction, 0.9, or a
  percentage, 90) or no exemplar could be graded against a `--min-agreement`, 2 bad spec or usage.
- `--labels RESULTS` grades the answers people decided or audited in an earlier grading instead of
  the exemplars, each expected to get the person's verdict (`calibrate_labels`).
"""

from __future__ import annotations

import argparse
import functools
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.display import json_for_terminal, shown
from ..core.errors import UsageError
from .batch_flags import BatchOptions, add_batch_options, batch_options, grader_factory
from .batch_log import BatchLog, batches_left_running
from .battery_flags import add_allow_dir
from .cause_lines import print_causes
from .command_help import add_command
from .grading_flags import add_grading_options, grading_options, notice_line

if TYPE_CHECKING:
    from ..core.compiled import CompiledBattery
    from ..grading.session import GradingOptions


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = add_command(
        sub,
        "calibrate",
        help="grade the battery's exemplars and report judge agreement",
        description="Grade the exemplars of every question of a battery with the judge and report how "
        "often it agrees with their expected verdicts: agreement, Cohen's kappa, the confusion table "
        "and every miss.",
        exit_codes=(
            (0, "done (and agreement at least --min-agreement, when given)"),
            (1, "agreement below --min-agreement, or nothing could be graded against it"),
        ),
    )
    add = parser.add_argument
    add("battery", type=Path, metavar="BATTERY", help="the battery folder (or its battery.yaml)")
    add_allow_dir(parser)
    add(
        "--min-agreement",
        type=float,
        default=None,
        metavar="X",
        help="exit 1 when agreement is below this (0.9 or 90 both mean 90%%)",
    )
    add(
        "--out",
        type=Path,
        default=None,
        metavar="RESULTS.jsonl",
        help="also keep the exemplars' records in this results file",
    )
    add(
        "--labels",
        type=Path,
        default=None,
        metavar="RESULTS.jsonl",
        help="measure the judge against the human decisions and audits of an earlier grading instead "
        "of the exemplars (its decisions file beside it)",
    )
    add_grading_options(parser)
    add_batch_options(parser)
    add("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(run=run)


#: The next step after a language-model judge was measured on exemplars its prompt showed it (a
#: new battery holds none out: a step to take, not a fault). The builtin judge never reads them.
NO_HOLDOUT = (
    "next: the judge's prompt showed it every exemplar it was measured on; end one or more exemplar "
    "lines with `holdout` to measure it on answers it has not seen (docs/language.md, section 4.4)"
)


def _min_agreement(value: float | None) -> float | None:
    if value is None:
        return None
    fraction = value / 100.0 if value > 1.0 else value
    if not 0.0 <= fraction <= 1.0:
        raise UsageError("--min-agreement must be a fraction (0.9) or a percentage (90)")
    return fraction


def run(args: argparse.Namespace) -> int:
    """Calibrate, print the report, return the exit status."""
    from ..grading.calibrate import calibration_json
    from ..grading.event_loop import run_event_loop
    from ..language.battery import load_battery
    from ..language.render import compile_battery

    minimum = _min_agreement(args.min_agreement)
    options = grading_options(args)
    batch = batch_options(args)
    if args.out is not None:
        from ..outputs import check_results_out, grading_inputs

        inputs = grading_inputs(judge=args.judge)
        inputs["the results file --labels reads"] = args.labels  # its labels, not a place to write
        check_results_out(args.out, option="--out", inputs=inputs)
    compiled = compile_battery(load_battery(args.battery, allow_dirs=args.allow_dirs))
    labelled = None
    if args.labels is not None:
        from .calibrate_labels import LabelProblems, labelled_cases

        problems = LabelProblems()
        labelled = labelled_cases(args.labels, compiled, problems)
        for message in problems.messages():
            print(f"tabench: warning: {shown(message)}", file=sys.stderr)
    if args.out is not None:
        with batches_left_running(batch, args.out):
            result = run_event_loop(
                functools.partial(_calibrate, options, batch, compiled, args.out, labelled)
            )
    else:
        with tempfile.TemporaryDirectory(prefix="tabench-calibrate-") as folder:
            out = Path(folder) / "exemplars.jsonl"
            result = run_event_loop(functools.partial(_calibrate, options, batch, compiled, out, labelled))
    if args.json:
        print(json_for_terminal(calibration_json(result)).decode())
    else:
        print(render_report(result, minimum))
    print_causes(result.causes)  # stderr: the why of errors and adjudicates, as grade ends
    if minimum is not None and (result.agreement is None or result.agreement < minimum):
        return 1
    return 0


async def _calibrate(
    options: GradingOptions, batch: BatchOptions, compiled: CompiledBattery, out: Path, labelled=None
):
    from ..grading.calibrate import calibrate
    from ..grading.session import open_grader

    def show(notice: str) -> None:
        print(notice_line(notice), file=sys.stderr)

    make = grader_factory(
        batch, BatchLog(lambda line: print(line, file=sys.stderr)) if batch.enabled else None
    )
    async with open_grader(compiled, options, on_notice=show, grader=make) as grader:
        return await calibrate(compiled, grader, out=out, labelled=labelled)


def _one_line(text: str, width: int = 100) -> str:
    """`text` on one line, cut to `width`, shown as text (answers and replies come from others)."""
    text = " ".join(text.split())
    return shown(text if len(text) <= width else text[: width - 3] + "...")


def render_report(result, minimum: float | None = None) -> str:
    """The human report: who judged, agreement, kappa, the confusion table and every miss."""
    from ..grading.calibrate import GOT_LABELS

    judge = shown(result.judge.describe())
    held = "" if result.held_out is None else f" ({result.held_out.n} held out)"
    graded = sum(split.n for split in (result.seen, result.held_out) if split is not None) or result.n
    what = f"{graded} exemplar(s){held}"
    if result.scored_on == "labels":
        what = f"{result.n} answer(s) people decided or audited"
    lines = [f"calibrate {shown(result.battery)}: {what} graded by {judge}"]
    if result.agreement is None:
        lines.append("no exemplars to grade: agreement is undefined")
        return "\n".join(lines)
    kappa = "n/a" if result.kappa is None else f"{result.kappa:.3f}"
    verdict = ""
    if minimum is not None:
        verdict = "  (ok)" if result.agreement >= minimum else f"  (BELOW the minimum {minimum:.1%})"
    lines.append(
        f"agreement {result.agreement:.1%} ({result.agree}/{result.n}), Cohen's kappa {kappa}{verdict}"
    )
    lines.extend(_split_lines(result))
    if result.repeated:
        lines.append(
            f"  stability: {result.flipped} of {result.repeated} exemplar(s) asked more than once "
            f"got differing verdicts ({result.flipped / result.repeated:.1%} flipped)"
        )
    lines.append("")
    header = "expected \\ got".ljust(16) + "".join(label.rjust(12) for label in GOT_LABELS)
    lines.append(header)
    for expected, row in result.confusion.items():
        lines.append(expected.ljust(16) + "".join(str(row[label]).rjust(12) for label in GOT_LABELS))
    if result.misses:
        lines.append("")
        lines.append(f"misses ({len(result.misses)}):")
    for miss in result.misses:
        lines.append(
            f"  {shown(miss.question)} exemplar {miss.index} ({miss.kind}): expected {miss.expected}, "
            f"got {miss.got} [{miss.tier}]{' (held out)' if miss.holdout else ''}"
        )
        lines.append(f"    answer: {_one_line(miss.answer)}")
        lines.append(f"    why:    {_one_line(miss.why)}")
        lines.append(f"    judge:  {_one_line(miss.reason)}")
    lines.extend(_panel_lines(result))
    if not result.judge.language_model:
        lines.append("")
        lines.append(f"note: these verdicts come from the {judge}.")
    elif result.scored_on == "seen":
        lines.append("")
        lines.append(NO_HOLDOUT)
    return "\n".join(lines)


def _split_lines(result) -> list[str]:
    """Seen and held-out agreement apart, and which of them the figures above measure."""
    if result.held_out is None or result.scored_on == "labels":
        return []
    lines = []
    for name, split in (("held out", result.held_out), ("seen", result.seen)):
        if split is None or split.agreement is None:
            continue
        kappa = "n/a" if split.kappa is None else f"{split.kappa:.3f}"
        lines.append(f"  {name}: agreement {split.agreement:.1%} ({split.agree}/{split.n}), kappa {kappa}")
    lines.append("  (the figures above are the held-out exemplars', which the judge's prompt never shows)")
    return lines


def _panel_lines(result) -> list[str]:
    """With a judge panel: each judge's agreement beside the panel's, then every exemplar's votes
    in columns J1, J2, ... (named above them) and the panel's verdict."""
    if not result.judges:
        return []
    lines = ["", "judges side by side (J = a judge of the panel):"]
    panel_kappa = "n/a" if result.kappa is None else f"{result.kappa:.3f}"
    for number, one in enumerate(result.judges, start=1):
        kappa = "n/a" if one.kappa is None else f"{one.kappa:.3f}"
        share = "n/a" if one.agreement is None else f"{one.agreement:.1%}"
        lines.append(
            f"  J{number} {shown(one.judge)}: agreement {share} ({one.agree}/{result.n}), kappa {kappa}"
        )
    panel_share = "n/a" if result.agreement is None else f"{result.agreement:.1%}"
    lines.append(f"  panel: agreement {panel_share} ({result.agree}/{result.n}), kappa {panel_kappa}")
    lines.append("")
    header = "exemplar".ljust(28) + "expected".rjust(10)
    header += "".join(f"J{n}".rjust(12) for n in range(1, len(result.judges) + 1)) + "panel".rjust(12)
    lines.append(header)
    for row in result.exemplars:
        name = _one_line(f"{row.question} {row.index} ({row.kind})", 27).ljust(28)
        votes = "".join(row.votes[one.judge].rjust(12) for one in result.judges)
        lines.append(f"{name}{row.expected.rjust(10)}{votes}{row.panel.rjust(12)}")
    return lines
