"""The results file: append-only JSONL of `Record`s, one line per graded answer, never rewritten.

`ResultsWriter` appends each record as one `write` of one complete line the moment its answer is
graded, so Ctrl-C or a crash never leaves a record half in a Python buffer; `os.fsync` is batched
(every `FSYNC_EVERY` records or `FSYNC_SECONDS`, and on close) and runs in a helper thread, because
syncing each line, or waiting for the disk on the event loop, would bound grading by the disk.
A crash (kill -9, power loss) can still leave a torn last line: opening the file for append first
cuts it back to the end of its last good line, so the next record starts on a line of its own.
Earlier lines are never touched. A writer holds an exclusive `flock` on the file, so a second
grading cannot append to it at the same time. A write the disk refuses (full, over the file size
limit, an I/O error) takes back its partial line and raises `StorageError`: the records before it
stay whole, and `--resume` continues from them once there is room.

Reading: `iter_records` streams the records (bad lines are reported and skipped, with the column
of bad text; a byte order mark is dropped: `jsonl.decode_line`), and
`iter_light_records` (`light_records`) the same lines without their texts, for counting; the
(system, question) pairs whose last record is final, which `--resume` skips, come through the
index beside the file (`standing_verdicts.done_pairs`).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Protocol

import msgspec

from ..core.errors import StorageError, UsageError
from ..core.jsonl import is_json
from ..core.records import Record, record_decoder
from ..core.safe_open import open_for_append, open_no_link
from .fast_lines import decoded_lines
from .light_records import bad_line_reporter

try:
    import fcntl
except ImportError:  # not on Windows: there, nothing stops two gradings sharing one file
    fcntl = None  # type: ignore[assignment]

#: fsync after this many records ...
FSYNC_EVERY = 256
#: ... or when this many seconds have passed since the last fsync, whichever comes first.
FSYNC_SECONDS = 0.5
_TAIL_CHUNK = 1 << 16
#: What a refused append means for the records: its partial line is taken back, the rest stands.
_WRITE_KEPT = "every record written before it is kept"
#: What a failed fsync means for the records: the disk did not confirm them.
_SYNC_LOST = "records written since the last sync may not be on disk"


def repair_tail(path: str | Path) -> int:
    """Cut a torn last line off `path`; return how many bytes were removed (0 when it was whole).

    A last line is torn when it has no final line break, or when it is not JSON at all (a crash can
    leave a line of zero bytes on some file systems). A line that is JSON but not a record this
    version reads (written by a newer tabench, or edited by hand) is kept: readers skip it with a
    warning, and nothing whole is ever cut. Only that one last line is ever removed. The check is
    JSON only, no record shape, so the decisions file (`decisions.append_decision`) is repaired by
    the same rule.
    """
    with os.fdopen(open_no_link(path, os.O_RDWR), "r+b") as f:
        size = f.seek(0, os.SEEK_END)
        if size == 0:
            return 0
        good_end = _last_line_start(f, size - 1) if _byte_at(f, size - 1) != b"\n" else size
        if good_end == size:
            # The file ends with a line break: check that its last line is JSON.
            start = _last_line_start(f, size - 1)
            f.seek(start)
            if not is_json(f.read(size - start)):
                good_end = start
        if good_end < size:
            f.truncate(good_end)
            f.flush()
            os.fsync(f.fileno())
        return size - good_end


def _byte_at(f, offset: int) -> bytes:
    f.seek(offset)
    return f.read(1)


def _last_line_start(f, end: int) -> int:
    """Offset just after the last line break strictly before `end` (0 when there is none)."""
    pos = end
    while pos > 0:
        lo = max(0, pos - _TAIL_CHUNK)
        f.seek(lo)
        chunk = f.read(pos - lo)
        nl = chunk.rfind(b"\n")
        if nl >= 0:
            return lo + nl + 1
        pos = lo
    return 0


class RecordSink(Protocol):
    """Where a grading writes each record as it finishes: a `ResultsWriter`, or anything that
    keeps records another way (the Python API without a results file)."""

    def write(self, record: Record) -> None: ...


class ResultsWriter:
    """Append records to a results file, one whole line per `write` call.

    Use as a context manager or call `close()`: it fsyncs what is written. `count` is how many
    records this writer appended.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Unbuffered: every record reaches the operating system in the write that makes it.
        self._fd = open_for_append(self.path)
        if fcntl is not None:
            # Two gradings appending to one file would grade the same answers twice.
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(self._fd)
                self._fd = -1
                raise UsageError(
                    f"{self.path} is being written by another tabench grade; wait for it or use another --out"
                ) from None
        #: Bytes cut off a torn last line when the file was opened.
        self.repaired = repair_tail(self.path)
        # Where the last whole line ends: a failed write is cut back to it. Only this writer
        # appends (it holds the lock), so counting what it writes keeps this true.
        self._end = os.lseek(self._fd, 0, os.SEEK_END)
        #: Bytes the file held once opened (its torn last line cut): 0 for a file this writer fills.
        self.opened_size = self._end
        self._encoder = msgspec.json.Encoder()
        self._buffer = bytearray()
        self._unsynced = 0
        self._last_sync = time.monotonic()
        # fsync runs in a helper thread: on a busy disk it takes milliseconds, which the event loop
        # (and every judge call in flight) would otherwise wait for.
        self._syncer: ThreadPoolExecutor | None = None
        self._sync_future: Future[None] | None = None
        self.count = 0

    def write(self, record: Record) -> None:
        """Append one record as one line and hand it to the OS now; fsync in batches."""
        buf = self._buffer
        buf.clear()
        self._encoder.encode_into(record, buf)
        buf.extend(b"\n")
        try:
            written = os.write(self._fd, buf)
            if written < len(buf):  # a short write (a disk filling up): the rest, before this returns
                view = memoryview(buf)[written:]
                while view:
                    view = view[os.write(self._fd, view) :]
        except OSError as exc:
            self._take_back()
            raise self._failure("cannot append a record", exc, _WRITE_KEPT) from None
        self._end += len(buf)
        self.count += 1
        self._unsynced += 1
        if self._unsynced >= FSYNC_EVERY or time.monotonic() - self._last_sync >= FSYNC_SECONDS:
            self.sync()

    def _take_back(self) -> None:
        """Cut the file back to its last whole line, so a refused write leaves no torn line (best
        effort: if even that fails, the next open repairs the tail)."""
        with contextlib.suppress(OSError):
            os.ftruncate(self._fd, self._end)

    def _failure(self, doing: str, exc: OSError, kept: str) -> StorageError:
        return StorageError(f"{self.path}: {doing}: {exc.strerror or exc}; {kept}")

    def _check_sync(self) -> None:
        """Raise the error of a finished background fsync: the kernel reports a lost write-back
        to one fsync only, so if this one is not asked, no later call would hear of it."""
        future = self._sync_future
        if future is not None and future.done():
            self._sync_future = None
            exc = future.exception()
            if isinstance(exc, OSError):
                raise self._failure("cannot sync results to disk", exc, _SYNC_LOST) from None

    def sync(self) -> None:
        """Start an fsync of what was written so far, in the helper thread (one at a time)."""
        self._last_sync = time.monotonic()
        if not self._unsynced:
            return
        if self._sync_future is not None and not self._sync_future.done():
            return  # the one running covers most of it; the next batch or close() covers the rest
        self._check_sync()
        if self._syncer is None:
            self._syncer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tabench-fsync")
        self._unsynced = 0
        self._sync_future = self._syncer.submit(os.fsync, self._fd)

    @property
    def end(self) -> int:
        """Where the last whole line this writer wrote ends: the file's size, while it holds the lock."""
        return self._end

    def close(self) -> None:
        """Wait for the helper thread, fsync everything, close. Safe to call twice."""
        if self._fd < 0:
            return
        try:
            if self._syncer is not None:
                self._syncer.shutdown(wait=True)
                self._check_sync()
            try:
                os.fsync(self._fd)
            except OSError as exc:
                raise self._failure("cannot sync results to disk", exc, _SYNC_LOST) from None
        finally:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> ResultsWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def iter_records(path: str | Path, *, on_problem: Callable[[str], None] | None = None) -> Iterator[Record]:
    """Stream the records of a results file in file order.

    A line that is not a record is reported to `on_problem` as `path:line: message` and skipped;
    a torn last line (no final line break) is skipped the same way.
    """
    yield from decoded_lines(path, record_decoder, bad_line_reporter(path, on_problem))
