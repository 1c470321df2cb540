"""Inspect logs bounded before Inspect's reader sees them.

An Inspect log is a data file someone else may have written, and Inspect's reader trusts it: deep
nesting grows its memory with the square of the depth, and an `.eval` archive inflates whatever
its entries hold. So a log is checked first, with a reader that cannot be made to hold more than
the limits below (`check_log`), and only a log that passes reaches Inspect:

- a `.json` file is read as an Inspect log only when it starts like one (`looks_like_json_log`:
  an object whose first key is `"version"`, as Inspect writes it); any other `.json` is JSONL;
- a `.json` log is at most `MAX_LOG_BYTES`, a regular file, nested at most `MAX_LOG_DEPTH` deep;
- an `.eval` log is a zip archive whose entries each declare at most `MAX_LOG_ENTRY_BYTES`
  inflated and `MAX_LOG_BYTES` together, checked in the central directory before anything is
  inflated; each JSON entry is then inflated (no further than it declared) and held to the same
  nesting limit.

A log that fails is a `LogRejected` at the line and column of its fault (1:1 for the archive as a
whole), so the answers reader names it like a bad line and goes on with the other files.
"""

from __future__ import annotations

import os
import re
import stat
import zipfile
import zlib
from pathlib import Path

#: The most bytes a `.json` log may hold, and an `.eval` log's entries may declare together.
MAX_LOG_BYTES = 512 * 1024 * 1024
#: The most bytes one entry of an `.eval` log may declare inflated.
MAX_LOG_ENTRY_BYTES = 64 * 1024 * 1024
#: The deepest a log's JSON may nest (Inspect's own logs nest about a dozen levels).
MAX_LOG_DEPTH = 100
#: How much of a `.json` file is read to tell whether it is an Inspect log.
_HEAD_BYTES = 4096
#: The start of an Inspect JSON log: an object whose first key is `version`.
_LOG_HEAD = re.compile(rb'\A(?:\xef\xbb\xbf)?\s*\{\s*"version"\s*:\s*\d')
#: A JSON string (skipped whole, in linear time) or a bracket.
_TOKENS = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)
#: How many bytes `_brackets` takes at a time (then on to the next quote that ends no escape).
_PIECE = 1 << 20
#: Every byte that is not a bracket (`bytes.translate` deletes them).
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
#: Both kinds of bracket as one: `[` and `{` as `(`, `]` and `}` as `)`.
_ONE_KIND = bytes.maketrans(b"[]{}", b"()()")


class LogRejected(Exception):
    """A log that is not read: `message` says why, at 1-based `line` and `col` of the file (or of
    the archive entry the message names)."""

    def __init__(self, message: str, *, line: int = 1, col: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.col = col


def looks_like_json_log(path: str | Path) -> bool:
    """True when the `.json` file at `path` starts as Inspect writes its logs."""
    try:
        with open(path, "rb") as f:
            head = f.read(_HEAD_BYTES)
    except OSError:
        return False
    return _LOG_HEAD.match(head) is not None


def check_log(path: str | Path) -> None:
    """Raise `LogRejected` unless the log at `path` is within every limit of the module docstring."""
    try:
        info = os.stat(path)
    except OSError as exc:
        raise LogRejected(f"cannot be read ({exc.strerror})") from None
    if not stat.S_ISREG(info.st_mode):
        raise LogRejected("not a regular file")
    if Path(path).suffix.lower() == ".eval":
        _check_archive(path)
        return
    if info.st_size > MAX_LOG_BYTES:
        raise LogRejected(f"{info.st_size:,} bytes, over the limit of {MAX_LOG_BYTES:,} for a log")
    with open(path, "rb") as f:
        _check_depth(f.read(MAX_LOG_BYTES + 1), "")


def _check_archive(path: str | Path) -> None:
    try:
        with zipfile.ZipFile(path) as archive:
            entries = archive.infolist()
            declared = 0
            for entry in entries:
                if entry.file_size > MAX_LOG_ENTRY_BYTES:
                    raise LogRejected(
                        f"entry {entry.filename!r} declares {entry.file_size:,} bytes inflated, over "
                        f"the limit of {MAX_LOG_ENTRY_BYTES:,}; nothing of it was inflated"
                    )
                declared += entry.file_size
            if declared > MAX_LOG_BYTES:
                raise LogRejected(
                    f"its entries declare {declared:,} bytes, over the limit of {MAX_LOG_BYTES:,}"
                )
            for entry in entries:
                if entry.filename.endswith(".json"):
                    with archive.open(entry) as member:  # stops at the size the entry declared
                        _check_depth(member.read(MAX_LOG_ENTRY_BYTES + 1), f"entry {entry.filename!r}: ")
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, ValueError, OSError) as exc:
        raise LogRejected(f"not a readable .eval archive ({exc})") from None


def _within_depth(data: bytes) -> bool:
    """True when `data` nests at most `MAX_LOG_DEPTH` deep, told at the speed of `re` and
    `bytes.translate`: strings dropped, then every byte but brackets, then the innermost pairs
    taken away once per level allowed (`bytes.replace` finds the pairs of the text it is given, so
    one pass takes one level). False for deeper nesting and for unbalanced brackets."""
    brackets = _brackets(data).translate(_ONE_KIND)
    for _ in range(MAX_LOG_DEPTH):
        if not brackets:
            return True
        brackets = brackets.replace(b"()", b"")
    return not brackets


def _brackets(data: bytes) -> bytes:
    """The brackets of `data` outside its strings, in order. Taken a piece at a time, each cut just
    before a quote that follows no backslash (a real quote, so no escape spans two pieces): in a
    piece, escaped backslashes and then escaped quotes are dropped, so every quote left opens or
    closes a string, and the parts between quotes alternate outside and inside."""
    out: list[bytes] = []
    inside = False
    start = 0
    while start < len(data):
        stop = data.find(b'"', min(start + _PIECE, len(data)))
        while stop > 0 and data[stop - 1] == 0x5C:  # a backslash: maybe an escaped quote
            stop = data.find(b'"', stop + 1)
        stop = len(data) if stop < 0 else stop
        parts = data[start:stop].replace(b"\\\\", b"").replace(b'\\"', b"").split(b'"')
        out.append(b"".join(parts[1::2] if inside else parts[0::2]).translate(None, _NOT_BRACKETS))
        inside ^= len(parts) % 2 == 0  # an odd number of quotes in the piece
        start = stop
    return b"".join(out)


def _check_depth(data: bytes, where: str) -> None:
    """`LogRejected` at the first bracket that nests `data` deeper than `MAX_LOG_DEPTH`. Most logs
    pass the fast check; only one that fails it is walked token by token, to place the fault (or to
    find its brackets unbalanced, which Inspect's reader reports)."""
    if _within_depth(data):
        return
    depth = 0
    for token in _TOKENS.finditer(data):
        char = token.group()
        if char in (b"{", b"["):
            depth += 1
            if depth > MAX_LOG_DEPTH:
                line, col = _position(data, token.start())
                raise LogRejected(
                    f"{where}JSON nested deeper than {MAX_LOG_DEPTH} levels", line=line, col=col
                )
        elif char in (b"}", b"]"):
            depth = max(depth - 1, 0)


def _position(data: bytes, offset: int) -> tuple[int, int]:
    """The 1-based line and column (in characters) of byte `offset` of `data`."""
    line_start = data.rfind(b"\n", 0, offset) + 1
    line = data.count(b"\n", 0, offset) + 1
    return line, len(data[line_start:offset].decode("utf-8", "replace")) + 1
