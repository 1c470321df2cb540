"""Opening a file tabench writes without following a symbolic link, dangling or not.

A results file, a ledger, a decisions file or a report may sit in a folder someone else filled (a
cloned benchmark, an unpacked archive), where a name can be a link to any file of the user's, or a
dangling link to a file that does not exist yet. Opening such a name for writing would write, or
create, the file the link points to. Every file tabench appends to or writes in place is opened
here, with `O_NOFOLLOW` (a link is refused, never followed) and, for a file that must be new,
`O_EXCL`. A file written whole under a temporary name and renamed (an export, a lock) replaces the
link itself and needs none of this. `outputs.check_output` refuses a link before this is reached;
opening with `O_NOFOLLOW` holds the rule even when a link appears in between.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from .errors import UsageError

#: `O_NOFOLLOW` where the system has it (every POSIX system; Windows has no such links to fear).
NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def open_no_link(path: str | Path, flags: int, mode: int = 0o644) -> int:
    """`os.open(path, flags | O_NOFOLLOW)`; a `UsageError` naming `path` when it is a link."""
    try:
        return os.open(path, flags | NOFOLLOW | _CLOEXEC, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP or (exc.errno == errno.EEXIST and os.path.islink(path)):
            raise UsageError(f"{path} is a symbolic link; tabench never writes through a link") from None
        raise


def open_for_append(path: str | Path, mode: int = 0o644) -> int:
    """A descriptor appending to `path`, created when missing; never through a link."""
    return open_no_link(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, mode)


def open_for_rewrite(path: str | Path, mode: int = 0o644) -> int:
    """A descriptor writing `path` from its start (emptied, or created); never through a link."""
    return open_no_link(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)


def open_new(path: str | Path, mode: int = 0o600) -> int:
    """A descriptor for a new file at `path`; `FileExistsError` when the name is taken (a link too)."""
    return open_no_link(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
