"""A compiled battery kept on disk, reused only when it was made from the very same inputs.

Compiling a battery of 20,000 questions (parsing its rubric, building and rendering its questions)
takes seconds, and `grade --resume` compiles it again on every run. `compiled_battery` keeps what a
compile produced in tabench's cache folder (`$XDG_CACHE_HOME/tabench/compiled/`, else
`~/.cache/tabench/compiled/`, a folder only this user can write), one entry per battery (its
manifest's real path and the allowed folders), and gives it back instead of compiling when nothing
it was made from has changed, as `ccache` reuses an object file:

- What a compile reads is recorded as it reads it (`files.recording_reads`): every spec file (the
  manifest, the scorer's settings and templates, every policy and rubric file) by its path, its real
  path and a digest of its bytes, and every rubric pattern by the files it matched. A kept compile
  is used only when reading those again gives the same record: the same bytes at the same real
  paths, the same matches (a rubric file added or removed), in the same order.
- The entry is also bound to the way it was asked for (the manifest's path as given, which the
  questions' positions carry; the real paths of the battery folder and of `--allow-dir`s) and to the
  code that compiles: tabench's version, the Python version, the size and modification time of the
  language layer's and core's modules and of the grammars, and the versions of Jinja2, Lark, PyYAML
  and msgspec (`_code_key`). A change to any of them compiles afresh.
- The entry is kept signed (`core.kept_entries`, with the key that signs results indexes), so a file
  tabench did not write, a damaged one or one of another format is never read: any doubt (a missing,
  unreadable, corrupt or foreign entry, a failed check) means only that the battery is compiled
  afresh, exactly as without a cache. Nothing here raises but what compiling itself raises.
- The entry holds each question encoded on its own, after a head that names where each one is and
  its digest: what is given back reads a question from the entry when it is first asked for
  (`core.kept_questions`), so a run holds the prompts of the questions it grades, not all of them.

What the grading then changes (`grade --reasoning-tags`) is applied after, to what this returns.
"""

from __future__ import annotations

import importlib.metadata
import os
import sys
import tempfile
from array import array
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO

import msgspec

from ..core.compiled import CompiledBattery
from ..core.errors import TabenchError
from ..core.kept_entries import (
    HEAD_SIZE,
    entry_name,
    inputs_key,
    open_entry,
    part_digest,
    private_folder,
    with_head,
    write_entry,
)
from ..core.kept_questions import KeptQuestions
from ..core.nodes import Battery
from ..core.resources import grammar_dir
from ..core.version import __version__
from .files import MANIFEST, Read, Refused, pattern_matches, read_spec_text, real_path, recording_reads

#: Bumped when what an entry holds changes: an entry of another version is never read.
CACHE_VERSION = 2
FOLDER = "compiled"
#: The libraries whose code decides a compile's output, beside tabench's own.
LIBRARIES = ("jinja2", "lark", "PyYAML", "msgspec")
#: What an entry of this kind is signed for (`kept_entries`): no other kind's entry reads as one.
PERSON = b"tabench-compile"
#: The questions' encoded bytes held in memory while an entry is written; beyond, a temporary
#: file holds them (at 200,000 questions, hundreds of megabytes).
SPOOL_BYTES = 64 << 20
#: Bytes of the spooled questions written at a time.
SPOOL_BLOCK = 1 << 20


class _Entry(msgspec.Struct, array_like=True):
    """What is kept before the questions: the inputs' key, the reads the compile made, the compiled
    battery without its questions (encoded), the questions' ids in order, where each one's bytes
    end in the entry (the bytes of an array of unsigned 64-bit numbers) and their digests
    (`kept_entries.part_digest`, one after another)."""

    inputs: bytes
    reads: list[Read]
    compiled: msgspec.Raw
    ids: list[str]
    ends: bytes
    digests: bytes


def compiled_battery(path: str | Path, *, allow_dirs: Iterable[str | Path] = ()) -> CompiledBattery:
    """`render.compile_battery(battery.load_battery(path, allow_dirs=...))`, from the cache when an
    entry made from the same inputs is there (then no spec file is parsed); otherwise compiled, and
    kept for the next call. Raises what compiling raises."""
    allow_dirs = list(allow_dirs)
    where = _where(path, allow_dirs)
    if where is not None:
        entry_path, inputs, roots = where
        compiled = _kept(entry_path, inputs, roots)
        if compiled is not None:
            return compiled
    from .battery import load_battery
    from .render import compile_battery

    with tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES) as spool:
        with recording_reads() as reads:
            battery = load_battery(path, allow_dirs=allow_dirs)
            # Compiled here, where every read is recorded; kept, each question is encoded as it
            # is compiled and its bytes spooled, so no more than one compiled prompt is held at a
            # time (at 200,000 questions, a gigabyte of them and of the UTF-8 copies of them).
            try:
                parts = _EntryParts(where[1], battery, spool) if where is not None else None
            except OSError:  # no room for the spool's temporary file: compiled, not kept
                parts = None
        if where is None or parts is None or not all(read.digest for read in reads):  # an editor's text
            return compile_battery(battery)
        write_entry(where[0], parts.body(list(reads)), PERSON)
    # The run goes on with the entry just written, as the next run would: its questions read as
    # they are asked for (a resume grades few of them).
    kept = _kept(*where)
    return kept if kept is not None else compile_battery(battery)


