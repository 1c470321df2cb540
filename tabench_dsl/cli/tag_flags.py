"""`--tag TAG` (repeatable): the slice of a results file that totals, report and view show."""

from __future__ import annotations

import argparse


def add_tag_option(parser: argparse.ArgumentParser) -> None:
    """`--tag TAG`, repeatable: only the answers to questions with any of these rubric tags."""
    parser.add_argument(
        "--tag",
        action="append",
        dest="tags",
        default=None,
        metavar="TAG",
        help="only the answers to the questions with this rubric tag (repeatable: any of them)",
    )
