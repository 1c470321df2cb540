"""The reply cache: an embedded SQLite file, so a second run of the same grading calls no judge.

An entry's key is `cache_keys.cache_key`: the sha256 of everything that decides a judge's reply
(backend, endpoint, model, parameters, messages, attempt kind, the user's request additions).
The value is the raw reply content and its token counts (prompt, completion, and the parts of the
prompt read from and written to the provider's prompt cache: `records.Tokens`). Only replies are
ever stored: transport failures never reach the cache, malformed replies do (a rerun must be
reproducible).

A file made before the prompt-cache counts existed lacks their two columns: opening it adds them
(`_migrate`, in one write transaction, so two processes opening it at once add them once), with 0
for the replies already there, which is what those replies reported. Rows are written with their
columns named, so the table may gain columns again.

Writes are batched: `put` keeps the entry in memory (where `get` sees it at once) and commits every
`COMMIT_EVERY` entries (or `COMMIT_BYTES` of replies) or `COMMIT_SECONDS`, and on close. Large
batches, because a commit writes each page its entries touched and the hashed keys spread them over
the table. A process killed outright loses the entries not committed, never a result. The database
runs in WAL mode with a busy timeout, so several tabench processes can share one cache file.

A cache is the user's: it is trusted like a results file they wrote (a row planted in it forges
the verdict of the request it answers). So the default cache lives in the user's own cache folder
(`default_path`: `$XDG_CACHE_HOME/tabench/cache.sqlite`, else `~/.cache/tabench/cache.sqlite`, the
folder created 0700, the file 0600), never in the working folder, where a cloned repository could
ship one; a default cache (or its folder) that another user owns is not opened (`resolve_path`).
`--cache` and TABENCH_CACHE still choose any file. Every row is checked when read (`get`): a row
whose columns are not of their types is a miss, never a traceback or a reply. The file is never
opened through a symbolic link.

A cache that cannot be written (disk full: SQLite's "database or disk is full"; a file size limit;
an I/O error) or read raises `StorageError` naming the file: the grading stops with that one line,
and the batch that failed is rolled back whole (the results file still holds every reply).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import msgspec

from ..core.errors import StorageError, UsageError
from ..core.records import JudgeInfo, Tokens
from ..core.safe_open import open_new

#: The cache's name inside the user's cache folder (`default_path`).
DEFAULT_NAME = "cache.sqlite"
#: Commit after this many new entries, or this many bytes of reply text ... (a commit's cost is
#: mostly the pages it touches, and hashed keys spread even a few entries over most of the table:
#: at 1,024 a commit, the commits of a fast judge cost about 3 us more per reply than at 4,096)
COMMIT_EVERY = 4096
COMMIT_BYTES = 4 << 20
#: ... or when this many seconds have passed since the last commit.
COMMIT_SECONDS = 1.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS replies (
    key TEXT PRIMARY KEY,
    content TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    created REAL NOT NULL,
    cached_prompt_tokens INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID
"""

#: Columns added since the first schema, with their definitions (`_migrate` adds those missing).
_ADDED_COLUMNS: tuple[tuple[str, str], ...] = (
    ("cached_prompt_tokens", "INTEGER NOT NULL DEFAULT 0"),
    ("cache_write_tokens", "INTEGER NOT NULL DEFAULT 0"),
    ("reasoning_tokens", "INTEGER NOT NULL DEFAULT 0"),
    ("stop", "TEXT NOT NULL DEFAULT ''"),
    ("refusal", "TEXT"),
)
_INSERT = (
    "INSERT OR REPLACE INTO replies (key, content, prompt_tokens, completion_tokens, created, "
    "cached_prompt_tokens, cache_write_tokens, reasoning_tokens, stop, refusal) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_SELECT = (
    "SELECT content, prompt_tokens, completion_tokens, cached_prompt_tokens, cache_write_tokens, "
    "reasoning_tokens, stop, refusal FROM replies WHERE key = ?"
)


class CachedReply(msgspec.Struct, frozen=True):
    """A reply as the cache holds it: its text, tokens, and why it ended short (`Completion.stop`,
    `Completion.refusal`), so a cached cut-off or refused reply is read as it was."""

    content: str
    tokens: Tokens = Tokens()
    stop: str = ""
    refusal: str | None = None


def default_path(env: Mapping[str, str] | None = None) -> Path:
    """The default cache: `cache.sqlite` in `$XDG_CACHE_HOME/tabench`, else `~/.cache/tabench`."""
    env = os.environ if env is None else env
    base = Path(env["XDG_CACHE_HOME"]) if env.get("XDG_CACHE_HOME") else Path.home() / ".cache"
    return base / "tabench" / DEFAULT_NAME


