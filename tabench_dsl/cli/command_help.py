"""How every subcommand presents itself: a description, and an epilog that lists its exit codes.

The exit codes were promised in docstrings only; `tabench CMD --help` is where a user (or a script's
author) looks for them, so each command declares its own here, and the two every command shares
(2 for a bad command line or spec, 130 for an interrupt) are added once.
"""

from __future__ import annotations

import argparse
import textwrap

#: The exit codes every command has besides its own.
COMMON_EXIT_CODES: tuple[tuple[int, str], ...] = (
    (2, "bad command line, bad battery or a file that cannot be read or written"),
    (130, "interrupted (Ctrl-C or SIGTERM); what was written so far is kept"),
)


def exit_codes_epilog(codes: tuple[tuple[int, str], ...]) -> str:
    """The epilog listing `codes` (the command's own, 0 first) and then the common ones."""
    rows = sorted((*codes, *COMMON_EXIT_CODES))
    return "exit status:\n" + "\n".join(f"  {code:<4} {meaning}" for code, meaning in rows)


def add_command(
    sub: argparse._SubParsersAction,
    name: str,
    *,
    help: str,
    description: str,
    exit_codes: tuple[tuple[int, str], ...],
) -> argparse.ArgumentParser:
    """Register subcommand `name` with its one-line `help`, its `description` (a paragraph given on
    one line is wrapped; one given in lines is kept as written, as a list must be) and an epilog
    listing `exit_codes` (its own; the common ones are added)."""
    if "\n" not in description:
        description = textwrap.fill(description, width=78)  # argparse wraps help to 78 columns by default
    return sub.add_parser(
        name,
        help=help,
        description=description,
        epilog=exit_codes_epilog(exit_codes),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


#: Width of the command block of docs/cli.md (`usage_block`).
USAGE_WIDTH = 100


def usage_block(parser: argparse.ArgumentParser, width: int = USAGE_WIDTH) -> str:
    """The usage of every subcommand of `parser` (the `tabench` parser, built with every command),
    one after another, without `usage:` and `[-h]`: the command block of docs/cli.md, generated from the
    parsers so it cannot miss a flag (a test compares the two)."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    blocks = []
    for command in sub.choices.values():
        formatter = argparse.HelpFormatter(command.prog, width=width)
        actions = [a for a in command._actions if not isinstance(a, argparse._HelpAction)]
        formatter.add_usage(command.usage, actions, command._mutually_exclusive_groups, prefix="")
        blocks.append(formatter.format_help().rstrip("\n"))
    return "\n".join(blocks)
