"""`tabench fmt [--check] [--diff] PATH...`: rubric and policy files in their canonical layout.

Files are rewritten in place, each through a new file in its own folder renamed over it (a
formatted file is whole or not written at all); a symlink is never followed nor replaced. A file
with a syntax error is reported and left alone (exit 2).
"""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path

from ..core.display import shown
from ..core.errors import SpecError
from ..core.safe_open import replacing
from .command_help import add_command


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = add_command(
        sub,
        "fmt",
        help="rewrite rubric and policy files in their canonical layout",
        description="Rewrite .rubric and .policy files in one canonical layout (indentation, spacing, "
        "string style, blank lines), fields in the order written and comments where they stand. "
        "Formatting never changes a prompt. A folder stands for every .rubric and .policy file under it.",
        exit_codes=(
            (0, "done (or, with --check, nothing would change)"),
            (1, "--check: some file would change"),
        ),
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="a .rubric or .policy file, or a folder")
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 naming each file that would change"
    )
    parser.add_argument(
        "--diff", action="store_true", help="write nothing; print a unified diff of each change"
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ..language.formatting import format_text, formattable_files, read_formattable

    write = not (args.check or args.diff)
    changed = unchanged = failed = 0
    for path in formattable_files(args.paths):
        if path.is_symlink() or not path.is_file():
            print(f"tabench: error: {shown(str(path))}: not a regular file; left alone", file=sys.stderr)
            failed += 1
            continue
        try:
            before = read_formattable(path)
            after = format_text(before, path)
        except SpecError as exc:
            print(exc.render(), file=sys.stderr)
            failed += 1
            continue
        if after == before:
            unchanged += 1
            continue
        changed += 1
        if args.diff:
            _print_diff(path, before, after)
        if args.check:
            print(f"would reformat {shown(str(path))}")
        if write:
            replace_file(path, after)
            print(f"reformatted {shown(str(path))}")
    verb = "reformatted" if write else "would be reformatted"
    print(
        f"{changed} file{'s' * (changed != 1)} {verb}, {unchanged} unchanged"
        + (f", {failed} failed" if failed else "")
    )
    if failed:
        return 2
    return 1 if args.check and changed else 0


def _print_diff(path: Path, before: str, after: str) -> None:
    name = str(path)
    lines = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), fromfile=name, tofile=name
    )
    for line in lines:
        text = line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
        print(shown(text, lines=True), end="")


def replace_file(path: Path, text: str) -> None:
    """Write `text` over `path` through a new file in the same folder, renamed over it, keeping the
    file's permission bits."""
    with replacing(path, keep_mode=True) as f:
        f.write(text.encode("utf-8"))
