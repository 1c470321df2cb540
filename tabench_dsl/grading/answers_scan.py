"""What reading a JSONL answers file found, kept so that `grade --resume` does not decode it again.

A resume reads every answer only to learn that its pair is done: at a million answers (150 MB) the
decoding alone takes a second, run after run, though the file has not changed. So a resumed
grading that reads an answers file to its end keeps a scan of it (`ScanRecorder`): each good
answer's system, question and byte offset, and every problem and warning the reader reported, at
its place among the answers. The next resume over the very same bytes replays the scan
(`scan_items`) instead of decoding: the done answers are noted in blocks, as the reader notes them,
each problem and warning is reported again where it was, and only the answers still to grade are
read, each from its offset.

The scan is used only for the same inputs: the SHA-256 of the file's bytes (hashed again before
every use: about a tenth of a second for 150 MB; of each half, when two processes read it, each
hashing its own, `content_key`), the battery's question ids (an unknown question is
a problem) and the reading code (tabench's version, the reader's modules, msgspec's version). It is
kept in tabench's cache folder (`core.kept_entries`: this user's, signed), one entry per answers
file's real path; anything else (no entry, a damaged or foreign one, another file's bytes) reads
the file as ever. The answers are read from the file whose bytes were hashed, kept open; one read
from its offset that is not the one the scan names, or read once the file was written to since its
bytes were hashed (its size or modification time changed), stops the run with a `UsageError`.

Decided: only a run reading one JSONL file keeps or replays a scan (a duplicate across files names
the first file's line, which a scan of one file cannot hold); CSV files and Inspect logs are read
as ever.

The columns (systems, questions, offsets: 16 bytes an answer, 160 MB at 10,000,000 answers) are
kept after the scan's head and read from the entry a chunk at a time (`Columns`), each chunk
checked against the digest the head keeps for it, so a replay holds one chunk at a time.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import io
import itertools
import os
import stat
from array import array
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import BinaryIO

import msgspec

from ..core.errors import UsageError
from ..core.jsonl import BadLine, decode_line
from ..core.kept_entries import (
    PART_DIGEST_BYTES,
    EntryFile,
    entry_name,
    inputs_key,
    open_entry,
    part_digest,
    private_folder,
    with_head,
    write_entry,
)
from ..core.records import Answer
from ..core.version import __version__

#: Bumped when what a scan holds changes: a scan of another version is never read.
CACHE_VERSION = 3
FOLDER = "answers"
PERSON = b"tabench-answers"
#: Good answers handed over at a time (`Chunk`): the reader asks if all of them are done at once.
CHUNK = 4096
_decoder = msgspec.json.Decoder(Answer)


class Note(msgspec.Struct, array_like=True, frozen=True):
    """A problem (or a warning) the reader reported, after `after` good answers."""

    after: int
    warning: bool
    line: int
    message: str
    col: int | None = None


class Scan(msgspec.Struct, array_like=True):
    """A file's scan, as its entry's head: its key, the names, how many good answers there are, the
    notes in file order, and a digest (`kept_entries.part_digest`) of each `CHUNK` of the columns that follow
    the head: each good answer's system and question (indexes into `names`, as `array('I')`
    bytes), then each one's offset (`array('Q')` bytes)."""

    inputs: bytes
    names: list[str]
    count: int
    notes: list[Note]
    digests: bytes
    #: Where the file's second half begins when two processes read it (`answers_halves`), each
    #: hashing its own (`content_key`); 0 when one read it all.
    cut: int = 0


class Columns:
    """The columns of a kept scan, read from its checked entry a chunk at a time (a scan of
    10,000,000 answers holds 160 MB of them), each chunk checked against its digest in the head:
    the entry was checked when opened, and one changed in place since is never read as a scan."""

    def __init__(self, entry: EntryFile, start: int, scan: Scan) -> None:
        self.entry = entry
        self.start = start
        self.scan = scan

    def chunk(self, first: int, last: int) -> tuple[array, array, array]:
        """The systems, questions and offsets of good answers `first` to `last` (within a chunk)."""
        count, read = self.scan.count, self.entry.read
        parts = (
            read(self.start + 4 * first, 4 * (last - first)),
            read(self.start + 4 * (count + first), 4 * (last - first)),
            read(self.start + 8 * count + 8 * first, 8 * (last - first)),
        )
        at = first // CHUNK * PART_DIGEST_BYTES
        kept = self.scan.digests[at : at + PART_DIGEST_BYTES]
        if first % CHUNK or last - first > CHUNK or part_digest(*parts) != kept:
            raise UsageError("tabench's kept scan of an answers file changed while in use: grade again")
        return array("I", parts[0]), array("I", parts[1]), array("Q", parts[2])


