"""Opening a file tabench writes without following a symbolic link, dangling or not.

A results file, a ledger, a decisions file or a report may sit in a folder someone else filled (a
cloned benchmark, an unpacked archive), where a name can be a link to any file of the user's, or a
dangling link to a file that does not exist yet. Opening such a name for writing would write, or
create, the file the link points to. Every file tabench appends to or writes in place is opened
here, with `O_NOFOLLOW` (a link is refused, never followed) and, for a file that must be new,
`O_EXCL`. A file written whole (an export, a lock, a merge, a batch's requests file, `fmt`) goes
through `replacing`, the one atomic door: a new file beside it (`O_EXCL`, so never a planted name),
renamed over the name, which replaces a link there, never what it points to. `outputs.check_output`
refuses a link before this is reached; opening with `O_NOFOLLOW` holds the rule even when a link
appears in between. A write that fails (a full disk, a file size limit) is a `StorageError` naming
the file, and leaves the old file as it was.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from .errors import StorageError, UsageError

#: `O_NOFOLLOW` where the system has it (every POSIX system; Windows has no such links to fear).
NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
#: The errors of a write that found no room: a full disk, a quota, a file size limit, a failing disk.
_FULL = {errno.ENOSPC, errno.EFBIG, errno.EIO, getattr(errno, "EDQUOT", errno.ENOSPC)}


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


def open_new(path: str | Path, mode: int = 0o600, *, readable: bool = False) -> int:
    """A descriptor for a new file at `path` (open for writing, and with `readable` for reading
    too); `FileExistsError` when the name is taken (a link too)."""
    access = os.O_RDWR if readable else os.O_WRONLY
    return open_no_link(path, access | os.O_CREAT | os.O_EXCL, mode)


@contextlib.contextmanager
def replacing(path: str | Path, *, keep_mode: bool = False) -> Iterator[BinaryIO]:
    """A new binary file beside `path` that takes `path`'s place (by rename: a link there is
    replaced, never followed) once the block ends without an error. It is created as any new file
    is (0644 less the umask), or, with `keep_mode`, gets the permission bits of the file it
    replaces. Any error leaves `path` as it was; a write the disk refuses is a `StorageError`
    naming `path`."""
    target = Path(path)
    kept = os.lstat(target).st_mode & 0o7777 if keep_mode and os.path.lexists(target) else None
    temporary = target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp")
    # A fresh random name, O_EXCL: never a name planted there. Readable as well: a writer may read
    # back what it wrote (`export` takes the rows a later record re-grades out of its file).
    fd = open_new(temporary, 0o644, readable=True)
    try:
        with os.fdopen(fd, "wb") as sink:
            yield sink
            sink.flush()
            os.fsync(sink.fileno())
        if kept is not None:
            os.chmod(temporary, kept)
        os.replace(temporary, target)
    except BaseException as stopped:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        if isinstance(stopped, OSError) and stopped.errno in _FULL:
            reason = stopped.strerror or str(stopped)
            raise StorageError(f"{target}: could not write the file ({reason}); it is as it was") from None
        raise
