"""The index beside a results file: values computed from it once, kept for the next command.

`runs/x.jsonl` gets `runs/x.index.sqlite` (SQLite, the standard library's, as the reply cache). It
holds named values (`variant`s: the standing verdict of each pair, a command's totals), each with
the `Extent` of the results file it was computed from. `results.jsonl` stays the one source of
truth, appended to and never rewritten; the index is a convenience any command may throw away:

- A value is used only for the bytes it was computed from. Its `Extent` records how many bytes it
  covers and hashes of their first and last 64 KiB and of 64 blocks spread between, with the file's
  size, modification time and inode: a value bound to the whole file (`load_exact`) needs all of
  them equal; one that can be extended by the lines appended since (`load_prefix`) needs the bytes
  it covers unchanged. Anything else (a truncated, rewritten, foreign or stale file) is not used.
- Every value is signed (`index_key`) together with its variant, its extent and the index's format
  version: a value tabench did not write, or wrote for another format, is never read.
- An index holds one value of each kind (one totals, one report, one diff, one map of the standing
  verdicts): storing one replaces the one before, so it never grows past what the file needs.
- Any problem with the index itself (missing, corrupt, unreadable, a folder that cannot be written,
  a symbolic link in its place, a value of the wrong type or of absurd size) means only that the
  command reads the results file as it would without an index. Nothing here raises.
- The index is never written through a link: a link in its place is left alone and not used, and
  a new index file is created with `O_EXCL | O_NOFOLLOW` (`safe_open.open_new`). SQLite keeps its
  rollback journal in memory, so no second file appears beside it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import stat
from collections.abc import Callable, Iterable
from pathlib import Path

import msgspec

from ..core.errors import UsageError
from ..core.index_key import index_key, sign, signed_by
from ..core.safe_open import open_new

#: Bumped when what a value means changes: a value of another version fails its signature.
INDEX_VERSION = 1
INDEX_SUFFIX = ".index.sqlite"
#: Bytes hashed at the start and at the end of what a value covers.
EDGE_BYTES = 1 << 16
#: Blocks hashed between them, and each block's size.
SAMPLES = 64
SAMPLE_BYTES = 1 << 12
#: Bytes of values `store_many` writes in one transaction.
BATCH_BYTES = 64 << 20
#: A value larger than the results file by more than this is no value tabench wrote.
VALUE_SLACK = 16 << 20

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS value_of ("
    "variant TEXT PRIMARY KEY, extent BLOB NOT NULL, signature BLOB NOT NULL, body BLOB NOT NULL)"
)


class Extent(msgspec.Struct, array_like=True, frozen=True):
    """The part of a results file a value was computed from: `end` bytes (the end of its last whole
    line), hashes of those bytes, and the file's `size`, `mtime_ns` and `inode` at the time."""

    end: int
    hashes: bytes
    size: int
    mtime_ns: int
    inode: int


def index_path(results: str | Path) -> Path:
    """`runs/x.jsonl` -> `runs/x.index.sqlite` (a name without `.jsonl` gets the suffix added)."""
    path = Path(results)
    stem = path.name[: -len(".jsonl")] if path.name.endswith(".jsonl") else path.name
    return path.with_name(stem + INDEX_SUFFIX)


def measure(results: str | Path) -> Extent | None:
    """The extent of `results` as it is now (its whole lines), or None when it cannot be read."""
    try:
        with open(results, "rb") as f:
            info = os.fstat(f.fileno())
            end = _whole_lines_end(f, info.st_size)
            return Extent(end, _hashes(f, end), info.st_size, info.st_mtime_ns, info.st_ino)
    except OSError:
        return None


def starts_with(results: str | Path, extent: Extent) -> bool:
    """Whether `results` still begins with the bytes `extent` covers (it may have grown since)."""
    try:
        with open(results, "rb") as f:
            if os.fstat(f.fileno()).st_size < extent.end:
                return False
            return _hashes(f, extent.end) == extent.hashes and _byte_before(f, extent.end) in (b"", b"\n")
    except OSError:
        return False


def _whole_lines_end(f, size: int) -> int:
    """The offset just after the last line break of the file (0 when it has none)."""
    pos = size
    while pos > 0:
        low = max(0, pos - EDGE_BYTES)
        f.seek(low)
        found = f.read(pos - low).rfind(b"\n")
        if found >= 0:
            return low + found + 1
        pos = low
    return 0


def _byte_before(f, end: int) -> bytes:
    if end == 0:
        return b""
    f.seek(end - 1)
    return f.read(1)