class Chunk:
    """Good answers in file order, for the reader to note: their systems and questions, and
    `answer(i)`, the i-th one read from its offset in the file."""

    def __init__(self, file, systems: list[str], questions: list[str], offsets: array, stamp: Stamp) -> None:
        self.file = file
        self.systems = systems
        self.questions = questions
        self.offsets = offsets
        self.stamp = stamp

    def answer(self, i: int) -> Answer:
        self.file.seek(self.offsets[i])
        try:
            answer = decode_line(_decoder, self.file.readline())
        except BadLine:
            answer = None
        written = stamp_of(self.file) != self.stamp  # written to since its bytes were checked
        if (
            written
            or answer is None
            or (answer.system, answer.question) != (self.systems[i], self.questions[i])
        ):
            raise UsageError(f"{self.file.name}: the answers file changed while it was read; grade again")
        return Answer(self.systems[i], self.questions[i], answer.answer)


def scannable(path: str) -> bool:
    """Whether a scan of `path` can be kept and replayed: a regular file (a pipe read to hash it
    would be read up)."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


#: A file's size and modification time (`stamp_of`): a write to it changes them (its renaming or
#: removal does not: the bytes read through a file kept open stay the ones hashed).
Stamp = tuple[int, int]


def stamp_of(f: BinaryIO) -> Stamp:
    info = os.fstat(f.fileno())
    return info.st_size, info.st_mtime_ns


def kept_scan(path: str, questions: Collection[str]) -> tuple[Columns, BinaryIO, Stamp] | None:
    """The scan kept for the file at `path` when it was made from the same bytes, questions and
    code, with the file open (the one whose bytes were checked, which the replay reads its answers
    from: a file renamed into its place meanwhile is another) and its `Stamp` before they were
    (a write to it since stops the replay); None otherwise."""
    where = _entry_path(path)
    entry = None if where is None else open_entry(where, PERSON)
    if entry is None:
        return None
    f = None
    inputs = None
    try:
        body, start = entry.read_head()
        scan = msgspec.msgpack.decode(body, type=Scan)
        chunks = -(-scan.count // CHUNK)
        if entry.size == start + 16 * scan.count and len(scan.digests) == chunks * PART_DIGEST_BYTES:
            f = open(path, "rb")  # noqa: SIM115 -- handed to `scan_items`, which closes it
            stamp = stamp_of(f)
            inputs = _inputs(_content_of(f, scan.cut), questions)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        inputs = None
    if f is not None and inputs is not None and scan.inputs == inputs:
        f.seek(0)
        return Columns(entry, start, scan), f, stamp
    entry.close()
    if f is not None:
        f.close()
    return None


def scan_items(columns: Columns, f: BinaryIO, stamp: Stamp) -> Iterator[Note | Chunk]:
    """The scan's notes and chunks of good answers, in the file's order, the answers read from
    `f` (`kept_scan`'s, as it was at `stamp`), which is closed once they are (and the entry)."""
    scan = columns.scan
    with f:
        try:
            done = 0
            for after, notes in itertools.groupby(scan.notes, key=lambda note: note.after):
                yield from _chunks(f, stamp, columns, done, after)
                done = after
                yield from notes
            yield from _chunks(f, stamp, columns, done, scan.count)
        finally:
            columns.entry.close()


def _chunks(f: BinaryIO, stamp: Stamp, columns: Columns, start: int, stop: int) -> Iterator[Chunk]:
    """The chunks of good answers `start` to `stop`, cut where the columns' chunks are cut."""
    names = columns.scan.names.__getitem__
    first = start
    while first < stop:
        boundary = (first // CHUNK + 1) * CHUNK
        last = min(boundary, stop, columns.scan.count)
        if last <= first:
            return
        base = first // CHUNK * CHUNK
        systems, questions, offsets = columns.chunk(base, min(boundary, columns.scan.count))
        cut = slice(first - base, last - base)
        yield Chunk(f, list(map(names, systems[cut])), list(map(names, questions[cut])), offsets[cut], stamp)
        first = last


class ScanRecorder:
    """Builds the scan of one JSONL file as the reader reads it: `read` each block of lines read,
    then `good`/`good_block` its good answers and `note` its problems; `keep` once the file is
    read to its end."""

    def __init__(self, path: str, questions: Collection[str], start: int = 0) -> None:
        """`start`: the offset of the first line read (one half of the file, `answers_halves`)."""
        self.path = path
        self.questions = questions
        self._digest = hashlib.sha256()
        self._numbers: dict[str, int] = {}
        self._systems, self._questions, self._offsets = array("I"), array("I"), array("Q")
        self._notes: list[Note] = []
        self._end = start  # bytes read before the block
        self._first = 1  # the block's first line number
        self._starts: list[int] = []  # each line of the block's offset
        #: Where another recorder's read of the rest began, and the SHA-256 of its bytes (`absorb`).
        self._rest: tuple[int, bytes] | None = None

    def read(self, block: list[bytes], first: int) -> None:
        """Lines `first` on, as read from the file."""
        self._digest.update(b"".join(block))
        self._starts = list(itertools.accumulate(map(len, block), initial=self._end))
        self._end = self._starts.pop()
        self._first = first

    def good(self, number: int, system: str, question: str) -> None:
        """Line `number` of the block is a good answer."""
        self._systems.append(self._number(system))
        self._questions.append(self._number(question))
        self._offsets.append(self._starts[number - self._first])

    def good_block(self, systems: list[str], questions: list[str]) -> None:
        """Every line of the block is a good answer, of these systems and questions."""
        numbers = self._numbers
        for name in set(systems).union(questions).difference(numbers):  # new names, numbered in bulk
            numbers[name] = len(numbers)
        self._systems.extend(map(numbers.__getitem__, systems))
        self._questions.extend(map(numbers.__getitem__, questions))
        self._offsets.extend(self._starts)

    def columns(self) -> tuple[list[str], array, array, array, bytes]:
        """The good answers noted: the names, each one's system and question, and its offset; and
        the SHA-256 of the bytes read."""
        return list(self._numbers), self._systems, self._questions, self._offsets, self._digest.digest()

    def absorb(
        self, names: list[str], systems: array, questions: array, offsets: array, digest: bytes, *, start: int
    ) -> None:
        """The `columns` of another recorder's read of the rest of the file, from `start` (the
        offset of its first line) on, added after these, with the SHA-256 of those bytes, which
        the scan's key takes beside the one of the bytes before (`content_key`)."""
        self._rest = (start, digest)
        number = list(map(self._number, names))  # its numbers as these number the names
        self._systems.extend(map(number.__getitem__, systems))
        self._questions.extend(map(number.__getitem__, questions))
        self._offsets.extend(offsets)

    def note(self, line: int, message: str, col: int | None, *, warning: bool) -> None:
        self._notes.append(Note(len(self._offsets), warning, line, message, col))

    def keep(self) -> None:
        where = _entry_path(self.path)
        if where is None:
            return
        names = list(self._numbers)
        cut, content = 0, self._digest.digest()
        if self._rest is not None:
            cut, rest = self._rest
            content = content_key(content, rest, cut)
        try:
            inputs = _inputs(content, self.questions)
        except OSError:
            return
        count = len(self._offsets)
        columns = (self._systems.tobytes(), self._questions.tobytes(), self._offsets.tobytes())
        digests = b"".join(
            part_digest(
                columns[0][4 * first : 4 * (first + CHUNK)],
                columns[1][4 * first : 4 * (first + CHUNK)],
                columns[2][8 * first : 8 * (first + CHUNK)],
            )
            for first in range(0, count, CHUNK)
        )
        head = msgspec.msgpack.encode(Scan(inputs, names, count, self._notes, digests, cut))
        write_entry(where, with_head(head, columns), PERSON)

    def _number(self, name: str) -> int:
        return self._numbers.setdefault(name, len(self._numbers))


def _entry_path(path: str) -> Path | None:
    folder = private_folder(FOLDER)
    return None if folder is None else folder / f"{entry_name(os.path.realpath(path))}.msgpack"


def content_key(first: bytes, rest: bytes, cut: int) -> bytes:
    """What a scan's key takes of a file read in two halves, each hashed by the process that read
    it: the SHA-256 of the bytes before `cut` (`first`), of those from `cut` on (`rest`), and
    `cut`; a file read whole gives its own SHA-256."""
    return hashlib.sha256(first + rest + cut.to_bytes(8, "big")).digest()


def _content_of(f: io.BufferedReader, cut: int) -> bytes:
    """The content key (`content_key`) of the open file `f`, read from its start, as a recorder
    that read it in halves at `cut` (0: whole) gave it."""
    if not cut:
        return hashlib.file_digest(f, "sha256").digest()
    first, left = hashlib.sha256(), cut
    while left and (chunk := f.read(min(left, 1 << 22))):
        first.update(chunk)
        left -= len(chunk)
    return content_key(first.digest(), hashlib.file_digest(f, "sha256").digest(), cut)


def _inputs(content: bytes, questions: Collection[str]) -> bytes:
    """The key of a scan: the file's SHA-256, the battery's question ids, the reading code."""
    return inputs_key(CACHE_VERSION, (*sorted(questions), *_code()), head=content)


def _code() -> list[str]:
    """What identifies the reading code: tabench's version, its reader's modules (size and time:
    a source checkout changes without a new version) and msgspec's version."""
    try:
        decoder = f"msgspec=={importlib.metadata.version('msgspec')}"
    except importlib.metadata.PackageNotFoundError:  # a copy without its metadata (bundled)
        decoder = f"msgspec {getattr(msgspec, '__version__', 'of unknown version')}"
    parts = [__version__, decoder]
    package = Path(__file__).resolve().parents[1]
    for module in ("grading/answers.py", "grading/answers_scan.py", "core/jsonl.py", "core/records.py"):
        info = (package / module).stat()
        parts.append(f"{module}:{info.st_size}:{info.st_mtime_ns}")
    return parts
