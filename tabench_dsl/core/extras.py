"""Optional extras: a feature that needs a package tabench does not install by default imports it
through `require`, at the moment it is used, and its absence is a usage error naming the extra.

    inspect   inspect_ai: Inspect AI logs as answers, a battery as an Inspect scorer
    parquet   pyarrow: `tabench export --format parquet`
    lsp       pygls: `tabench lsp`, the language server

Imported lazily so that `tabench grade` on a JSONL file, and everything else, starts as fast as
before and works where the extras are absent.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from .errors import UsageError

#: Extra name -> the distribution it brings, as a user would look it up.
EXTRAS = {"inspect": "inspect_ai", "parquet": "pyarrow", "lsp": "pygls"}


def missing_extra_message(extra: str, purpose: str) -> str:
    """What to tell a user whose `purpose` needs the optional extra `extra`."""
    return (
        f"{purpose} needs the optional extra {extra!r} ({EXTRAS[extra]} is not installed): "
        f'pip install "tabench-dsl[{extra}]"'
    )


def require(module: str, *, extra: str, purpose: str) -> ModuleType:
    """Import `module` (of the extra `extra`), or raise `UsageError` naming the extra to install.

    Only a missing top-level package counts as absent: an error raised inside an installed package
    is its own, and passes through as it is."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        top = module.partition(".")[0]
        if exc.name is not None and exc.name.partition(".")[0] != top:
            raise
        raise UsageError(missing_extra_message(extra, purpose)) from None
