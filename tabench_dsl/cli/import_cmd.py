"""`tabench import KIND SOURCE... --out DIR [--name NAME] [--scorer SCORER]`: a battery from
another tool's evals (docs/migrating.md).

KIND is `openai-evals`, `promptfoo` or `inspect` (`language.importers`). The battery is written to
DIR, which must be missing or empty (never a file or a link: `outputs.check_new_folder`): a
`battery.yaml` naming SCORER (`tabench-neutral-1.1` unless given: an imported eval is rarely about
a codebase) and one rubric file per source eval under `questions/`, each laid out as `tabench fmt`
writes it. The written battery is linted before the command ends. The summary names the
questions written, the source fields mapped, what was left behind and why, and each item skipped
as `path:line: reason`. Exit 0, or 1 when items were skipped; 2 when nothing could be imported.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.display import shown
from ..core.errors import UsageError
from .command_help import add_command

if TYPE_CHECKING:
    from ..language.importers.sources import Imported

#: The scorer an imported battery names unless `--scorer` says otherwise.
DEFAULT_SCORER = "tabench-neutral-1.1"


def add_parser(sub: argparse._SubParsersAction) -> None:
    from ..language.importers import KINDS

    parser = add_command(
        sub,
        "import",
        help="write a battery from OpenAI Evals, promptfoo or Inspect AI evals",
        description="Write a new battery folder from another tool's evals: questions with stable ids "
        "from the source, golds, accepted variants, scoring texts and match checks for closed answers; "
        "a summary says what was mapped, what was left behind and which items were skipped. Nothing "
        "in a source is run. Kinds: " + "; ".join(f"{kind}: {what}" for kind, what in KINDS.items()),
        exit_codes=(
            (0, "the battery was written with every item"),
            (1, "the battery was written; some items were skipped (each named)"),
        ),
    )
    parser.add_argument(
        "kind", metavar="KIND", choices=list(KINDS), help="openai-evals, promptfoo or inspect"
    )
    parser.add_argument("sources", metavar="SOURCE", nargs="+", type=Path, help="the files to import")
    parser.add_argument(
        "--out", type=Path, required=True, metavar="DIR", help="the new battery folder (missing or empty)"
    )
    parser.add_argument("--name", metavar="NAME", help="the battery name (default: from DIR)")
    parser.add_argument(
        "--eval",
        action="append",
        default=[],
        metavar="NAME",
        help="openai-evals: import only this eval of the registry files (repeatable)",
    )
    parser.add_argument(
        "--field",
        action="append",
        default=[],
        metavar="FIELD=COLUMN",
        help="inspect: read a Sample field from another column, as Inspect's FieldSpec (input=question)",
    )
    parser.add_argument(
        "--scorer",
        default=DEFAULT_SCORER,
        metavar="SCORER",
        help=f"a shipped scorer (default: {DEFAULT_SCORER})",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ..language.battery import shipped_scorers
    from ..language.importers import import_sources
    from ..language.importers.battery_text import battery_texts
    from ..language.manifest import BATTERY_NAME
    from ..outputs import check_new_folder, write_new_folder

    kind: str = args.kind
    sources: list[Path] = list(args.sources)
    out: Path = args.out
    name: str = args.name or _name_from(out)
    scorer: str = args.scorer
    if not BATTERY_NAME.match(name):
        raise UsageError(f"--name {shown(name)}: not a battery name ([a-z0-9][a-z0-9._-]*)")
    if scorer not in shipped_scorers():
        raise UsageError(
            f"--scorer {shown(scorer)}: not a shipped scorer; shipped: " + ", ".join(shipped_scorers())
        )
    check_new_folder(out, option="--out")
    imported = import_sources(kind, sources, fields=_fields(args.field), evals=list(args.eval))
    for skipped in imported.skipped:
        print(f"tabench: skipped {shown(skipped.render())}", file=sys.stderr)
    if not imported.questions:
        raise UsageError("no question could be imported; nothing was written")
    command = " ".join(["tabench import", kind, *(str(s) for s in sources)])
    # Every text is made before the folder is: a failure leaves nothing behind.
    texts = battery_texts(imported, name=name, scorer=scorer, command=command, folder=str(out))
    write_new_folder(out, texts)
    _summary(out, imported)
    return 1 if imported.skipped else 0


def _fields(pairs: list[str]) -> dict[str, str]:
    """`--field FIELD=COLUMN` flags as a mapping."""
    fields = {}
    for pair in pairs:
        field, sep, column = pair.partition("=")
        if not sep or not field.strip() or not column.strip():
            raise UsageError(f"--field {shown(pair)}: write it as FIELD=COLUMN, as input=question")
        fields[field.strip()] = column.strip()
    return fields


def _name_from(out: Path) -> str:
    import re

    name = re.sub(r"[^a-z0-9._-]+", "-", out.resolve().name.lower()).strip("-._")
    return name or "imported"


def _summary(out: Path, imported: Imported) -> None:
    from ..language.lint import lint_battery

    rubric_count = len(imported.rubrics)
    print(f"imported {imported.questions} questions into {shown(str(out))}/ ({rubric_count} rubric files)")
    if imported.mapped:
        print("mapped:")
        for what, count in sorted(imported.mapped.items()):
            print(f"  {shown(what)}: {count}")
    if imported.unmapped:
        print("not carried over:")
        for what, count in sorted(imported.unmapped.items()):
            print(f"  {shown(what)}" + (f" ({count} items)" if count > 1 else ""))
    if imported.skipped:
        print(f"skipped {len(imported.skipped)} items (named above)")
    problems = lint_battery(out)
    errors = [p for p in problems if p.severity == "error"]
    warnings = len(problems) - len(errors)
    print(f"lint: {len(errors)} errors, {warnings} warnings (a question without exemplars is a warning)")
    for problem in errors:  # never expected: what an import writes lints clean
        print(f"tabench: {problem.render()}", file=sys.stderr)
    print(f"next: `tabench compile {shown(str(out))}`, then `tabench grade {shown(str(out))} --answers FILE`")
