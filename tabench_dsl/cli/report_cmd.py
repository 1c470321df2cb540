"""`tabench report RESULTS.jsonl --html OUT.html [--battery PATH] [--max-answers N]`: a static page."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.display import shown
from ..core.errors import UsageError
from .battery_flags import add_allow_dir
from .command_help import add_command
from .compare_flags import add_compare_option, load_compared
from .price_flags import add_price_option, price_option
from .run_problems import warn_run_problems
from .tag_flags import add_tag_option

if TYPE_CHECKING:
    from ..core.price import Price


def add_parser(sub: argparse._SubParsersAction) -> None:
    from ..review.report import MAX_ANSWERS

    parser = add_command(
        sub,
        "report",
        help="write a self-contained HTML report of a results file",
        description="Write one self-contained HTML page (no script, no network) with the totals of a "
        "results file and its answers, the undecided and failed first.",
        exit_codes=((0, "the page was written (lines that are not records are named on stderr)"),),
    )
    parser.add_argument(
        "results", type=Path, metavar="RESULTS", help="a results JSONL file written by `tabench grade`"
    )
    parser.add_argument("--html", type=Path, required=True, metavar="OUT.html", help="the page to write")
    parser.add_argument(
        "--battery",
        type=Path,
        default=None,
        metavar="BATTERY",
        help="the battery graded, to include each question's compiled prompt",
    )
    parser.add_argument(
        "--max-answers",
        type=int,
        default=MAX_ANSWERS,
        metavar="N",
        help=f"answers shown in full, the undecided and failed first (default {MAX_ANSWERS})",
    )
    add_allow_dir(parser)
    add_tag_option(parser)
    add_compare_option(parser)
    add_price_option(parser, use="prices every judge call, over the price its record carries")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ..outputs import check_output
    from ..review.indexed_report import stamped, write_page
    from ..review.report import is_report_file
    from ..store.decisions import decisions_path

    price = price_option(args)
    if args.max_answers < 0:
        raise UsageError(f"--max-answers {args.max_answers}: must be 0 or more")
    if not args.html.parent.is_dir():
        raise UsageError(f"{shown(str(args.html))}: its folder does not exist")
    # The page replaces OUT.html whole: only a report this command wrote earlier may be replaced.
    check_output(
        args.html,
        option="--html",
        kind="an HTML report",
        recognise=is_report_file,
        inputs={
            "the results file it reads": args.results,
            "the decisions file of those results": decisions_path(args.results),
            **({} if args.compare is None else {"the results file it compares with": args.compare}),
        },
    )
    # The page of a results file that did not change since the last report: from its index.
    kept = _kept_page(args, price)
    if kept is None:
        kept = _rendered_page(args, price)
    try:
        write_page(args.html, stamped(kept.html))
    except OSError as exc:
        raise UsageError(f"{args.html}: cannot write: {exc.strerror or exc}") from None
    total, in_full = kept.answers, kept.in_full
    cut = "" if in_full == total else f" ({in_full} of {total} answers in full)"
    print(f"wrote {shown(str(args.html))}: {total} answers{cut}")
    return 0


def _variant(args: argparse.Namespace, price: Price | None) -> str | None:
    """The index's name for this report; None when it reads other files than the results."""
    from ..review.indexed_report import report_variant

    if args.battery is not None or args.compare is not None or not args.results.is_file():
        return None
    return report_variant(args.results, max_answers=args.max_answers, price=price, tags=args.tags)


def _kept_page(args: argparse.Namespace, price: Price | None):
    """The page kept in the results' index for exactly these inputs, or None."""
    from ..review.indexed_report import kept_report

    variant = _variant(args, price)
    return None if variant is None else kept_report(args.results, variant)


def _rendered_page(args: argparse.Namespace, price: Price | None):
    """The page rendered from the results (kept in their index when it has nothing to warn of)."""
    from ..review.indexed_report import KEPT_NOW, KeptReport, keep_report
    from ..review.report import render_report
    from ..review.report_run import report_run
    from ..review.viewer.run import load_run
    from ..store.results_index import measure

    extent = measure(args.results)
    listed = totals = None
    if args.compare is None:
        # Every record light, whole only the answers shown (`review.report_run`).
        run_data, listed, totals = report_run(
            args.results,
            max_answers=args.max_answers,
            battery=args.battery,
            allow_dirs=args.allow_dirs,
            tags=args.tags,
            price=price,
        )
    else:  # the comparison shows the other file's verdict beside each answer: both read whole
        run_data = load_run(args.results, battery=args.battery, allow_dirs=args.allow_dirs, tags=args.tags)
    run_data.price = price
    warn_run_problems(run_data)
    compared = load_compared(args, run_data)
    html = render_report(
        run_data, max_answers=args.max_answers, now=KEPT_NOW, compare=compared, listed=listed, totals=totals
    )
    total = len(run_data.records) if totals is None else totals.records
    page = KeptReport(html, total, min(total, args.max_answers))
    variant = _variant(args, price)
    if variant is not None and extent is not None and not (run_data.problems or run_data.stale):
        keep_report(args.results, variant, extent, page)
    return page
