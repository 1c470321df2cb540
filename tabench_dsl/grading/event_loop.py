"""How a grading process runs its event loop: the collector quietened (`quiet_gc`) and uvloop when
it is installed (`run_event_loop`), interruptible as `interrupts` says. Used by `tabench grade` and
by each `--workers` process."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, TypeVar

from ..core import interrupts

T = TypeVar("T")

#: Allocations between two young-generation collections while grading (Python's default: 700).
GC_YOUNG_THRESHOLD = 10_000


@contextlib.contextmanager
def quiet_gc() -> Iterator[None]:
    """While grading: what startup built (grammar, templates, libraries) is set aside from the
    collector (`gc.freeze`) and young collections run less often. Grading makes few reference
    cycles; this takes most of the collector's work (about a tenth of a second per 20,000 calls)
    out of the loop. Restored on the way out."""
    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(GC_YOUNG_THRESHOLD, *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


def _loop_factory():
    if os.environ.get("TABENCH_EVENT_LOOP", "auto") == "asyncio":
        return None
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def run_event_loop(main: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run the coroutine `main()` to completion on uvloop when it is installed (it cuts the CPU each
    judge call costs by about a fifth), else on asyncio's own loop; TABENCH_EVENT_LOOP=asyncio
    forces the latter.
    An interrupt cancels it and raises `KeyboardInterrupt` once it has unwound, as `asyncio.run`
    does for Ctrl-C (see `interrupts`); the coroutine is made here, where no interrupt can leave it
    never awaited. A process whose SIGINT is ignored (a grading worker) keeps its signals."""
    catching = interrupts.takes_interrupts()
    with interrupts.catch_interrupts() if catching else contextlib.nullcontext():
        runner = asyncio.Runner(loop_factory=_loop_factory())
        try:
            loop = runner.get_loop()
            with interrupts.deferred_interrupts():  # the task exists before a signal looks for it
                task = loop.create_task(main())
                interrupts.serve(task, loop)
            try:
                return loop.run_until_complete(task)
            except asyncio.CancelledError:
                if interrupts.cancelled():
                    raise KeyboardInterrupt from None
                raise
        finally:
            with interrupts.deferred_interrupts():  # the loop is closed whole, then a late signal acts
                interrupts.serve(None, None)
                runner.close()
