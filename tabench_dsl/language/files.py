"""Reading a battery's files as a battery someone else wrote may name them.

A battery is data from elsewhere: its manifest names files, and whatever they hold goes into the
judge's prompt. So a file is read only when its real path (symlinks followed) lies inside one of
the folders the battery may read (its own folder, and those the user allows with `--allow-dir`),
only when it is a regular file (a FIFO would block, a device never ends), and only up to
`MAX_SPEC_BYTES`. Text is UTF-8, a leading byte order mark dropped; a byte that is not UTF-8 is a
`SpecError` at its own line and column.

`battery` turns a `Refused` into an error at the manifest line that named the file, so nothing of
a refused file (not even its first line) is ever shown.
"""

from __future__ import annotations

import glob
import hashlib
import os
import re
import stat
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import NamedTuple

from ..core.errors import SpecError, UsageError

#: The largest spec file read (rubric, policy, manifest, scorer settings or template), in bytes.
MAX_SPEC_BYTES = 8 * 1024 * 1024

#: The UTF-8 byte order mark some editors put at the start of a file.
BOM = b"\xef\xbb\xbf"

#: A lone surrogate: a code point UTF-8 cannot encode, which only an escape (`"\\ud800"` in a
#: rubric string, a YAML double-quoted value) can put in spec text.
SURROGATE = re.compile("[\ud800-\udfff]")


#: Texts that stand for files (real path -> text) while `texts_in_place_of_files` is in force: an
#: editor's unsaved buffers, read by the language server as the battery's files; and the real paths
#: of those read so far.
_IN_PLACE: ContextVar[tuple[Mapping[str, str], set[str]] | None] = ContextVar(
    "in_place_of_files", default=None
)


@contextmanager
def texts_in_place_of_files(texts: Mapping[str, str]) -> Iterator[set[str]]:
    """Within the block, `read_spec_text` of a file whose real path is a key of `texts` gives that
    text instead of the file's (the language server lints the buffers an editor holds). Yields the
    set of the real paths of those texts read so far (which of them the battery names)."""
    read: set[str] = set()
    token = _IN_PLACE.set(({os.path.realpath(path): text for path, text in texts.items()}, read))
    try:
        yield read
    finally:
        _IN_PLACE.reset(token)


class Read(NamedTuple):
    """One thing a battery's compile was made from (`recording_reads`): a spec file read (`kind`
    "file": its path as opened, its real path, the `file_digest` of its bytes) or the files a rubric
    pattern matched (`kind` "glob": the pattern, the folder it is read from, the digest of the
    matches)."""

    kind: str
    name: str
    where: str
    digest: bytes


_READS: ContextVar[list[Read] | None] = ContextVar("spec_reads", default=None)


def file_digest(data: bytes) -> bytes:
    """The digest a recorded read keeps of a file's bytes (`recording_reads`)."""
    return hashlib.blake2b(data, digest_size=32).digest()


@contextmanager
def recording_reads() -> Iterator[list[Read]]:
    """Within the block, every spec file `read_spec_text` reads and every rubric pattern
    `pattern_matches` lists is noted in the list it yields, in order: what a compiled battery was
    made from (`compile_cache`). A text given in place of a file (`texts_in_place_of_files`) is no
    file's bytes: it is noted with an empty digest, which nothing read from disk has."""
    reads: list[Read] = []
    token = _READS.set(reads)
    try:
        yield reads
    finally:
        _READS.reset(token)


def _note(kind: str, name: str, where: str, digest: bytes) -> None:
    reads = _READS.get()
    if reads is not None:
        reads.append(Read(kind, name, where, digest))


