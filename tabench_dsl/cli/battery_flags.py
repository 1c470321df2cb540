"""The flag of every command that loads a battery: `--allow-dir DIR`.

A battery reads only its own folder (`battery`); a folder outside it (a policy folder several
batteries share) is readable only when the person running the command names it here. The manifest
cannot: a battery someone else wrote must not decide what of yours it reads.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def add_allow_dir(parser: argparse.ArgumentParser) -> None:
    """Add `--allow-dir DIR` (repeatable) to `parser`; the folders land in `args.allow_dirs`."""
    parser.add_argument(
        "--allow-dir",
        dest="allow_dirs",
        action="append",
        type=Path,
        default=[],
        metavar="DIR",
        help="let the battery read files in DIR, outside its own folder (repeat for several); "
        "a battery's manifest cannot allow this itself",
    )
