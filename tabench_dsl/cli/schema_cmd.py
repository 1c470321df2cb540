"""`tabench schema battery|scorer`: the JSON Schema of a battery manifest or of a scorer's settings,
for YAML editors (`# yaml-language-server: $schema=...`)."""

from __future__ import annotations

import argparse
import json

from .command_help import add_command


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = add_command(
        sub,
        "schema",
        help="print the JSON Schema of battery.yaml or scorer.yaml",
        description="Print the JSON Schema (draft-07) of a battery's battery.yaml or of a scorer's "
        "scorer.yaml, built from the keys tabench reads, for editors that check and complete YAML.",
        exit_codes=((0, "printed"),),
    )
    parser.add_argument(
        "which",
        choices=("battery", "scorer"),
        metavar="FILE",
        help="battery (battery.yaml) or scorer (scorer.yaml)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ..language.schemas import SCHEMAS

    print(json.dumps(SCHEMAS[args.which](), indent=2))
    return 0
