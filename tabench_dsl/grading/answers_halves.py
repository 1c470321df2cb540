"""A resumed grading's answers file read in two halves side by side, when its second half is all
done answers (`SecondHalf`).

A resume with little left to grade reads a million answers only to take them out as done
(`answers.AnswerReader`, a block of lines at a time), after the results file's read, with one
core to itself while the other idles. So when the reader starts on one large JSONL file, a forked
child reads the second half of its lines the same way (`AnswerReader.blocks_passed_over`: the same
checks, over the same done pairs, inherited) while the reader reads the first. A child that met
anything but blocks of done answers (a bad line, a duplicate, an answer to grade, a new name)
stops and says so, and the reader reads on from the middle as ever, so every problem is reported
by the reader, in file order. Otherwise the child sends back what its half adds, and the reader
takes it instead of reading those lines: the answers counted (`count`), the pairs seen (its
blocks' keys, each block's first line placed after the reader's last), the skipped answers and
each system's answered questions (`resume_skip.ResumeSkip.absorb`), and the scan's columns
(`answers_scan.ScanRecorder.absorb`, with the child's hash of the half's bytes). A pair given in both
halves is a duplicate the child cannot see: then the reader reads the second half itself too, and
reports it. So is an answers file written to since the child began.
"""

from __future__ import annotations

import functools
import os
from array import array
from collections.abc import Callable, Iterator
from typing import BinaryIO, NamedTuple

from ..store.line_ranges import ForkedWork, line_ranges, processes_for


class HalfRead(NamedTuple):
    """What the second half adds: its `lines`, the good answers counted (`answers`), the pairs seen
    (`blocks`: each block's keys and first place, counted from the half's first line), the answers
    skipped as done (`skipped`), each system's answered questions (`rows`, None without them) and
    the scan's columns (`columns`: names, systems, questions, offsets, and the SHA-256 of the half's
    bytes; None without a scan)."""

    lines: int
    answers: int
    blocks: list[tuple[array, int, int]]
    skipped: int
    rows: dict[str, bytearray] | None
    columns: tuple[list[str], array, array, array, bytes] | None


def file_stamp(path: str) -> tuple[int, int]:
    info = os.stat(path)
    return info.st_size, info.st_mtime_ns


class SecondHalf:
    """The second half of the lines of `path`, from `cut` on, read by a child forked now that runs
    `read(cut)` (the reader's `blocks_passed_over`: its `HalfRead`, or None when the half was not
    all done answers). None from `begin` when the file is not worth halving."""

    def __init__(self, path: str, cut: int, read: Callable[[int], HalfRead | None]) -> None:
        self.path = path
        self.cut = cut
        self.stamp = file_stamp(path)
        work = functools.partial(_read_or_none, read, cut)
        self._child: ForkedWork[HalfRead | None] | None = ForkedWork(work)

    @classmethod
    def begin(cls, path: str, read: Callable[[int], HalfRead | None]) -> SecondHalf | None:
        try:
            if processes_for(path) < 2:  # a small file, a worker, threads: read here alone
                return None
            ranges = line_ranges(path, 2)
        except OSError:
            return None
        return cls(path, ranges[1][0], read) if len(ranges) == 2 else None

    def result(self) -> HalfRead | None:
        """The child's `HalfRead`, or None (the half not all done answers, the child stopped, or
        the file written to since it began); the child reaped."""
        child, self._child = self._child, None
        if child is None:
            return None
        try:
            found = child.result()
        except RuntimeError:  # the child stopped: the reader reads the half itself
            found = None
        try:
            unchanged = file_stamp(self.path) == self.stamp
        except OSError:
            unchanged = False
        return found if isinstance(found, HalfRead) and unchanged else None

    def cancel(self) -> None:
        child, self._child = self._child, None
        if child is not None:
            child.cancel()


def _read_or_none(read: Callable[[int], HalfRead | None], cut: int) -> HalfRead | None:
    """The child's part: its half read, or None whatever stopped it (the reader reads the half
    itself then, and meets it again there)."""
    try:
        return read(cut)
    except BaseException:
        return None


def line_blocks(
    f: BinaryIO, size: int, half: SecondHalf | None, taken: Callable[[int], bool]
) -> Iterator[list[bytes]]:
    """The lines of the open file `f` in blocks of about `size` bytes; with a `half`, those before
    its cut, then, unless `taken(lines before the cut)` takes the half's lines instead, the rest."""
    if half is None:
        while block := f.readlines(size):
            yield block
        return
    position = lines = 0
    try:
        while position < half.cut and (block := f.readlines(min(size, half.cut - position))):
            position += sum(map(len, block))
            while position > half.cut and block:  # `readlines` reads a line past its hint
                position -= len(block.pop())
            f.seek(position)
            if not block:
                break  # no line ends at the cut: the file is not the one cut
            lines += len(block)
            yield block
        if position == half.cut and taken(lines):
            return
    finally:
        half.cancel()
    while block := f.readlines(size):
        yield block
