"""`--tag TAG` (repeatable): the slice of the answers grade grades, and of a results file that
totals, report and view show."""

from __future__ import annotations

import argparse


def add_tag_option(parser: argparse.ArgumentParser, *, verb: str = "") -> None:
    """`--tag TAG`, repeatable: only the answers to questions with any of these rubric tags. `verb`
    starts the help text (`grade` says "grade only the answers ...")."""
    parser.add_argument(
        "--tag",
        action="append",
        dest="tags",
        default=None,
        metavar="TAG",
        help=f"{verb + ' ' if verb else ''}only the answers to the questions with this rubric tag "
        "(repeatable: any of them)",
    )
