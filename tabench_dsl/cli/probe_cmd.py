"""`tabench probe BATTERY [--judge J] [--seed S] [--json] [--dry-run]`: bias probes on the exemplars.

Each exemplar is graded as written and under fixed edits that leave its correct verdict as it was
(`grading.probe`: padding to 2x and 4x, a bulleted list, a note to the grader on exemplars that
should fail, a signature, lower case); the report says per edit how many verdicts flipped. The
grading options are `grade`'s and `calibrate`'s (judge, cache, transport). `--dry-run` builds no
judge and sends nothing: it shows the edited answers that would be graded.

Exit status: 0 done, 1 when an edit flipped a verdict, 2 bad spec or usage.
"""

from __future__ import annotations

import argparse
import functools
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.display import json_for_terminal, shown
from .battery_flags import add_allow_dir
from .command_help import add_command
from .grading_flags import add_grading_options, grading_options, notice_line

if TYPE_CHECKING:
    from ..core.compiled import CompiledBattery
    from ..grading.session import GradingOptions


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = add_command(
        sub,
        "probe",
        help="grade the exemplars under edits that should not change a verdict (bias probes)",
        description="Grade every exemplar of a battery as written and padded to 2x and 4x with neutral "
        "filler, as a bulleted list, with a note to the grader claiming it correct (exemplars that "
        "should fail), signed by a well-known assistant and in lower case; report per edit how many "
        "verdicts flipped.",
        exit_codes=((0, "done, no verdict flipped"), (1, "an edit flipped a verdict")),
    )
    add = parser.add_argument
    add("battery", type=Path, metavar="BATTERY", help="the battery folder (or its battery.yaml)")
    add_allow_dir(parser)
    add("--seed", type=int, default=0, metavar="S", help="the seed the filler is drawn with (default 0)")
    add_grading_options(parser)
    add("--json", action="store_true", help="print one JSON object")
    add("--dry-run", action="store_true", help="build no judge, send nothing: show the edited answers")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Probe, print the report, return the exit status."""
    import msgspec

    from ..grading.event_loop import run_event_loop
    from ..grading.probe import probe_cases
    from ..language.battery import load_battery
    from ..language.render import compile_battery

    options = grading_options(args)
    compiled = compile_battery(load_battery(args.battery, allow_dirs=args.allow_dirs))
    if args.dry_run:
        items = probe_cases(compiled, seed=args.seed)
        if args.json:
            shown_items = [{"system": c.system, "question": c.question, "answer": c.answer} for c in items]
            print(json_for_terminal(msgspec.json.encode({"dry_run": shown_items})).decode())
        else:
            print(f"probe {shown(compiled.name)}: {len(items)} answer(s) would be graded (nothing sent)")
            for case in items:
                print(f"  {shown(case.question)} {shown(case.system)}: {len(case.answer)} characters")
        return 0
    with tempfile.TemporaryDirectory(prefix="tabench-probe-") as folder:
        report = run_event_loop(
            functools.partial(_probe, options, compiled, Path(folder) / "probe.jsonl", args.seed)
        )
    if args.json:
        print(json_for_terminal(msgspec.json.encode(report)).decode())
    else:
        print(render_report(report))
    return 1 if any(edit.flipped for edit in report.edits) else 0


async def _probe(options: GradingOptions, compiled: CompiledBattery, out: Path, seed: int):
    from ..grading.probe import probe
    from ..grading.session import open_grader

    def show(notice: str) -> None:
        print(notice_line(notice), file=sys.stderr)

    async with open_grader(compiled, options, on_notice=show) as grader:
        return await probe(compiled, grader, out=out, seed=seed)


def render_report(report) -> str:
    """Who judged, the as-written agreement, and each edit's flips."""
    judge = shown(report.judge.describe())
    lines = [
        f"probe {shown(report.battery)}: {report.exemplars} exemplar(s) graded by {judge} "
        f"(seed {report.seed})",
        f"as written: {report.agree}/{report.exemplars} got the expected verdict",
        "",
        "edit".ljust(14) + "exemplars".rjust(10) + "flipped".rjust(10) + "expected".rjust(10),
    ]
    for edit in report.edits:
        lines.append(edit.edit.ljust(14) + f"{edit.n:>10}{edit.flipped:>10}{edit.agree:>10}")
    for edit in report.edits:
        for flip in edit.flips:
            lines.append(f"  {edit.edit}: {shown(flip)}")
    return "\n".join(lines)
