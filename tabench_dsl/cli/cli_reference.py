"""docs/cli.md, the command reference, generated from the parsers so it cannot miss or invent a flag.

Every command's usage, description, arguments (with their help, defaults filled in) and exit codes,
as Markdown. `tests/cli/test_cli_reference.py` compares the file with what this module writes now,
so a flag added to a command and not to the page (or the other way round) fails there. Regenerate
the page after changing a command:

    python -m tabench_dsl.cli.cli_reference > docs/cli.md
"""

from __future__ import annotations

import argparse
import sys

from . import build_parser
from .command_help import usage_block

#: Width the usage lines are wrapped to (argparse's own wrapping, as `--help` does).
REFERENCE_WIDTH = 100

HEADER = """\
# Command reference

<!-- Generated from the parsers: python -m tabench_dsl.cli.cli_reference > docs/cli.md
     (tests/cli/test_cli_reference.py checks this page matches them; do not edit by hand). -->

Every `tabench` command, its flags and its exit codes, as `tabench COMMAND --help` prints them.
How the commands fit together is told by topic: [grading](grading.md), [results](results.md),
[judges](judges.md), [the battery language](language.md), [scaling](scaling.md).

## All commands at a glance

```
{usage}
```
"""


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The subcommand parsers of the `tabench` parser, by name, in the order `--help` lists them."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _flag(action: argparse.Action, formatter: argparse.HelpFormatter) -> str:
    """How `action` is written on a command line: `--out FILE`, `-n, --dry-run`, `BATTERY`."""
    if not action.option_strings:
        return formatter._format_args(action, action.dest.upper())
    if action.nargs == 0:
        return ", ".join(action.option_strings)
    value = formatter._format_args(action, action.dest.upper())
    return ", ".join(f"{option} {value}" for option in action.option_strings)


def _help(action: argparse.Action, formatter: argparse.HelpFormatter) -> str:
    """The action's help with its `%(default)s` and the like filled in, on one line."""
    if not action.help:
        return ""
    return " ".join(formatter._expand_help(action).split())


def command_section(name: str, command: argparse.ArgumentParser) -> str:
    """One command's part of the page: usage, description, arguments, exit codes."""
    formatter = argparse.HelpFormatter(command.prog, width=REFERENCE_WIDTH)
    actions = [a for a in command._actions if not isinstance(a, argparse._HelpAction)]
    formatter.add_usage(command.usage, actions, command._mutually_exclusive_groups, prefix="")
    lines = [f"## tabench {name}", "", "```", formatter.format_help().rstrip("\n"), "```", ""]
    if command.description:
        lines += [command.description.strip(), ""]
    shown_actions = [a for a in actions if a.help != argparse.SUPPRESS]
    for action in shown_actions:
        text = _help(action, formatter)
        lines.append(f"- `{_flag(action, formatter)}`" + (f": {text}" if text else ""))
    if shown_actions:
        lines.append("")
    if command.epilog:
        lines += ["```", command.epilog.strip(), "```", ""]
    return "\n".join(lines)


def reference(parser: argparse.ArgumentParser) -> str:
    """The whole page for the `tabench` parser (built with every command)."""
    parts = [HEADER.format(usage=usage_block(parser))]
    parts += [command_section(name, command) for name, command in subcommands(parser).items()]
    return "\n".join(parts).rstrip("\n") + "\n"


def main() -> None:
    sys.stdout.write(reference(build_parser()))


if __name__ == "__main__":
    main()
