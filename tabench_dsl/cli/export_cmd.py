"""`tabench export RESULTS --format csv|parquet --out FILE`: the standing records as a table.

One row per (system, question) pair, the last record standing, human decisions applied (review/
export.py has the columns). `--out` is replaced whole, and only when it is missing, empty or an
export tabench wrote before; never the results or decisions file it reads. Parquet needs the
`parquet` extra (pyarrow); without it the command stops with a usage error naming it, before
writing anything. Exit status 1 when some lines were not records (each named on stderr, left out).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..core.display import shown
from ..core.errors import UsageError
from .command_help import add_command


def add_parser(sub: argparse._SubParsersAction) -> None:
    from ..review.export import FORMATS

    parser = add_command(
        sub,
        "export",
        help="write the standing records of a results file as CSV or Parquet",
        description="Write one row per (system, question) pair of a results file, the last record "
        "standing and human decisions applied, as CSV or Parquet for pandas, DuckDB or a spreadsheet.",
        exit_codes=((0, "written"), (1, "some lines were not records (each named on stderr, left out)")),
    )
    add = parser.add_argument
    add("results", type=Path, metavar="RESULTS", help="a results JSONL file written by `tabench grade`")
    add(
        "--format",
        dest="fmt",
        choices=FORMATS,
        required=True,
        help="csv (standard module, RFC 4180 quoting) or parquet (the parquet extra: pyarrow)",
    )
    add("--out", type=Path, required=True, metavar="FILE", help="the file to write (replaced whole)")
    add(
        "--decisions",
        type=Path,
        default=None,
        metavar="DECISIONS.jsonl",
        help="human decisions to apply (default: RESULTS.decisions.jsonl beside the results, if present)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ..core.safe_open import replacing
    from ..outputs import check_output
    from ..review.export import is_export_file, write_records
    from ..review.export_stream import standing_positions, standing_records, write_standing_csv
    from ..store.decisions import decisions_path, load_decisions

    if not args.results.is_file():
        raise UsageError(f"{args.results}: no such results file")
    if not args.out.parent.is_dir():
        raise UsageError(f"{shown(str(args.out))}: its folder does not exist")
    if args.fmt == "parquet":  # first: without the extra, say so rather than judge an existing --out
        from ..core.extras import require

        require("pyarrow.parquet", extra="parquet", purpose="export --format parquet")
    decisions_file = args.decisions or decisions_path(args.results)
    check_output(
        args.out,
        option="--out",
        kind="an export",
        recognise=is_export_file,
        inputs={"the results file it reads": args.results, "the decisions file it reads": decisions_file},
    )
    problems: list[str] = []
    decisions = load_decisions(decisions_file) if decisions_file.is_file() else []
    try:
        if args.fmt == "csv":  # one read over the file's byte ranges (review/export_stream.py)
            with replacing(args.out) as sink:
                rows = write_standing_csv(
                    args.results, decisions, sink, parts_in=args.out.parent, on_problem=problems.append
                )
        else:  # two passes over the file: memory grows with the pairs, not the texts
            positions = standing_positions(args.results, on_problem=problems.append)
            records = standing_records(args.results, positions, decisions)
            rows = write_records(records, args.out, args.fmt, standing=True)
    except OSError as exc:
        raise UsageError(f"{args.out}: cannot write: {exc.strerror or exc}") from None
    finally:
        for problem in problems:
            print(f"tabench: warning: {shown(problem)} (skipped)", file=sys.stderr)
    print(f"wrote {shown(str(args.out))}: {rows} record(s) as {args.fmt}")
    return 1 if problems else 0