def _hashes(f, end: int) -> bytes:
    """sha256 of the first and last `EDGE_BYTES` before `end` and of `SAMPLES` blocks between."""
    digest = hashlib.sha256(end.to_bytes(8, "big"))
    f.seek(0)
    digest.update(f.read(min(end, EDGE_BYTES)))
    stride = max(end // SAMPLES, 1)
    for number in range(SAMPLES if end > 2 * EDGE_BYTES else 0):
        f.seek(number * stride)
        digest.update(f.read(min(SAMPLE_BYTES, end - number * stride)))
    f.seek(max(0, end - EDGE_BYTES))
    digest.update(f.read(end - max(0, end - EDGE_BYTES)))
    return digest.digest()


class ResultsIndex:
    """The index of one results file: `load_exact` / `load_prefix` read a value back when it still
    holds, `store` keeps one. Open it with `open_index`."""

    def __init__(self, results: Path, key: bytes) -> None:
        self.results = results
        self.path = index_path(results)
        self._key = key

    def load_exact(self, variant: str) -> bytes | None:
        """The value `variant` when it was computed from the file exactly as it is now."""
        now = measure(self.results)
        return self.load_at(variant, now) if now is not None else None

    def load_at(self, variant: str, extent: Extent) -> bytes | None:
        """The value `variant` when it was computed from exactly `extent` (the file as measured by
        the caller: the parts of one value, each loaded against one measure, are of one file)."""
        found = self._load(variant)
        return found[1] if found is not None and found[0] == extent else None

    def load_prefix(self, variant: str) -> tuple[Extent, bytes] | None:
        """The value `variant` and the extent it covers, when the file still starts with those
        bytes (the lines after `extent.end` are the ones appended since)."""
        found = self._load(variant)
        return found if found is not None and starts_with(self.results, found[0]) else None

    def holds(self, variant: str) -> bool:
        """Whether the index holds a value `variant`, of whatever extent, unchecked: for deciding
        how to read (`load_prefix` checks a value before it is used)."""
        if not _regular_file(self.path) or not _header_is_ours(self.path):
            return False
        try:
            uri = self.path.absolute().as_uri() + "?mode=ro"
            with contextlib.closing(sqlite3.connect(uri, uri=True)) as db:
                if not _schema_is_ours(db):
                    return False
                return (
                    db.execute("SELECT 1 FROM value_of WHERE variant = ?", (variant,)).fetchone() is not None
                )
        except (sqlite3.Error, OSError, ValueError):
            return False

    def _load(self, variant: str) -> tuple[Extent, bytes] | None:
        return self._load_many([variant])[0]

    def load_many_at(self, variants: list[str], extent: Extent) -> list[bytes | None]:
        """`load_at` of each of `variants`, read in one connection (the pages of one value)."""
        return [
            found[1] if found is not None and found[0] == extent else None
            for found in self._load_many(variants)
        ]

    def _load_many(self, variants: list[str]) -> list[tuple[Extent, bytes] | None]:
        """Each of `variants` with the extent it covers, when it is one tabench signed (else None)."""
        if not _regular_file(self.path) or not _header_is_ours(self.path):
            return [None] * len(variants)
        try:
            uri = self.path.absolute().as_uri() + "?mode=ro"
            with contextlib.closing(sqlite3.connect(uri, uri=True)) as db:
                if not _schema_is_ours(db):
                    return [None] * len(variants)
                limit = self._size_limit()
                rows = [
                    db.execute(
                        "SELECT extent, signature, body FROM value_of WHERE variant = ? "
                        "AND length(body) <= ? AND length(extent) <= 4096",
                        (variant, limit),
                    ).fetchone()
                    for variant in variants
                ]
        except (sqlite3.Error, OSError, ValueError):
            return [None] * len(variants)
        return [self._checked(variant, row) for variant, row in zip(variants, rows, strict=True)]

    def _checked(self, variant: str, row: tuple | None) -> tuple[Extent, bytes] | None:
        """A row read back: its extent and body when its signature checks, else None."""
        if row is None or not all(isinstance(part, bytes) for part in row):
            return None
        extent, signature, body = row
        if not signed_by(self._key, signature, *self._signed(variant, extent, body)):
            return None
        try:
            return msgspec.msgpack.decode(extent, type=Extent), body
        except (msgspec.DecodeError, msgspec.ValidationError):
            return None

    def store(self, variant: str, extent: Extent, body: bytes) -> None:
        """Keep `body` as the value `variant` computed over `extent` (best effort: an index that
        cannot be written is left as it was, and the next command computes the value again).
        It replaces the value of its kind (the name before its first ':') kept before."""
        self.store_many(extent, lambda: [(variant, body)], replacing=variant.split(":", 1)[0] + ":")

    def store_many(
        self,
        extent: Extent,
        values: Callable[[], Iterable[tuple[str, bytes]]],
        *,
        replacing: str | tuple[str, ...],
    ) -> None:
        """Keep each (variant, body) that `values()` yields as computed over `extent`, every other
        value whose name starts with `replacing` (or one of them) removed (the pages of a value
        kept for a larger file do not outlive it). The values are signed and written in
        transactions of about `BATCH_BYTES`, never all held at once: each is whole and signed on
        its own, and a reader that finds one missing reads the results file. Best effort, as
        `store`."""
        for fresh in (False, True):  # a corrupt file is replaced once, then left alone
            try:
                self._write(extent, values(), replacing, fresh=fresh)
                return
            except (sqlite3.OperationalError, sqlite3.DataError):  # locked, read-only, full, or a
                return  # value over SQLite's length limit (1e9 bytes): left as it is, never made anew
            except sqlite3.DatabaseError:  # not a database, or a damaged one: made anew
                continue
            except (sqlite3.Error, OSError, UsageError, ValueError):
                return

    def _write(
        self,
        extent: Extent,
        values: Iterable[tuple[str, bytes]],
        replacing: str | tuple[str, ...],
        *,
        fresh: bool,
    ) -> None:
        if fresh or not os.path.lexists(self.path):
            if os.path.lexists(self.path):
                if not _regular_file(self.path):
                    return  # a link or a folder in its place: never written through, never removed
                os.unlink(self.path)
            os.close(open_new(self.path, 0o644))
        if not _regular_file(self.path):
            return
        if not _header_is_ours(self.path):
            raise sqlite3.DatabaseError("not a results index")
        encoded = msgspec.msgpack.encode(extent)
        kept: set[str] = set()
        insert = "INSERT OR REPLACE INTO value_of (variant, extent, signature, body) VALUES (?, ?, ?, ?)"
        with contextlib.closing(sqlite3.connect(self.path, timeout=5.0)) as db:
            # Before anything is written: no journal file is made beside the index (a name there
            # could be a link someone planted).
            db.execute("PRAGMA journal_mode = MEMORY")
            db.execute(_SCHEMA)
            if not _schema_is_ours(db):  # a view, a trigger, another table: not one tabench made
                raise sqlite3.DatabaseError("not a results index")
            # Committed every `BATCH_BYTES` (the journal, held in memory, then holds no more than
            # what one batch replaces); each value is whole and signed on its own.
            batch: list[tuple[str, bytes, bytes, bytes]] = []
            held = 0
            for variant, body in values:
                if held + len(body) > BATCH_BYTES and batch:
                    with db:
                        db.executemany(insert, batch)
                    batch, held = [], 0
                kept.add(variant)
                batch.append((variant, encoded, sign(self._key, *self._signed(variant, encoded, body)), body))
                held += len(body)
            with db:
                db.executemany(insert, batch)
                # One value of each kind: the totals of the last decisions and options asked for,
                # not of every state there ever was.
                stale = [
                    variant
                    for prefix in ((replacing,) if isinstance(replacing, str) else replacing)
                    for (variant,) in db.execute(
                        "SELECT variant FROM value_of WHERE substr(variant, 1, ?) = ?",
                        (len(prefix), prefix),
                    ).fetchall()
                    if variant not in kept
                ]
                db.executemany("DELETE FROM value_of WHERE variant = ?", [(variant,) for variant in stale])

    def _signed(self, variant: str, extent: bytes, body: bytes) -> tuple[bytes, ...]:
        return (INDEX_VERSION.to_bytes(4, "big"), variant.encode("utf-8"), extent, body)

    def _size_limit(self) -> int:
        try:
            return os.stat(self.results).st_size + VALUE_SLACK
        except OSError:
            return 0


#: What `sqlite_master` holds in an index tabench made: its one table and that table's key.
_OUR_SCHEMA = [
    ("index", "sqlite_autoindex_value_of_1", None),
    ("table", "value_of", _SCHEMA.replace("IF NOT EXISTS ", "")),
]
#: SQLite steps a statement may take before it is stopped: reading one row by its key takes a few
#: hundred; a hostile file (a recursive view, a trigger) is cut off here rather than run for ever.
_MAX_STEPS = 1_000_000


def _schema_is_ours(db: sqlite3.Connection) -> bool:
    """Whether the file holds exactly the table tabench makes (no view, trigger or other table,
    whose SQL would run on a read or a write), with a cap on the work any statement may do."""
    steps = 0

    def stop_runaway() -> int:
        nonlocal steps
        steps += 1
        return 1 if steps > _MAX_STEPS // 1000 else 0

    db.set_progress_handler(stop_runaway, 1000)
    rows = db.execute("SELECT type, name, sql FROM sqlite_master ORDER BY type, name").fetchall()
    return rows == _OUR_SCHEMA


#: The first bytes of every SQLite 3 database file.
_SQLITE_MAGIC = b"SQLite format 3\x00"


def _header_is_ours(path: Path) -> bool:
    """Whether `path` is empty (made a moment ago) or an SQLite file in rollback-journal mode, as
    tabench makes them. A file in WAL mode is not: SQLite would open a `-wal` and a `-shm` file
    beside it, names that could be links someone planted."""
    try:
        with open(path, "rb") as f:
            header = f.read(20)
    except OSError:
        return False
    return header == b"" or (header[:16] == _SQLITE_MAGIC and header[18:20] == b"\x01\x01")


def _regular_file(path: Path) -> bool:
    """True for a regular file (never a link, dangling or not, nor a folder)."""
    try:
        return stat.S_ISREG(path.lstat().st_mode)
    except OSError:
        return False


def open_index(results: str | Path) -> ResultsIndex | None:
    """The index of `results`, or None when there is no signing key (then none is used)."""
    key = index_key()
    return None if key is None else ResultsIndex(Path(results), key)
