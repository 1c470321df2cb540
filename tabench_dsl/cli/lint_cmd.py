"""`tabench lint BATTERY [--format text|json|sarif]`: every error and warning of a battery in one run;
exit 2 on any error. Warnings under a `# tabench: ignore[CODE]` comment are left out."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from .battery_flags import add_allow_dir
from .command_help import add_command

if TYPE_CHECKING:
    from ..language.problems import Problem


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
    parser.add_argument(
        "--format",
        choices=("text", "json", "sarif"),
        default="text",
        help="text for people (default); json: one document with a code and a span per problem; "
        "sarif: a SARIF 2.1.0 log for code scanning",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ..language.lint import lint_battery
    from ..language.problems import coded_problems

    found = lint_battery(args.battery, allow_dirs=args.allow_dirs)
    problems = coded_problems(found)
    if args.format != "text":
        return _print_document(problems, args.format)
    kept = {(p.path, p.line, p.column, p.message) for p in problems}
    for problem in found:
        if (problem.path, problem.line, problem.col, problem.message) in kept:
            print(problem.render())
    errors = sum(1 for p in problems if p.severity == "error")
    warnings = len(problems) - errors
    print(f"{_count(errors, 'error')}, {_count(warnings, 'warning')}")
    return 2 if errors else 0


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
