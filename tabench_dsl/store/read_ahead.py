"""Work on a file's ranges begun in a forked process before this one is free to share it.

`grade --resume` scans its results file for the rules that graded it (`resume_checks`) right after
it compiles the battery, and the compile has one core to itself: with two, the other idles. The
scan needs nothing of the battery, so it is begun before the compile (`ReadAhead`): a child forked
then takes the ranges one at a time from the front, and this process, once it has compiled, takes
them from the back until the two meet, then gathers the child's. Neither waits for the other while
a range is left, so a compile of any length costs no more than it did, and one as long as the scan
hides it. The ranges' results come back in file order, as `line_ranges.map_ranges` gives them.

Where no child may be forked (`line_ranges.processes_for` says 1: a small file, a worker process,
one with threads running), every range is taken here when the results are asked for.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Generic, TypeVar

from .line_ranges import ForkedWork, line_ranges, processes_for

T = TypeVar("T")

#: Ranges a file is cut into for the two processes to share: small enough that the last one
#: taken keeps the other process waiting little, few enough that each is a long read.
PIECES = 16


class ReadAhead(Generic[T]):
    """`work(start, stop)` over the bytes of `path` from `start` to `stop` (None: its end as
    measured now), cut into ranges of whole lines, begun now in a forked child (module docstring);
    `results` gives each range's, in file order. With `join` (`join(earlier, later)`: the result
    of two ranges that follow each other, as one), each process joins the ranges it takes as it
    goes, and `results` gives one result a process: a result that costs much to send back or to
    merge (counts by question, by system) is sent and merged once, not once a range."""

    def __init__(
        self,
        path: Path,
        work: Callable[[int, int], T],
        start: int = 0,
        stop: int | None = None,
        join: Callable[[T, T], T] | None = None,
    ):
        self.work = work
        self.join = join
        forked = processes_for(path, start, stop) > 1
        self.ranges: Sequence[tuple[int, int]] = line_ranges(path, PIECES if forked else 1, start, stop)
        context = multiprocessing.get_context("fork")
        #: The ranges not yet taken: from `front` (the child's side) to `back` (this one's).
        self._front = context.Value("i", 0)
        self._back = context.Value("i", len(self.ranges))
        self._child = ForkedWork(self._from_front) if forked and len(self.ranges) > 1 else None
        self._cancelled = False

    @property
    def forked(self) -> bool:
        """Whether a child reads ranges (until they are all taken, or `cancel`)."""
        return self._child is not None

    def _take(self, front: bool) -> int | None:
        """The number of the next range to read, from the front or the back; None when none is left."""
        with self._front.get_lock():  # one lock guards both ends
            if self._front.value >= self._back.value:
                return None
            if front:
                self._front.value += 1
                return self._front.value - 1
            self._back.value -= 1
            return self._back.value

    def _from_front(self) -> list[tuple[int, T]]:
        """The child's part: ranges from the front until none is left, with their numbers (with
        `join`, one: the first range's number and the result of them all)."""
        done: list[tuple[int, T]] = []
        join = self.join
        while (number := self._take(front=True)) is not None:
            result = self.work(*self.ranges[number])
            if join is not None and done:
                done[0] = (done[0][0], join(done[0][1], result))
            else:
                done.append((number, result))
        return done

    def results(self) -> list[T]:
        """Each range's result, in file order (with `join`, each process's): the ranges left taken
        here from the back, then the child's gathered (or its exception raised here). Asked once,
        never after `cancel` (the ranges the child took went with it: `RuntimeError`)."""
        if self._cancelled:
            raise RuntimeError("the read was cancelled: the ranges its child took are lost")
        found: dict[int, T] = {}
        join, taken = self.join, None
        while (number := self._take(front=False)) is not None:
            result = self.work(*self.ranges[number])
            if join is not None and taken is not None:  # the range before the ones taken here
                result = join(result, found.pop(taken))
            found[number], taken = result, number
        child, self._child = self._child, None
        if child is not None:
            found.update(child.result())
        return [found[number] for number in sorted(found)]

    def cancel(self) -> None:
        """Stop the child (its results no longer wanted) and reap it."""
        child, self._child = self._child, None
        if child is not None:
            self._cancelled = True
            child.cancel()
