"""`tabench report RESULTS.jsonl --html OUT.html [--battery PATH] [--max-answers N]`: a static page."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import UsageError
from .battery_flags import add_allow_dir
from .warnings import warn_run_problems


def add_parser(sub: argparse._SubParsersAction) -> None:
    from ..report import MAX_ANSWERS

    parser = sub.add_parser("report", help="write a self-contained HTML report of a results file")
    parser.add_argument("results", type=Path, help="a results JSONL file written by `tabench grade`")
    parser.add_argument("--html", type=Path, required=True, metavar="OUT.html", help="the page to write")
    parser.add_argument("--battery", type=Path, default=None,
                        help="the battery graded, to include each question's compiled prompt")
    add_allow_dir(parser)
    parser.add_argument("--max-answers", type=int, default=MAX_ANSWERS, metavar="N",
                        help=f"answers shown in full, the undecided and failed first (default {MAX_ANSWERS})")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ..report import write_report
    from ..viewer.run import load_run

    if args.max_answers < 0:
        raise UsageError(f"--max-answers {args.max_answers}: must be 0 or more")
    if not args.html.parent.is_dir():
        raise UsageError(f"{args.html}: its folder does not exist")
    run_data = load_run(args.results, battery=args.battery, allow_dirs=args.allow_dirs)
    warn_run_problems(run_data)
    try:
        shown = write_report(run_data, str(args.html), max_answers=args.max_answers)
    except OSError as exc:
        raise UsageError(f"{args.html}: cannot write: {exc.strerror or exc}") from None
    total = len(run_data.records)
    cut = "" if shown == total else f" ({shown} of {total} answers in full)"
    print(f"wrote {args.html}: {total} answers{cut}")
    return 0
