"""How a grading process runs its event loop: the collector quietened (`quiet_gc`) and uvloop when
it is installed (`run_event_loop`). Used by `tabench grade` and by each `--workers` process."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

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


def run_event_loop(coro: Coroutine[Any, Any, T]) -> T:
    """Run `coro` to completion on uvloop when it is installed (it cuts the CPU each judge call costs
    by about a fifth), else on asyncio's own loop; TABENCH_EVENT_LOOP=asyncio forces the latter.
    Ctrl-C cancels the grading and raises KeyboardInterrupt, as `asyncio.run` does."""
    loop_factory = None
    if os.environ.get("TABENCH_EVENT_LOOP", "auto") != "asyncio":
        try:
            import uvloop
        except ImportError:
            pass
        else:
            loop_factory = uvloop.new_event_loop
    with asyncio.Runner(loop_factory=loop_factory) as runner:
        return runner.run(coro)
