"""`tabench lint BATTERY`: every error and warning of a battery in one run; exit 2 on any error."""

from __future__ import annotations

import argparse

from .battery_flags import add_allow_dir
from .command_help import add_command


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = add_command(
        sub,
        "lint",
        help="check a battery and report every error and warning",
        description="Check a battery and report every error and warning it has in one run, each with "
        "its file, line and column, then a count of both.",
        exit_codes=((0, "no error (warnings allowed)"),),
    )
    parser.add_argument("battery", metavar="BATTERY", help="the battery folder (or its battery.yaml)")
    add_allow_dir(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ..language.lint import lint_battery

    problems = lint_battery(args.battery, allow_dirs=args.allow_dirs)
    for problem in problems:
        print(problem.render())
    errors = sum(1 for p in problems if p.severity == "error")
    warnings = len(problems) - errors
    print(f"{_count(errors, 'error')}, {_count(warnings, 'warning')}")
    return 2 if errors else 0


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
