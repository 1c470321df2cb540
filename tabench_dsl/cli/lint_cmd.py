"""`tabench lint BATTERY [--format text|json|sarif] [--ignore CODE] [--count CODE]`: every error and
warning of a battery in one run; exit 2 on any error.

Warnings under a `# tabench: ignore[CODE]` comment, and of a code the manifest's `lint: ignore` or
`--ignore` names, are left out of every format. Text output names each warning's code after its
first line (an error reads exactly as `compile` and `grade` report it; its code is in JSON and
SARIF and in the summary line below, and an error can be neither ignored nor counted); a code the
manifest's `lint: count` or `--count` names gets one line with its number instead of its problems,
and so does a code found more than `SUMMARY_OVER` times, after its first `SHOWN_FIRST`. JSON and
SARIF keep every problem that is not ignored.
"""

from __future__ import annotations

import argparse
from collections import Counter
from typing import TYPE_CHECKING

from .battery_flags import add_allow_dir
from .command_help import add_command

if TYPE_CHECKING:
    from ..language.problems import Problem

#: A code found more often than this in one run is summarised in text output.
SUMMARY_OVER = 20

#: How many problems of a summarised code text output still shows.
SHOWN_FIRST = 5


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = add_command(
        sub,
        "lint",
        help="check a battery and report every error and warning",
        description="Check a battery and report every error and warning it has in one run, each with "
        "its file, line, column and code, then a count of both.",
        exit_codes=((0, "no error (warnings allowed)"),),
    )
    parser.add_argument("battery", metavar="BATTERY", help="the battery folder (or its battery.yaml)")
    add_allow_dir(parser)
    parser.add_argument(
        "--format",
        choices=("text", "json", "sarif"),
        default="text",
        help="text for people (default); json: one document with a code and a span per problem; "
        "sarif: a SARIF 2.1.0 log for code scanning",
    )
    parser.add_argument(
        "--ignore",
        metavar="CODE",
        action="append",
        default=[],
        help="leave out the warnings of CODE (W102, ...), as the manifest's `lint: {ignore: [CODE]}` "
        "does; repeatable",
    )
    parser.add_argument(
        "--count",
        metavar="CODE",
        action="append",
        default=[],
        help="in text output, give the warnings of CODE as one line with their number; repeatable",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ..language.lint import lint_run
    from ..language.problems import coded_problems

    found = lint_run(args.battery, allow_dirs=args.allow_dirs, ignore=args.ignore, count=args.count)
    problems = coded_problems(found.problems)
    if args.format != "text":
        return _print_document(problems, args.format)
    rendered = {(e.path, e.line, e.col, e.message): e.render() for e in found.problems}
    for line in text_lines(problems, rendered, found.counted):
        print(line)
    errors = sum(1 for p in problems if p.severity == "error")
    warnings = len(problems) - errors
    print(f"{_count(errors, 'error')}, {_count(warnings, 'warning')}")
    return 2 if errors else 0


def text_lines(problems: list[Problem], rendered: dict[tuple, str], counted: frozenset[str]) -> list[str]:
    """The text report of `problems`: each one as `rendered` holds it (by path, line, column and
    message), a warning with its code after its first line, then one line per code counted or
    summarised."""
    from ..language.lint_report import summary_of

    totals = Counter(p.code for p in problems)
    shown: Counter[str] = Counter()
    lines = []
    for problem in problems:
        code = problem.code
        if code in counted or (totals[code] > SUMMARY_OVER and shown[code] >= SHOWN_FIRST):
            continue
        shown[code] += 1
        text = rendered[(problem.path, problem.line, problem.column, problem.message)]
        if problem.severity == "warning":  # an error reads as every command reports it
            first, newline, rest = text.partition("\n")
            text = f"{first} [{code}]{newline}{rest}"
        lines.append(text)
    for code in totals:
        more = totals[code] - shown[code]
        if not more:
            continue
        what = summary_of(code) or "a problem the table does not name"
        if code in counted:
            lines.append(f"{code}: {totals[code]:,} warnings, counted only ({what})")
        elif code.startswith("W"):
            lines.append(
                f"{code}: {more:,} more like this ({what}); turn them off with "
                f"`lint: {{ignore: [{code}]}}` in battery.yaml or --ignore {code}"
            )
        else:
            lines.append(f"{code}: {more:,} more like this ({what})")
    return lines


def _print_document(problems: list[Problem], form: str) -> int:
    import json

    from ..language.lint_report import json_document, sarif_log

    document = json_document(problems) if form == "json" else sarif_log(problems)
    # ASCII only: a message quotes battery text, and a terminal must not read its control or bidi
    # characters as such (JSON escapes them all).
    print(json.dumps(document, indent=2, ensure_ascii=True))
    return 2 if any(p.severity == "error" for p in problems) else 0


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
