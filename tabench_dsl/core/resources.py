"""Where the grammar and the shipped scorers live.

In a wheel they sit inside the package (`tabench_dsl/_data/`); in a source checkout or an editable
install they sit at the top of the repository, where authors read and edit them.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent.parent


@cache
def data_root() -> Path:
    """The folder that holds `grammar/` and `specs/`."""
    packaged = _PACKAGE / "_data"
    if (packaged / "grammar").is_dir():
        return packaged
    return _PACKAGE.parent


def grammar_dir() -> Path:
    """The folder of the `.lark` grammar files."""
    return data_root() / "grammar"


def specs_dir() -> Path:
    """The folder of the shipped scorers, one sub-folder per scorer version."""
    return data_root() / "specs"
