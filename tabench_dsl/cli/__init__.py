"""The command line, `tabench SUBCOMMAND ...`: the only layer that prints or exits.

Its modules and how they fit: docs/architecture.md.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import NoReturn

from ..core import interrupts
from ..core.display import shown
from ..core.errors import JudgeUnusable, SpecError, SpecErrors, StorageError, TabenchError, UsageError

#: Subcommand name -> module under tabench_dsl.cli that implements it.
COMMANDS: dict[str, str] = {
    "compile": "compile_cmd",
    "lint": "lint_cmd",
    "grade": "grade_cmd",
    "totals": "totals_cmd",
    "calibrate": "calibrate_cmd",
    "probe": "probe_cmd",
    "new": "new_cmd",
    "view": "view_cmd",
    "report": "report_cmd",
    "adjudicate": "adjudicate_cmd",
    "diff": "diff_cmd",
    "export": "export_cmd",
    "batches": "batches_cmd",
    "fmt": "fmt_cmd",
    "schema": "schema_cmd",
    "breaking": "breaking_cmd",
    "lsp": "lsp_cmd",
    "merge": "merge_cmd",
    "align": "align_cmd",
    "import": "import_cmd",
}


#: What an interrupted command says (exit status 130).
INTERRUPTED = "tabench: interrupted; results written so far are kept"


def say_interrupted(argv: list[str]) -> None:
    """Say on stderr that the command `argv` was interrupted; an interrupted `grade` first says how
    to continue it. The command line is not echoed: a --judge-header value is a secret."""
    if argv[:1] == ["grade"]:
        again = "again" if "--resume" in argv else "with --resume"
        print(
            f"tabench: to continue this grading, run the same command {again}: the answers already "
            "graded are skipped",
            file=sys.stderr,
        )
    print(INTERRUPTED, file=sys.stderr)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse exits 2 itself; keep its message short
        self.print_usage(sys.stderr)
        raise UsageError(message)


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The `tabench` parser with every subcommand.

    Given the command line, only the module of the subcommand it names is imported (`compile`
    need not import what `grade` or `view` use); the others are registered by name alone, which is
    all that usage lines and error messages show. Without a subcommand (or with options before
    it, such as --help) every module is imported, so `tabench --help` lists what each one does.
    """
    chosen = _chosen(argv)
    from ..core.version import __version__

    parser = _Parser(prog="tabench", description="Compile LLM-judge batteries and grade answers.")
    parser.add_argument("--version", action="version", version=f"tabench {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name, module_name in COMMANDS.items():
        full_name = f"{__name__}.{module_name}"
        if chosen is not None and name != chosen:
            sub.add_parser(name)  # never parses: the command line names another subcommand
            continue
        importlib.import_module(full_name).add_parser(sub)
    return parser


def _chosen(argv: list[str] | None) -> str | None:
    """The subcommand `argv` names before any option, or None."""
    if not argv or argv[0] not in COMMANDS:
        return None
    return argv[0]


def main(argv: list[str] | None = None) -> int:
    """Run tabench with `argv` (default: sys.argv[1:]) and return the exit status."""
    with interrupts.catch_interrupts():  # SIGTERM stops a command as Ctrl-C does
        before = interrupts.received()
        try:
            status = _run(sys.argv[1:] if argv is None else argv)
        finally:
            interrupts.stop_raising()  # from here a signal is recorded, never raised
        if interrupts.interrupted(since=before) and status != 130:
            # The interrupt was raised where Python could not pass it on (a finaliser), or came as
            # the command returned: the command was interrupted all the same.
            say_interrupted(sys.argv[1:] if argv is None else argv)
            status = 130
        return status


def _run(argv: list[str]) -> int:
    """Parse `argv`, run the command, map every error to its message and status."""
    try:
        try:
            args = build_parser(argv).parse_args(argv)
        except SystemExit as exc:  # --help and --version: printed, done; `main` returns, never exits
            return exc.code if isinstance(exc.code, int) else 0
        return int(args.run(args) or 0)
    except (SpecError, SpecErrors) as exc:
        print(exc.render(), file=sys.stderr)
        return 2
    except (UsageError, StorageError, JudgeUnusable) as exc:
        # Messages quote paths, names and replies: shown as text. A full disk (StorageError) or a
        # judge that cannot be used (JudgeUnusable) ends the run like a bad argument: nothing more
        # can be done until the user acts.
        print(f"tabench: error: {shown(str(exc), lines=True)}", file=sys.stderr)
        return 2
    except TabenchError as exc:
        print(f"tabench: error: {shown(str(exc), lines=True)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        say_interrupted(argv)
        return 130
    except BrokenPipeError:
        return 0
    except OSError as exc:
        # A path the user gave that cannot be read or written: say which, without a traceback.
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"tabench: error: {shown(where + str(exc.strerror or exc))}", file=sys.stderr)
        return 2
    except RuntimeError as exc:
        # Python 3.11 wraps what a class body's `__set_name__` raises in a RuntimeError: an interrupt
        # that lands while a module defining a dataclass is imported (the ending's tables are
        # imported late) comes out so, and is an interrupt all the same.
        if isinstance(exc.__cause__, KeyboardInterrupt):
            say_interrupted(argv)
            return 130
        raise


def entry() -> None:
    """The `tabench` program: `main`, then exit with its status. The interrupt handler stays in
    place from start to exit, so a signal that comes after the command has returned still ends the
    process with a status and a message, never a traceback or a death by signal."""
    interrupts.install()
    try:
        status = main()
    except KeyboardInterrupt:  # raised as `main` returned, before it stopped raising
        status = 130
        say_interrupted(sys.argv[1:])
    interrupts.ignore()
    sys.exit(status)
