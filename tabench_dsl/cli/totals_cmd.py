"""`tabench totals RESULTS.jsonl [--json]`: the totals of a results file, human decisions applied."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import UsageError


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("totals", help="count a results file (the last record of each pair stands)")
    parser.add_argument("results", type=Path, help="a results JSONL file written by `tabench grade`")
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of tables")
    parser.add_argument(
        "--decisions", type=Path, default=None,
        help="human decisions to apply (default: RESULTS.decisions.jsonl beside the results, if present)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ..decisions import apply_decisions, decisions_path, load_decisions
    from ..results import iter_records
    from ..totals import compute_totals, totals_json

    if not args.results.is_file():
        raise UsageError(f"{args.results}: no such results file")
    records = list(iter_records(args.results))
    decisions_file = args.decisions or decisions_path(args.results)
    if decisions_file.is_file():
        records = apply_decisions(records, load_decisions(decisions_file))
    totals = compute_totals(records)
    if args.json:
        sys.stdout.buffer.write(totals_json(totals) + b"\n")
    else:
        print_tables(totals)
    return 0


def print_tables(totals) -> None:
    """Print the totals tables, wide enough not to wrap when the output is not a terminal."""
    from rich.console import Console

    from ..totals import render_table

    console = Console(width=None if sys.stdout.isatty() else 140)
    console.print(render_table(totals))
