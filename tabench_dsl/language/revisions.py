"""A battery as a git revision holds it, for `tabench breaking --git BATTERY OLD NEW`.

A repository can arrive with its `.git` (a tarball of a working copy, a shared checkout), and its
own `.git/config` names programs: filter drivers that `.gitattributes` applies on `git archive` or
checkout, textconv drivers, an fsmonitor, hooks, a pager, the transport a partial clone fetches
missing objects with. None of them may run. So the revision is read as plain objects, with the
three git commands that apply no filter and run no hook:

    git rev-parse --show-toplevel          where the working tree's root is
    git ls-tree -r -z REV -- FOLDER        the folder's files in the revision, with their blob ids
    git cat-file --batch                   each blob's bytes, as stored (no filter, no textconv)

each with `-c` settings that turn the rest off besides (`core.fsmonitor`, `core.hooksPath`,
`core.pager`), no system config, no terminal prompt and no transport (`GIT_ALLOW_PROTOCOL` names
none, so a missing object is an error, never a fetch). The files are written into a folder the
caller owns, as new files (never through a link); a link or a submodule in the revision is left
out, and a path that would leave the folder is refused.

A revision is never read as an option: one that starts with `-` is refused, and git is told
where its options end.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path, PurePosixPath

from ..core.errors import UsageError
from ..core.safe_open import open_new

#: How long one git command may take, in seconds.
GIT_TIMEOUT = 120

#: Settings that override any the repository's config makes: no program of its choosing runs.
_NO_PROGRAMS = (
    "-c", "core.fsmonitor=false",
    "-c", "core.hooksPath=/dev/null",
    "-c", "core.pager=cat",
    "-c", "core.untrackedCache=false",
    "-c", "protocol.allow=never",
)  # fmt: skip

#: Modes of a tree entry that are a file's bytes (a link, 120000, and a submodule, 160000, are not).
_FILE_MODES = {"100644", "100755"}


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_TERMINAL_PROMPT="0",
        GIT_ALLOW_PROTOCOL="none",  # no transport at all: a partial clone's missing blob stays missing
        GIT_NO_LAZY_FETCH="1",
        GIT_NO_REPLACE_OBJECTS="1",
    )
    return env


def _git(args: list[str], cwd: Path, stdin: bytes | None = None) -> bytes:
    try:
        done = subprocess.run(
            ["git", *_NO_PROGRAMS, *args],
            cwd=cwd,
            input=stdin,
            capture_output=True,
            timeout=GIT_TIMEOUT,
            check=False,
            env=_environment(),
        )
    except FileNotFoundError:
        raise UsageError("--git needs the git program, which is not on PATH") from None
    except subprocess.TimeoutExpired:
        raise UsageError(f"git {args[0]} took longer than {GIT_TIMEOUT} s") from None
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise UsageError(f"git {args[0]}: {message[-1] if message else 'failed'}")
    return done.stdout


def _tree_files(root: Path, revision: str, inside: str) -> list[tuple[str, str]]:
    """(path, blob id) of every file under `inside` in `revision`, paths relative to the root."""
    listing = _git(["ls-tree", "-r", "-z", "--full-tree", "--end-of-options", revision, "--", inside], root)
    files = []
    for entry in listing.split(b"\0"):
        if not entry:
            continue
        head, _, path = entry.partition(b"\t")
        mode, kind, oid = head.decode("ascii").split(" ")
        if kind == "blob" and mode in _FILE_MODES:
            files.append((path.decode("utf-8", "surrogateescape"), oid))
    return files


def _blobs(root: Path, oids: list[str]) -> list[bytes]:
    """The stored bytes of each blob in `oids`, in order (`git cat-file --batch`)."""
    out = _git(["cat-file", "--batch"], root, stdin="".join(f"{oid}\n" for oid in oids).encode("ascii"))
    blobs, at = [], 0
    for oid in oids:
        end = out.index(b"\n", at)
        header = out[at:end].decode("ascii", "replace").split(" ")
        if len(header) != 3 or header[1] != "blob":
            raise UsageError(f"git cat-file: object {oid} is {' '.join(header[1:]) or 'missing'}")
        size = int(header[2])
        blobs.append(out[end + 1 : end + 1 + size])
        at = end + 1 + size + 1
    return blobs


def _place(into: Path, path: str) -> Path:
    """Where the file `path` of the revision goes under `into`; refused when it would leave it."""
    parts = PurePosixPath(path).parts
    if not parts or PurePosixPath(path).is_absolute() or any(p in ("", ".", "..", ".git") for p in parts):
        raise UsageError(f"the revision holds a file named {path!r}, which tabench does not unpack")
    return into.joinpath(*parts)


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
    try:
        inside = folder.resolve().relative_to(root.resolve()).as_posix() or "."
    except ValueError:
        raise UsageError(f"--git {battery}: the folder is outside the working tree {root}") from None
    files = _tree_files(root, revision, inside)
    for (path, _), data in zip(files, _blobs(root, [oid for _, oid in files]), strict=True):
        target = _place(into, path)
        target.parent.mkdir(parents=True, exist_ok=True)
        with os.fdopen(open_new(target, 0o644), "wb") as out:
            out.write(data)
    unpacked = into / inside
    if not (unpacked / "battery.yaml").is_file():
        raise UsageError(f"revision {revision} has no battery.yaml in {inside}")
    return unpacked
