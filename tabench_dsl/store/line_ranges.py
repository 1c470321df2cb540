"""A large results file read over every core: its bytes cut into ranges of whole lines, each range
read by a process of its own, the results handed back in file order for the caller to merge.

A first read of a million records is Python work per record (decoding is a fraction of it), so
the only way to bring it near one decoder pass is to share it out: with two cores, each reads half
the file. What each process gives back is its counters (pickled), which the caller merges in file
order: a merge that adds the second range's counts after the first's is the count of the whole.

Processes are forked, so the work and everything it needs is already there (nothing of it is
pickled: a closure over an open file will do); a process
that holds other threads (a server, a grading's event loop helpers) or is itself a worker never
forks (`processes_for` says 1), and a small file is read in this process (a fork and the pickled
counters cost more than half its read). `TABENCH_READ_PROCESSES=N` sets the number (1: never
fork), whatever the file's size.
"""

from __future__ import annotations

import functools
import itertools
import multiprocessing
import os
import threading
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Generic, TypeVar

T = TypeVar("T")

#: Files smaller than this are read in one process.
PARALLEL_FLOOR = 64 << 20
#: Processes a file is read by at most: each range's counters are merged one after another.
MAX_PROCESSES = 4
#: The environment variable that sets how many processes read a file (`processes_for`).
PROCESSES_VARIABLE = "TABENCH_READ_PROCESSES"
#: Bytes looked at a time for the line break after a cut.
_PROBE = 1 << 16


def processes_for(path: str | Path, start: int = 0, stop: int | None = None) -> int:
    """How many processes to read `path` (its bytes from `start` to `stop`, None: the end) with:
    `TABENCH_READ_PROCESSES` when set (a number: 1 reads in this process, as on a machine shared
    with other work); else 1 for a few bytes, one core, a process with other threads running or a
    worker process, and the cores this process may run on (at most `MAX_PROCESSES`) otherwise."""
    if multiprocessing.current_process().daemon or "fork" not in multiprocessing.get_all_start_methods():
        return 1
    asked = os.environ.get(PROCESSES_VARIABLE, "").strip()
    if asked.isdigit():
        return max(1, min(int(asked), 64))
    try:
        size = (os.path.getsize(path) if stop is None else stop) - start
    except OSError:
        return 1
    if size < PARALLEL_FLOOR or threading.active_count() > 1:
        return 1
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(cores, MAX_PROCESSES))


def line_ranges(
    path: str | Path, parts: int, start: int = 0, stop: int | None = None
) -> list[tuple[int, int]]:
    """The bytes of `path` from `start` (a line's start) to `stop` (a line's start; None: the
    end of the file as measured now) as up to `parts` (start, stop) ranges of whole lines, in
    file order; each cut falls right after a line break."""
    end = os.path.getsize(path) if stop is None else stop
    cuts = [start]
    with open(path, "rb") as f:
        for part in range(1, parts):
            at = max(start + (end - start) * part // parts, cuts[-1])
            cut = _line_start(f, at, end)
            if cuts[-1] < cut < end:
                cuts.append(cut)
    cuts.append(end)
    return [(a, b) for a, b in itertools.pairwise(cuts) if a < b]


def _line_start(f, at: int, size: int) -> int:
    """The offset of the first line that starts at or after `at` (`size` when none does)."""
    if at == 0:
        return 0
    f.seek(at - 1)
    position = at - 1
    while block := f.read(_PROBE):
        found = block.find(b"\n")
        if found >= 0:
            return position + found + 1
        position += len(block)
    return size


def map_ranges(work: Callable[[int, int], T], ranges: Sequence[tuple[int, int]]) -> list[T]:
    """`work(start, stop)` of each range, in order (`side_by_side`)."""
    return side_by_side([functools.partial(work, start, stop) for start, stop in ranges])


def side_by_side(works: Sequence[Callable[[], T]]) -> list[T]:
    """What each of `works` returns, in order: the first called in this process, the others each
    in a forked child at the same time (`ForkedWork`)."""
    if len(works) < 2:
        return [work() for work in works]
    children: list[ForkedWork[T]] = []
    try:
        children.extend(ForkedWork(work) for work in works[1:])
        return [works[0](), *(child.result() for child in children)]
    finally:
        for child in children:
            child.cancel()


class ForkedWork(Generic[T]):
    """`work()` begun now in a forked child. The child inherits its work as it is (a closure will
    do: nothing of it is pickled) and sends back only what it returns (which must pickle), or the
    exception it raised, which `result` raises here."""

    def __init__(self, work: Callable[[], T]) -> None:
        context = multiprocessing.get_context("fork")
        self._receive, send = context.Pipe(duplex=False)
        self._child: BaseProcess | None = context.Process(target=_child, args=(work, send), daemon=True)
        self._child.start()
        send.close()

    def result(self) -> T:
        """What the work returned (asked once; the child reaped)."""
        child = self._child
        try:
            outcome = self._receive.recv()
        except EOFError:
            outcome = None
        finally:
            self.cancel()
        if outcome is None:
            ended = f"exit {child.exitcode}" if child is not None else "stopped"
            raise RuntimeError(f"a process reading part of the file stopped ({ended})")
        done, value = outcome
        if not done:
            raise value
        return value

    def cancel(self) -> None:
        """Stop the child (its result no longer wanted, or already received) and reap it."""
        child, self._child = self._child, None
        if child is None:
            return
        self._receive.close()
        if child.is_alive():
            child.kill()  # not `terminate`: a command may defer SIGTERM, which the child inherits
        child.join()


def _child(work: Callable[[], T], send: Connection) -> None:
    """A child's part: its work's result sent back, or the exception that stopped it."""
    outcome: tuple[bool, object]
    try:
        outcome = (True, work())
    except BaseException as exc:  # whatever stopped it is the parent's to raise
        outcome = (False, exc)
    send.send(outcome)
    send.close()
