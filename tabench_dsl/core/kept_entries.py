"""Entries tabench keeps for itself in its cache folder, signed, so a kept entry is only ever one
this user's tabench wrote.

What a command works out at length from files it is given (a compiled battery, the scan of an
answers file) is kept in a folder of tabench's cache (`$XDG_CACHE_HOME/tabench/<kind>/`, else
`~/.cache/tabench/<kind>/`) that only this user can write: made 0700, and not used at all when it
is anyone else's or others may write it. Each entry is one file, signed with the key that signs
results indexes (`index_key`) under a personalisation of its kind, written under a new name and
renamed into place, so a reader sees a whole entry or none. Reading gives the entry's body only when
its signature checks: a file tabench did not write, a damaged one or one of another kind reads as
no entry, and the caller then works its value out afresh. Keeping is best effort: a folder that
cannot be written keeps nothing. Nothing here raises.

Entries are not kept for ever: an entry used is touched (its modification time is its last use,
to the day), and keeping one removes the entries of its kind unused for `UNUSED_DAYS` (a battery or
answers file long gone leaves nothing behind but its last month).

Checking a signature reads the whole entry (a compiled battery of 200,000 questions is 430 MB: half
a second). Once checked, an entry's file as it then was (device, inode, size, modification and
change times: any write to it changes the last) is noted in a folder of its own (`CHECKED`), signed
too, and the same file opened again that day is not read through again. An entry whose body is
read a part at a time also checks each part against a digest in its signed head (`part_digest`).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import stat
import struct
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from .errors import UsageError
from .index_key import index_key, key_path
from .safe_open import open_new

SIGNATURE_BYTES = 32
#: An entry unused for this long is removed when another entry of its kind is kept.
UNUSED_DAYS = 30
#: The length of a body's head, before it (`with_head`).
HEAD_SIZE = struct.Struct(">Q")
#: The size of the digest a head keeps of each part read later (`part_digest`).
PART_DIGEST_BYTES = 16
#: The bytes `open_entry` reads at a time to check a signature.
CHECK_CHUNK = 1 << 20
#: The folder where each entry checked is noted, as its file was then (`open_entry`).
CHECKED = "checked"
#: How long a note of a check holds: an entry is touched (its last use) when it is checked again.
CHECKED_SECONDS = 86400


def private_folder(kind: str) -> Path | None:
    """The folder of entries of `kind`, made 0700; None when it is not this user's alone."""
    folder = key_path().parent / kind
    try:
        for each in (folder.parent, folder):  # each checked before anything is made inside it
            each.mkdir(mode=0o700, parents=True, exist_ok=True)
            info = os.lstat(each)
            if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o022:
                return None
    except OSError:
        return None
    return folder


def entry_name(*parts: str) -> str:
    """A file name for the entry that `parts` (real paths, say) name: a digest, so any text is safe."""
    joined = "\0".join(parts).encode("utf-8", "surrogatepass")
    return hashlib.blake2b(joined, digest_size=20).hexdigest()


class EntryFile:
    """A kept entry whose signature has checked, left open so its body is read a part at a time
    (`read`): what a command needs of a large entry, never the whole of it in memory. The file read
    is the one that was checked: an entry is replaced by a rename, never rewritten in place, so the
    open file keeps the checked bytes."""

    def __init__(self, fd: int, size: int) -> None:
        self._fd = fd
        #: The body's size in bytes.
        self.size = size

    def read(self, start: int, length: int) -> bytes:
        """`length` bytes of the body from `start` (fewer only past its end)."""
        length = max(0, min(length, self.size - start))
        parts: list[bytes] = []
        at = SIGNATURE_BYTES + start
        while length > 0:
            part = os.pread(self._fd, length, at)
            if not part:
                break
            parts.append(part)
            at += len(part)
            length -= len(part)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def read_head(self) -> tuple[bytes, int]:
        """The head of a body written as `with_head` lays it out, and where the rest begins."""
        (size,) = HEAD_SIZE.unpack(self.read(0, HEAD_SIZE.size).rjust(HEAD_SIZE.size, b"\0"))
        return self.read(HEAD_SIZE.size, size), HEAD_SIZE.size + size

    def close(self) -> None:
        fd, self._fd = self._fd, -1
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)

    def __del__(self) -> None:
        self.close()


def open_entry(path: Path, person: bytes) -> EntryFile | None:
    """The entry at `path`, open, when its signature is this user's key's for `person` (checked
    by reading it through once, `CHECK_CHUNK` at a time, unless the same file was checked today:
    `_checked_before`); None when there is no such entry (missing, unreadable, a link, not a
    regular file, unsigned, damaged)."""
    key = index_key()
    if key is None:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    checked = None
    try:
        info = os.fstat(fd)
        if stat.S_ISREG(info.st_mode) and info.st_size >= SIGNATURE_BYTES:
            if _checked_before(path, info, key, person):
                checked = EntryFile(fd, info.st_size - SIGNATURE_BYTES)
            elif _signature_holds(fd, info.st_size, key, person):
                checked = EntryFile(fd, info.st_size - SIGNATURE_BYTES)
                with contextlib.suppress(OSError):
                    os.utime(fd)  # used now: not removed as unused
                    _note_checked(path, os.fstat(fd), key, person)
    except OSError:
        pass
    finally:
        if checked is None:
            os.close(fd)
    return checked