def resolve_path(flag: str | None, env: Mapping[str, str] | None = None) -> Path:
    """The cache file: `--cache PATH`, else TABENCH_CACHE, else `default_path`. A default cache, or
    its folder, that another user owns is a `UsageError`: it was not named, and is not opened."""
    env = os.environ if env is None else env
    if flag:
        return Path(flag)
    if env.get("TABENCH_CACHE"):
        return Path(env["TABENCH_CACHE"])
    path = default_path(env)
    for part in (path.parent, path):
        owner = _owner(part)
        if owner is not None and owner != os.getuid():
            raise UsageError(
                f"{part}: the default reply cache belongs to another user and is not opened; "
                "name a cache with --cache PATH (or TABENCH_CACHE), or pass --no-cache"
            )
    return path


def _owner(path: Path) -> int | None:
    try:
        return path.lstat().st_uid
    except OSError:  # missing: made by this user when it is first written
        return None


def open_reply_cache(path: str | Path | None, judge: JudgeInfo) -> ReplyCache | None:
    """The reply cache at `path` for `judge`, or None: for `--no-cache` (no path) and for a
    deterministic judge (`JudgeInfo.deterministic`: nothing to cache, so no file is made)."""
    if path is None or judge.deterministic:
        return None
    return ReplyCache(path)


