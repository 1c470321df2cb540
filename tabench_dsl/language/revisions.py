"""A battery as a git revision holds it, for `tabench breaking --git BATTERY OLD NEW`.

The battery's folder is taken from `git archive` of the revision and unpacked (with tarfile's
`data` filter: no links out, no device files, no absolute paths) into a folder the caller owns.
A revision is never read as an option: one that starts with `-` is refused, and git is told
where its options end.
"""

from __future__ import annotations

import io
import subprocess
import tarfile
from pathlib import Path

from ..core.errors import UsageError

#: How long one git command may take, in seconds.
GIT_TIMEOUT = 120


def _git(args: list[str], cwd: Path) -> bytes:
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, timeout=GIT_TIMEOUT, check=False)
    except FileNotFoundError:
        raise UsageError("--git needs the git program, which is not on PATH") from None
    except subprocess.TimeoutExpired:
        raise UsageError(f"git {args[0]} took longer than {GIT_TIMEOUT} s") from None
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise UsageError(f"git {args[0]}: {message[-1] if message else 'failed'}")
    return done.stdout


def battery_at_revision(battery: str | Path, revision: str, into: Path) -> Path:
    """Unpack the folder `battery` (a path in a git working tree) as `revision` holds it under
    `into`; return the battery's folder there. Raises `UsageError` for a revision git does not know,
    a folder outside a repository, or a revision without that folder."""
    if not revision or revision.startswith("-"):
        raise UsageError(f"not a git revision: {revision!r}")
    folder = Path(battery)
    if folder.name == "battery.yaml":
        folder = folder.parent
    if not folder.is_dir():
        raise UsageError(f"--git {battery}: no such folder")
    root = Path(_git(["rev-parse", "--show-toplevel"], folder).decode("utf-8").strip())
    inside = folder.resolve().relative_to(root.resolve()).as_posix() or "."
    data = _git(["archive", "--format=tar", "--end-of-options", revision, inside], root)
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        archive.extractall(into, filter="data")
    unpacked = into / inside
    if not (unpacked / "battery.yaml").is_file():
        raise UsageError(f"revision {revision} has no battery.yaml in {inside}")
    return unpacked