def _signature_holds(fd: int, size: int, key: bytes, person: bytes) -> bool:
    """Whether the entry open as `fd` (`size` bytes) carries its body's signature: read through."""
    signature = os.pread(fd, SIGNATURE_BYTES, 0)
    digest = hashlib.blake2b(key=key, digest_size=SIGNATURE_BYTES, person=person)
    at = SIGNATURE_BYTES
    while chunk := os.pread(fd, CHECK_CHUNK, at):
        digest.update(chunk)
        at += len(chunk)
    return at == size and hmac.compare_digest(signature, digest.digest())


def _check_note(path: Path, info: os.stat_result, key: bytes, person: bytes) -> tuple[Path, bytes] | None:
    """Where the check of the entry at `path` is noted, and the note its file as `info` gives it
    would have (a signature of its kind, place and `info`'s identity and times); None without a
    private folder for notes."""
    folder = private_folder(CHECKED)
    if folder is None:
        return None
    stamp = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
    digest = hashlib.blake2b(key=key, digest_size=SIGNATURE_BYTES, person=person)
    digest.update(os.fsencode(os.path.abspath(path)) + b"\0" + struct.pack(">5Q", *stamp))
    return folder / f"{entry_name(path.parent.name, path.name)}", digest.digest()


def _checked_before(path: Path, info: os.stat_result, key: bytes, person: bytes) -> bool:
    """Whether the entry's file, as `info` gives it, is the one whose signature was checked (noted
    by `_note_checked`), touched less than `CHECKED_SECONDS` ago."""
    if time.time() - info.st_mtime >= CHECKED_SECONDS:
        return False
    note = _check_note(path, info, key, person)
    if note is None:
        return False
    try:
        fd = os.open(note[0], os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return False
    with os.fdopen(fd, "rb") as f:
        return hmac.compare_digest(f.read(SIGNATURE_BYTES + 1), note[1])


def _note_checked(path: Path, info: os.stat_result, key: bytes, person: bytes) -> None:
    """Note that the entry's file, as `info` gives it, has had its signature checked."""
    note = _check_note(path, info, key, person)
    if note is None:
        return
    temporary = note[0].with_name(f"{note[0].name}.{os.getpid()}.tmp")
    try:
        with os.fdopen(open_new(temporary, 0o600), "wb") as f:
            f.write(note[1])
        os.replace(temporary, note[0])
    except (OSError, UsageError):
        with contextlib.suppress(OSError):
            os.unlink(temporary)


def with_head(head: bytes, rest: Iterable[bytes]) -> Iterator[bytes]:
    """A body in parts: the head's length (`HEAD_SIZE`), the head, then the rest, which a reader
    reads a part at a time from where `EntryFile.read_head` says it begins (taken from `rest` as
    they are written: a generator's parts are made one at a time)."""
    yield HEAD_SIZE.pack(len(head))
    yield head
    yield from rest


def part_digest(*parts: bytes) -> bytes:
    """The digest a head keeps of a part of the rest (`PART_DIGEST_BYTES`), which is read later,
    long after the entry's signature was checked: a file written in place since never reads as
    its own."""
    digest = hashlib.blake2b(digest_size=PART_DIGEST_BYTES)
    for part in parts:
        digest.update(part)
    return digest.digest()


def inputs_key(version: int, parts: Iterable[str], *, head: bytes = b"") -> bytes:
    """The key of what an entry was made from: `version`, `head` (a digest of the bytes it was
    made from), then each part with its length, so no two lists of parts give the same bytes."""
    digest = hashlib.blake2b(version.to_bytes(4, "big"), digest_size=32)
    digest.update(head)
    for part in parts:
        data = part.encode("utf-8", "surrogatepass")
        digest.update(len(data).to_bytes(8, "big"))
        digest.update(data)
    return digest.digest()


def write_entry(path: Path, body: bytes | Iterable[bytes], person: bytes) -> None:
    """Keep `body` (bytes, or its parts in order) at `path`, signed for `person`: written under a
    new name, then renamed into place."""
    key = index_key()
    if key is None:
        return
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    digest = hashlib.blake2b(key=key, digest_size=SIGNATURE_BYTES, person=person)
    try:
        fd = open_new(temporary, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(bytes(SIGNATURE_BYTES))  # the signature's place, filled once the body is known
            for part in [body] if isinstance(body, bytes) else body:
                digest.update(part)
                f.write(part)
            f.seek(0)
            f.write(digest.digest())
        os.replace(temporary, path)
        _remove_unused(path.parent)
        checked = private_folder(CHECKED)
        if checked is not None:
            _remove_unused(checked)
    except BaseException as stopped:  # an interrupt too: no half-written file left in the folder
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        if not isinstance(stopped, OSError | UsageError):
            raise


def _remove_unused(folder: Path) -> None:
    """Remove the entries in `folder` unused for `UNUSED_DAYS` (regular files only, never a link)."""
    before = time.time() - UNUSED_DAYS * 86400
    with os.scandir(folder) as found:
        for item in found:
            info = item.stat(follow_symlinks=False)
            if stat.S_ISREG(info.st_mode) and info.st_mtime < before:
                with contextlib.suppress(OSError):
                    os.unlink(item.path)