class Refused(Exception):
    """A spec file tabench will not read. `reason` completes a sentence that names the file:
    "is not a regular file", "is larger than 8 MiB"."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def real_path(path: str | Path) -> Path:
    """`path` with every symlink followed, made absolute (as far as it exists)."""
    return Path(os.path.realpath(path))


def is_inside(path: str | Path, roots: Iterable[Path]) -> bool:
    """Whether the real path of `path` is one of `roots` (real paths) or lies under one."""
    real = real_path(path)
    return any(real == root or real.is_relative_to(root) for root in roots)


def read_spec_text(file: str | Path, what: str) -> str:
    """The text of spec file `file` (`what` names it in messages: "rubric file", "manifest").

    Raises `Refused` for a file that is not a regular file or is larger than `MAX_SPEC_BYTES`
    (neither is opened for reading: a FIFO is opened non-blocking, then refused), `SpecError` for
    bytes that are not UTF-8, and `OSError` (FileNotFoundError included) as the system gives it.
    Containment is the caller's check (`is_inside`): only it knows which folders are allowed.
    """
    in_place = _IN_PLACE.get()
    if in_place is not None:
        real = os.path.realpath(file)
        text = in_place[0].get(real)
        if text is not None:
            if too_large(text):  # an editor's buffer is held to the limit of the file it stands for
                raise Refused(f"is larger than {MAX_SPEC_BYTES // (1024 * 1024)} MiB")
            in_place[1].add(real)
            _note("file", str(file), real, b"")
            return text.removeprefix("\ufeff")
    if not stat.S_ISREG(os.stat(file).st_mode):
        raise Refused("is not a regular file")
    # O_NONBLOCK: if the file was swapped for a FIFO since the stat, the open still returns.
    fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise Refused("is not a regular file")
        if info.st_size > MAX_SPEC_BYTES:
            raise Refused(f"is larger than {MAX_SPEC_BYTES // (1024 * 1024)} MiB")
        data = f.read(MAX_SPEC_BYTES + 1)  # a file still growing is cut off here, not read whole
    if len(data) > MAX_SPEC_BYTES:
        raise Refused(f"is larger than {MAX_SPEC_BYTES // (1024 * 1024)} MiB")
    _note("file", str(file), os.path.realpath(file), file_digest(data))
    return decode_spec_bytes(data, file, what)


def too_large(text: str) -> bool:
    """Whether `text` (an editor's buffer) is over `MAX_SPEC_BYTES` in UTF-8, the limit of a file
    on disk; measured only when it could be (a character is at most 4 bytes)."""
    if len(text) * 4 <= MAX_SPEC_BYTES:
        return False
    return len(text) > MAX_SPEC_BYTES or len(text.encode("utf-8", "surrogatepass")) > MAX_SPEC_BYTES


def decode_spec_bytes(data: bytes, path: str | Path, what: str) -> str:
    """`data` as UTF-8 text without a leading byte order mark; `SpecError` at the first byte that
    is not UTF-8, at its line and column (columns count characters, as every other error does)."""
    if data.startswith(BOM):
        data = data[len(BOM) :]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line_start = data.rfind(b"\n", 0, exc.start) + 1
        line_end = data.find(b"\n", exc.start)
        line_bytes = data[line_start : line_end if line_end >= 0 else len(data)]
        raise SpecError(
            f"{what} is not UTF-8 text ({exc.reason})",
            path=path,
            line=data.count(b"\n", 0, exc.start) + 1,
            col=len(data[line_start : exc.start].decode("utf-8")) + 1,
            # The bad bytes shown as \xNN, so the caret stands under the first of them.
            source_line=line_bytes.decode("utf-8", "backslashreplace").rstrip("\r"),
            hint="save the file as UTF-8",
        ) from None


#: A character that makes a path piece a glob pattern.
_GLOB_MAGIC = re.compile(r"[*?[]")


def pattern_matches(pattern: str, base: Path, roots: Iterable[Path]) -> list[str] | None:
    """The files rubric `pattern` matches, as paths from `base`, sorted; None when its fixed folder
    part lies outside `roots`: `/**/*.rubric` is refused before any folder is listed.

    The pattern's wildcards read as `glob.glob` reads them (`*` and `?` within a name, `**` for any
    folders, names starting with '.' only when the pattern's piece does), but its `**` does not
    enter a symlinked folder: two links back to the battery folder would make `glob.glob` list
    paths without end. Folders and dangling links are not matches.
    """
    pieces = pattern.split("/")
    fixed = next((i for i, piece in enumerate(pieces) if _GLOB_MAGIC.search(piece)), len(pieces) - 1)
    prefix = "/".join(pieces[:fixed]) or ("/" if pattern.startswith("/") else "")
    rest = "/".join(pieces[fixed:])
    folder = base / prefix
    if not is_inside(folder, roots):
        return None
    if not rest or not folder.is_dir():
        found: list[str] = []
    elif "**" in rest:
        hidden = any(piece.startswith(".") for piece in pieces[fixed:])
        found = [
            str(path.relative_to(folder))
            for path in folder.glob(rest)  # `**` skips symlinked folders
            if hidden or not any(part.startswith(".") for part in path.relative_to(folder).parts)
        ]
    else:  # a fixed depth: glob.glob cannot loop, and lists a folder faster than pathlib
        found = glob.glob(rest, root_dir=folder)
    matches = sorted(
        os.path.join(prefix, name)
        for name in found
        if os.path.exists(folder / name) and not os.path.isdir(folder / name)
    )
    _note("glob", pattern, str(base), file_digest("\0".join(matches).encode("utf-8", "surrogatepass")))
    return matches


#: A battery's manifest, in its folder.
MANIFEST = "battery.yaml"


def manifest_path(path: str | Path) -> Path:
    """The battery.yaml of `path` (a battery folder or the manifest itself); UsageError if none."""
    path = Path(path)
    if path.is_dir():
        path = path / MANIFEST
        if not path.is_file():
            raise UsageError(f"no {MANIFEST} in {path.parent}")
    elif not path.is_file():
        raise UsageError(f"no such battery: {path}")
    return path
