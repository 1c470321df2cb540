"""`tabench new NAME [--dir PARENT] [--scorer SCORER]`: start a battery from a commented template.

It writes `NAME/battery.yaml`, `NAME/NAME.policy` and `NAME/questions/NAME.rubric` (one question
that uses every field), and `NAME/battery.schema.json`, the manifest's JSON Schema, which the
manifest's first line names for YAML editors, from the files in `tabench_dsl/starter_battery/`,
with `$name` and `$scorer` (a shipped scorer, `tabench-neutral-1.1` unless `--scorer` names another,
such as `tabench-1.1` for a battery about a codebase) filled in. The result
compiles, lints with no warning and calibrates at 100% with the builtin judge. An existing folder
is never overwritten (exit 2), and NAME must be a battery name (`[a-z0-9][a-z0-9._-]*`).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from string import Template

from ..core.display import shown
from ..core.errors import UsageError
from .command_help import add_command

TEMPLATES = Path(__file__).resolve().parent.parent / "starter_battery"

#: Template file -> where it goes in the new battery (`{name}` is the battery name).
FILES: dict[str, str] = {
    "battery.yaml": "battery.yaml",
    "battery.policy": "{name}.policy",
    "question.rubric": "questions/{name}.rubric",
}


#: The manifest's JSON Schema, written beside it and named by its first line.
SCHEMA_FILE = "battery.schema.json"

#: The scorer a new battery names unless `--scorer` says otherwise: the neutral one, whose words fit
#: any subject and carry no other project's history (`tabench-1.1` stays as it is for the batteries
#: that name it).
DEFAULT_SCORER = "tabench-neutral-1.1"


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = add_command(
        sub,
        "new",
        help="create a battery folder from a commented template",
        description="Create the folder NAME with a battery.yaml, a policy and one question, every "
        "field commented: it compiles, lints clean and calibrates at 100% with the builtin judge. An "
        "existing folder is never overwritten.",
        exit_codes=((0, "the battery folder was created"),),
    )
    parser.add_argument("name", metavar="NAME", help="the battery name: [a-z0-9][a-z0-9._-]*")
    parser.add_argument(
        "--dir",
        type=Path,
        default=Path("."),
        metavar="PARENT",
        help="the folder to create it in (default: .)",
    )
    parser.add_argument(
        "--scorer",
        default=DEFAULT_SCORER,
        metavar="SCORER",
        help=f"the shipped scorer the battery names (default: {DEFAULT_SCORER}; "
        "tabench-1.1 speaks of a codebase)",
    )
    parser.set_defaults(run=run)


def create_battery(name: str, parent: Path, scorer: str = DEFAULT_SCORER) -> Path:
    """Write the template battery `name`, naming the shipped scorer `scorer`, under `parent` and
    return its folder."""
    from ..language.battery import shipped_scorers
    from ..language.manifest import BATTERY_NAME

    if not BATTERY_NAME.match(name):
        raise UsageError(
            f"{name!r} is not a battery name: use lowercase letters, digits, '.', '_' and '-', "
            "starting with a letter or digit"
        )
    if scorer not in shipped_scorers():
        raise UsageError(
            f"--scorer {shown(scorer)}: not a shipped scorer; shipped scorers are "
            + ", ".join(shipped_scorers())
        )
    if not parent.is_dir():
        raise UsageError(f"--dir {shown(str(parent))}: no such folder")
    folder = parent / name
    if os.path.lexists(folder):  # a link too, even one to nothing: mkdir would write through it
        raise UsageError(
            f"{shown(str(folder))} already exists; tabench new never overwrites, choose another name"
        )
    (folder / "questions").mkdir(parents=True)
    for template, target in FILES.items():
        text = Template((TEMPLATES / template).read_text(encoding="utf-8")).substitute(
            name=name, scorer=scorer
        )
        (folder / target.format(name=name)).write_text(text, encoding="utf-8")
    _write_schema(folder)
    return folder


def _write_schema(folder: Path) -> None:
    """The manifest's JSON Schema beside it: its first line names it, so YAML editors check and
    complete the manifest offline (`tabench schema battery` prints the current one)."""
    import json

    from ..language.schemas import battery_schema

    text = json.dumps(battery_schema(), indent=2) + "\n"
    (folder / SCHEMA_FILE).write_text(text, encoding="utf-8")


def run(args: argparse.Namespace) -> int:
    """Create the battery and say what to do next."""
    folder = shown(str(create_battery(args.name, args.dir, args.scorer)))
    print(f"created {folder}/: battery.yaml, {args.name}.policy, questions/{args.name}.rubric, {SCHEMA_FILE}")
    print(f"next: edit the question, then `tabench lint {folder}` and `tabench calibrate {folder}`")
    return 0