class _EntryParts:
    """An entry's body, in parts: the length of the head (8 bytes), the head (`_Entry`), then each
    question encoded on its own, so a run decodes only the questions it grades (`KeptQuestions`).
    The questions are compiled and encoded once, here, for the head's ends and digests, and their
    bytes spooled (`SPOOL_BYTES` in memory, the rest in a temporary file) until the head is
    written before them (`body`): never every compiled prompt at once."""

    def __init__(self, inputs: bytes, battery: Battery, spool: IO[bytes]) -> None:
        from .render import compiled_frame, compiled_questions

        self.inputs, self.battery = inputs, battery
        self.ends, self.ids, at, digests = array("Q"), [], 0, []
        self.spool = spool
        encode = msgspec.msgpack.encode
        for question in compiled_questions(battery):
            encoded = encode(question)
            at += len(encoded)
            self.ends.append(at)
            self.ids.append(question.id)
            digests.append(part_digest(encoded))
            self.spool.write(encoded)
        self.digests = b"".join(digests)
        self.rest = encode(compiled_frame(battery, {}))

    def body(self, reads: list[Read]) -> Iterator[bytes]:
        encode = msgspec.msgpack.encode
        head = _Entry(self.inputs, reads, msgspec.Raw(self.rest), self.ids, b"", self.digests)
        # The ends are offsets in the body, after the head: the head's size depends on the ends'
        # bytes only through their length, which is known, so it is encoded once with zeros first.
        size = len(encode(msgspec.structs.replace(head, ends=bytes(8 * len(self.ends)))))
        start = HEAD_SIZE.size + size
        head.ends = array("Q", (start + end for end in self.ends)).tobytes()
        return with_head(encode(head), self._spooled())

    def _spooled(self) -> Iterator[bytes]:
        """The questions' bytes as spooled, a block at a time."""
        self.spool.seek(0)
        while block := self.spool.read(SPOOL_BLOCK):
            yield block


def _where(path: str | Path, allow_dirs: list[str | Path]) -> tuple[Path, bytes, tuple[Path, ...]] | None:
    """The entry's file, the key of the inputs and the folders the battery may read; None when
    there is no cache to use (no private folder, no signing key) or the battery is one compiling
    will refuse (then compiling says why)."""
    try:
        manifest = Path(path)
        if manifest.is_dir():
            manifest = manifest / MANIFEST
        if not manifest.is_file() or not all(Path(folder).is_dir() for folder in allow_dirs):
            return None
        roots = (real_path(manifest.parent), *(real_path(folder) for folder in allow_dirs))
        folder = private_folder(FOLDER)
        if folder is None:
            return None
        place = [os.path.realpath(manifest), *map(str, roots)]
        name = entry_name(*place)
        inputs = inputs_key(CACHE_VERSION, [*place, str(manifest), _code_key()])
        return folder / f"{name}.msgpack", inputs, roots
    except (OSError, ValueError):
        return None


def _code_key() -> str:
    """What identifies the code that compiles: tabench's version, Python's, its own modules' and
    grammars' sizes and modification times (a source checkout changes without a new version), and
    the versions of the libraries it compiles with."""
    parts = [__version__, sys.version]
    package = Path(__file__).resolve().parents[1]
    for folder in (package / "language", package / "core", grammar_dir()):
        with os.scandir(folder) as found:
            for item in sorted(found, key=lambda item: item.name):
                if item.name.endswith((".py", ".lark")):
                    info = item.stat()
                    parts.append(f"{item.path}:{info.st_size}:{info.st_mtime_ns}")
    for library in LIBRARIES:
        try:
            parts.append(f"{library}=={importlib.metadata.version(library)}")
        except importlib.metadata.PackageNotFoundError:
            parts.append(f"{library} not installed")
    return "\n".join(parts)


def _kept(entry_path: Path, inputs: bytes, roots: tuple[Path, ...]) -> CompiledBattery | None:
    """The compiled battery the entry keeps, when it is one tabench signed, made from `inputs`,
    and every read it records reads the same today; else None. Its questions are read from the
    entry as they are asked for (`KeptQuestions`)."""
    entry = open_entry(entry_path, PERSON)
    if entry is None:
        return None
    try:
        body, start = entry.read_head()
        head = msgspec.msgpack.decode(body, type=_Entry)
        if head.inputs != inputs or _read_again(head.reads, roots) != head.reads:
            entry.close()
            return None
        ends = array("Q")
        ends.frombytes(head.ends)
        compiled = msgspec.msgpack.decode(head.compiled, type=CompiledBattery)
        if ends and ends[-1] != entry.size:
            raise ValueError("an entry that does not end where its questions do")
        questions = KeptQuestions(entry, head.ids, start, ends, head.digests)
    except (msgspec.DecodeError, msgspec.ValidationError, ValueError):
        entry.close()
        return None
    return msgspec.structs.replace(compiled, questions=questions)


def _read_again(reads: list[Read], roots: tuple[Path, ...]) -> list[Read] | None:
    """What the same reads record today (None when one of them fails, as a changed file may)."""
    with recording_reads() as again:
        for read in reads:
            try:
                if read.kind == "file":
                    if str(real_path(read.name)) != read.where:  # a link now, maybe out of bounds:
                        return None  # not read here (compiling then says why it is refused)
                    read_spec_text(read.name, "spec file")
                elif read.kind == "glob":
                    pattern_matches(read.name, Path(read.where), roots)
                else:
                    return None
            except (OSError, ValueError, Refused, TabenchError):  # what a changed file raises
                return None
        return list(again)