class CacheReader:
    """The reply cache opened read-only (`grade --dry-run`): it looks replies up and writes nothing,
    neither an entry nor the file itself (SQLite's `mode=ro`). Close it when done.

    A cache closed cleanly has no write-ahead log beside it: it is then opened `immutable`, which
    makes SQLite create no `-wal` or `-shm` file next to it either. While a log is there (a grading
    writing now, or one that crashed), the log holds replies too, and is read with the file."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        logged = Path(f"{self.path}-wal").exists()
        uri = self.path.resolve().as_uri() + ("?mode=ro" if logged else "?mode=ro&immutable=1")
        try:
            self._db = sqlite3.connect(uri, uri=True, timeout=30.0, check_same_thread=False)
            self._db.execute("SELECT 1 FROM replies LIMIT 1").fetchall()
        except sqlite3.Error as exc:
            raise UsageError(
                f"{self.path}: cannot read the reply cache ({exc}); give another --cache PATH or --no-cache"
            ) from None

    def has(self, key: str) -> bool:
        """Whether the cache holds a reply for `key`."""
        try:
            return self._db.execute("SELECT 1 FROM replies WHERE key = ?", (key,)).fetchone() is not None
        except sqlite3.Error as exc:
            raise UsageError(f"{self.path}: cannot read the reply cache ({exc})") from None

    def close(self) -> None:
        self._db.close()


def open_cache_reader(path: str | Path | None, judge: JudgeInfo) -> CacheReader | None:
    """The cache at `path` to read only, or None: for `--no-cache`, a deterministic judge (never
    cached) and a file that does not exist yet (it holds no reply, and none is made)."""
    if path is None or judge.deterministic or not Path(path).is_file():
        return None
    return CacheReader(path)


def _valid_reply(row: Sequence[object]) -> CachedReply | None:
    """The reply a cache row holds, or None for a row not of its shape (SQLite stores any type in
    any column: a BLOB, a float or a negative count is no reply this cache wrote)."""
    content, *counts, stop, refusal = row
    if not isinstance(content, str) or len(counts) != 5:
        return None
    if not all(type(n) is int and n >= 0 for n in counts):
        return None
    if not isinstance(stop, str) or not (refusal is None or isinstance(refusal, str)):
        return None
    prompt, completion, cached, written, reasoning = counts
    tokens = Tokens(prompt, completion, cached, written, reasoning)  # type: ignore[arg-type]
    return CachedReply(content, tokens, stop, refusal)


def _migrate(db: sqlite3.Connection) -> None:
    """Add the columns an older cache file lacks (`_ADDED_COLUMNS`). The check is made again inside
    the write transaction, so of two processes opening one old file, the second finds them added."""
    if not _missing_columns(db):
        return
    with db:
        db.execute("BEGIN IMMEDIATE")
        for name, definition in _missing_columns(db):
            db.execute(f"ALTER TABLE replies ADD COLUMN {name} {definition}")


def _missing_columns(db: sqlite3.Connection) -> list[tuple[str, str]]:
    have = {row[1] for row in db.execute("PRAGMA table_info(replies)")}
    return [(name, definition) for name, definition in _ADDED_COLUMNS if name not in have]


#: How often, and how long apart (seconds), opening a cache file another process holds locked is tried.
OPEN_TRIES = 50
OPEN_PAUSE = 0.1


class ReplyCache:
    """A SQLite reply cache. `hits` and `misses` count lookups; close it to commit what is pending."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        # Two processes opening a new file at once (the --workers processes, or two gradings): the
        # one that switches it to WAL holds it locked for a moment, and SQLite's busy handler does
        # not cover that switch, so the open itself is tried again shortly.
        for attempt in range(OPEN_TRIES):
            db = None
            try:
                self._create()
                db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None, check_same_thread=False)
                db.execute("PRAGMA busy_timeout = 30000")
                db.execute("PRAGMA journal_mode = WAL")
                db.execute("PRAGMA synchronous = NORMAL")
                db.execute(_SCHEMA)
                _migrate(db)
                break
            except (OSError, sqlite3.Error) as exc:
                if db is not None:
                    db.close()
                locked = isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc)
                if locked and attempt < OPEN_TRIES - 1:
                    time.sleep(OPEN_PAUSE)
                    continue
                raise UsageError(
                    f"{self.path}: cannot open the reply cache ({exc}); "
                    "give another --cache PATH or --no-cache"
                ) from None
        assert db is not None  # the loop either connected or raised
        self._db = db
        self._closed = False
        self._pending: dict[str, CachedReply] = {}
        self._pending_bytes = 0
        #: Set once a commit failed: the same disk would refuse the retry at close, so none is made.
        self._broken = False
        self._last_commit = time.monotonic()
        self.hits = 0
        self.misses = 0

    def _create(self) -> None:
        """Make the cache's folder (0700 when it is new) and the file (0600), never through a link:
        SQLite follows one, so a link in its place is refused here."""
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if self.path.is_symlink():
            raise UsageError(f"{self.path} is a symbolic link; tabench never writes through a link")
        with contextlib.suppress(FileExistsError):  # there already: SQLite checks what it holds
            os.close(open_new(self.path))

    def get(self, key: str) -> CachedReply | None:
        """The cached reply for `key`, or None (a row that is not of the cache's shape is a miss)."""
        reply = self._pending.get(key)
        if reply is None:
            try:
                row = self._db.execute(_SELECT, (key,)).fetchone()
            except sqlite3.Error as exc:  # a damaged file, an I/O error
                raise self._failure("cannot read the reply cache", exc) from None
            if row is not None:
                reply = _valid_reply(row)
        if reply is None:
            self.misses += 1
        else:
            self.hits += 1
        return reply

    def put(
        self, key: str, content: str, tokens: Tokens, *, stop: str = "", refusal: str | None = None
    ) -> None:
        """Remember a reply; it is committed with the next batch."""
        self._pending[key] = CachedReply(content, tokens, stop, refusal)
        self._pending_bytes += len(content)
        if (
            len(self._pending) >= COMMIT_EVERY
            or self._pending_bytes >= COMMIT_BYTES
            or time.monotonic() - self._last_commit >= COMMIT_SECONDS
        ):
            self.commit()

    def commit(self) -> None:
        """Write the pending entries in one transaction."""
        self._last_commit = time.monotonic()
        self._pending_bytes = 0
        if not self._pending:
            return
        now = time.time()
        rows = [
            (
                key,
                r.content,
                r.tokens.prompt,
                r.tokens.completion,
                now,
                r.tokens.cached_prompt,
                r.tokens.cache_write,
                r.tokens.reasoning,
                r.stop,
                r.refusal,
            )
            for key, r in self._pending.items()
        ]
        # In key order: each insert then walks down next to the one before it, through pages still
        # in SQLite's cache (hashed keys in arrival order land all over the table).
        rows.sort()
        try:
            # BEGIN ... COMMIT, retried by sqlite under busy_timeout when another process writes.
            with self._db:
                self._db.execute("BEGIN IMMEDIATE")
                self._db.executemany(_INSERT, rows)
        except sqlite3.Error as exc:  # rolled back by `with`: the file keeps every earlier batch whole
            self._broken = True
            self._pending.clear()
            raise self._failure("cannot write the reply cache", exc) from None
        self._pending.clear()

    def _failure(self, doing: str, exc: sqlite3.Error) -> StorageError:
        return StorageError(f"{self.path}: {doing} ({exc}); give another --cache PATH or --no-cache")

    def close(self) -> None:
        """Commit what is pending and close the database. Safe to call twice."""
        if self._closed:
            return
        try:
            if not self._broken:
                self.commit()
        finally:
            self._db.close()
            self._closed = True

    def __enter__(self) -> ReplyCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
