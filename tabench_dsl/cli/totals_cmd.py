"""`tabench totals RESULTS.jsonl [--json | --csv] [--price ...] [--by SECTION]`: the totals of a
results file, human decisions applied, with the judge calls' tokens and cost (at the price each
record carries, or `--price` over it). `--csv` prints the per-system rows (every scalar column of
`totals --json`'s systems; the 64 most frequent facets a column each, a system's others in one
`other_facets` JSON cell, so the CSV is as large as the JSON) for pandas or DuckDB
(review/export.py). The tables show a screenful of each long section, `--by SECTION` one whole
(`screenful`).

Exit status 1 when some lines were not records (each is named on stderr and left out of the count).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ..core.display import json_for_terminal, shown
from ..core.errors import UsageError
from ..review.useful_rows import EVERY_ROW, Limits
from .command_help import add_command
from .price_flags import add_price_option, price_option
from .screenful import add_by_option, rest_line, section_limits
from .tag_flags import add_tag_option


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = add_command(
        sub,
        "totals",
        help="count a results file (the last record of each pair stands)",
        description="Print the totals of a results file per system and overall: pass, fail, "
        "adjudicate and error counts, the score and its 95% Wilson interval, the judge's tokens and "
        "their cost. The last record of each (system, question) pair stands and human decisions are "
        "applied.",
        exit_codes=((0, "done"), (1, "some lines were not records (each named on stderr, left out)")),
    )
    parser.add_argument(
        "results", type=Path, metavar="RESULTS", help="a results JSONL file written by `tabench grade`"
    )
    shape = parser.add_mutually_exclusive_group()
    shape.add_argument("--json", action="store_true", help="print one JSON document instead of tables")
    shape.add_argument("--csv", action="store_true", help="print the per-system totals as CSV")
    parser.add_argument(
        "--decisions",
        type=Path,
        default=None,
        metavar="DECISIONS.jsonl",
        help="human decisions to apply (default: RESULTS.decisions.jsonl beside the results, if present)",
    )
    add_tag_option(parser)
    add_price_option(parser, use="prices every judge call, over the price its record carries")
    add_by_option(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ..review.totals import totals_json
    from ..review.totals_of import totals_of
    from ..store.decisions import decisions_path

    price = price_option(args)
    if not args.results.is_file():
        raise UsageError(f"{args.results}: no such results file")
    problems: list[str] = []
    decisions_file = args.decisions or decisions_path(args.results)
    # Counted as always, or read back from the index beside the results when nothing changed.
    totals = totals_of(args.results, decisions_file, price=price, tags=args.tags, on_problem=problems.append)
    for problem in problems:
        print(f"tabench: warning: {shown(problem)} (skipped)", file=sys.stderr)
    if args.json:
        sys.stdout.buffer.write(json_for_terminal(totals_json(totals)) + b"\n")
    elif args.csv:
        from ..review.export import csv_text, system_rows

        columns, rows = system_rows(totals)
        text = csv_text(columns, rows)
        # CSV has no escapes: names go out as written to a program, made visible to a terminal.
        sys.stdout.write(shown(text, lines=True) if sys.stdout.isatty() else text)
    else:
        print_tables(totals, section_limits(args.by))
    # Counted without the lines it could not read: say so in the status too.
    return 1 if problems else 0


#: Columns the tables take when the output is not a terminal: the per-system table (with its token
#: and cost columns) and a system name of 40 characters fit on one line.
PIPE_WIDTH = 160


def print_tables(totals, limits: Limits = EVERY_ROW) -> None:
    """Print the totals tables, fitted to the terminal (or to `COLUMNS`; review/table_fit.py: columns
    drop in a stated order, the system, score and interval stay whole), or wide enough not to wrap
    when the output is a pipe; each long section cut to the rows `limits` allows (`screenful`).
    """
    from rich.console import Group
    from rich.table import Table

    from ..review.plain_table import PlainTable
    from ..review.totals_tables import render_table

    console = _console()
    tables = render_table(totals, width=console.width, limits=limits)
    # Each table drawn as plain text when rich's layout is not needed (`plain_table`): the same characters.
    console.print(
        Group(*(PlainTable(part) if isinstance(part, Table) else part for part in tables.renderables))
    )


def print_system_table(totals, results: Path) -> None:
    """Print the per-system table alone, fitted as `print_tables` fits it, and the line naming what
    else `tabench totals` shows of `results` (how `grade` ends)."""
    from ..review.plain_table import PlainTable
    from ..review.totals_tables import system_table

    console = _console()
    # Drawn as plain text when rich's layout is not needed (`plain_table`): the same characters.
    console.print(PlainTable(system_table(totals, console.width)))
    if totals.records:
        console.print(rest_line(totals, results), highlight=False)


def _console():
    """A console for the totals tables: the terminal's width, or COLUMNS when set (rich reads it),
    else PIPE_WIDTH for a pipe. The names in the tables come from results files: they are
    `display.literal` text, and the console reads no markup or emoji code in any string besides."""
    from rich.console import Console

    columns = os.environ.get("COLUMNS", "")
    wide = None if sys.stdout.isatty() or columns.isdigit() else PIPE_WIDTH
    return Console(width=wide, markup=False, emoji=False)
