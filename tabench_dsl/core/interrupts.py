"""One way for a command to be interrupted: Ctrl-C (SIGINT) and SIGTERM both mean stop, keep every
record already written, exit 130 (the CLI turns `KeyboardInterrupt` into that).

`catch_interrupts()` installs the handler for a command. Outside an event loop a signal raises
`KeyboardInterrupt` where the program is. While `loop.run_event_loop` runs, it has registered its
main task here (`serve`), and a signal cancels that task instead: the grading unwinds through every
`finally` (results closed, cache committed, workers told to stop) and only then is
`KeyboardInterrupt` raised, as `asyncio.run` does for Ctrl-C. A section that must not be cut in half
(starting or reaping worker processes, closing the loop) runs under `deferred_interrupts()`: a
signal that arrives inside it is acted on when it ends.

A `KeyboardInterrupt` raised by the handler can land where Python cannot pass it on (a weakref
callback or a finaliser run by the collector): Python would print it as "Exception ignored" with a
traceback and go on. So every interrupt is also recorded (`interrupted()`), such unraisable
`KeyboardInterrupt`s are not printed (`sys.unraisablehook`), and the CLI checks the record when
a command returns. Once a command has returned (`stop_raising`), a signal is only recorded.

A grading worker, whose SIGINT is ignored, keeps the signals its parent gave it
(`takes_interrupts`).

This module imports no asyncio: `compile` installs the handler too and pays nothing for it.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from typing import Any

#: The signals that stop a command: Ctrl-C and a polite kill.
INTERRUPT_SIGNALS: tuple[signal.Signals, ...] = (signal.SIGINT, signal.SIGTERM)


class _State:
    """The process's interrupt state, shared by the handler and the sections it serves."""

    def __init__(self) -> None:
        self.deferred = 0  # depth of `deferred_interrupts` sections
        self.pending = False  # a signal arrived inside one
        self.task: Any = None  # the running loop's main task (an asyncio.Task), while there is one
        self.loop: Any = None  # its loop
        self.cancelled = False  # that task was cancelled by a signal
        self.received = 0  # interrupts received (recorded even where one could not be raised)
        self.raising = True  # False once the command has returned: a signal is only recorded
        self.expected = 0  # interrupts that were the command's own way to stop (`stopped_here`)


_state = _State()


def serve(task: Any, loop: Any) -> None:
    """Register the event loop's main task (None, None when the loop is done): a signal cancels it."""
    _state.task, _state.loop = task, loop
    if task is not None:
        _state.cancelled = False


def cancelled() -> bool:
    """Whether the main task registered last was cancelled by a signal."""
    return _state.cancelled


def received() -> int:
    """How many interrupts this process has received: a command compares the count before and
    after it runs (`interrupted`)."""
    return _state.received


def interrupted(since: int = 0) -> bool:
    """Whether an interrupt arrived after `received()` was `since`, other than one a command took
    as its way to stop (`stopped_here`)."""
    return _state.received > max(since, _state.expected)


def stopped_here() -> None:
    """The interrupts received so far were how the command is stopped (`view` serves until Ctrl-C),
    and it stopped as it should: not an interruption to report (`interrupted`)."""
    _state.expected = _state.received


def stop_raising() -> None:
    """From now on a signal is only recorded (`interrupted()`): the command has returned, and the
    process is on its way out with a status to correct, not work to stop."""
    _state.raising = False


def _deliver() -> None:
    """Act on an interrupt now: cancel the loop's main task, or raise `KeyboardInterrupt`."""
    _state.received += 1
    if not _state.raising:
        return
    task, loop = _state.task, _state.loop
    if task is not None:
        if not task.done():
            _state.cancelled = True
            # Cancelled by the loop, not here: this handler runs between any two bytecodes, and
            # `task.cancel()` cancels the future the task awaits at once, under code that has just
            # seen it pending and is about to set its result (aiohttp's reader): that raises
            # `InvalidStateError` inside the transport's callback. The loop runs the cancel between
            # callbacks, where nothing is half done; scheduling it also wakes a sleeping loop.
            loop.call_soon_threadsafe(_cancel, task)
        else:
            # The task is done but the loop is still running its last turn: an exception raised in
            # there would leave it marked running, and closing it would then fail. Acted on once
            # `run_event_loop` has closed the loop (its closing section is deferred).
            _state.pending = True
        return
    raise KeyboardInterrupt


def _cancel(task: Any) -> None:
    if not task.done():
        task.cancel()


def _on_signal(signum: int, frame: object) -> None:
    if _state.deferred:
        _state.pending = True
        _state.received += 1
        return
    _deliver()


def _unraisable(unraisable: sys.UnraisableHookArgs) -> None:
    # A KeyboardInterrupt the handler raised inside a finaliser or weakref callback: recorded in
    # `_state.received` already and acted on when the command returns; anything else as usual.
    if unraisable.exc_type is not None and issubclass(unraisable.exc_type, KeyboardInterrupt):
        return
    sys.__unraisablehook__(unraisable)


def _take_signals() -> None:
    _state.raising, _state.pending = True, False
    for sig in INTERRUPT_SIGNALS:
        signal.signal(sig, _on_signal)
    sys.unraisablehook = _unraisable


def takes_interrupts() -> bool:
    """Whether this process stops on Ctrl-C (Python's default, or our handler): False in a grading
    worker, which ignores SIGINT and is stopped by its parent."""
    return signal.getsignal(signal.SIGINT) in (signal.default_int_handler, _on_signal)


@contextlib.contextmanager
def catch_interrupts() -> Iterator[None]:
    """SIGINT and SIGTERM stop the command as Ctrl-C does, for the block; the previous handlers are
    restored after it. Only the main thread takes signals: elsewhere (and when the handler is
    already in place) this does nothing."""
    in_place = signal.getsignal(signal.SIGINT) is _on_signal
    if in_place or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.getsignal(sig) for sig in INTERRUPT_SIGNALS}
    previous_hook = sys.unraisablehook
    _take_signals()
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        sys.unraisablehook = previous_hook
        _state.pending = False


def install() -> None:
    """Take SIGINT and SIGTERM for the rest of the process's life (the `tabench` program: a signal
    that arrives after a command returned must not kill the process before it exits)."""
    _take_signals()


def ignore() -> None:
    """Ignore SIGINT and SIGTERM from now on: the process is exiting with its status decided.

    Also clears CPython's note of a `KeyboardInterrupt` that ended code run from a string: `exec`
    of source text, as `dataclasses` builds a class's methods when a module is imported. Under
    `python -m`, the interpreter checks that note as it exits and, when it is set, kills itself
    with SIGINT whatever status the program exits with, so an interrupt that landed in a lazy
    import turned exit 130 into a death by signal (the interrupt loop saw it in about one run in
    nine). Each evaluation of a string resets the note and sets it only if it ends in a
    `KeyboardInterrupt`; with the signals ignored, none can come now."""
    for sig in INTERRUPT_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)
    exec("None")  # the reset; a code object would not do it (only source text takes that path)


@contextlib.contextmanager
def deferred_interrupts() -> Iterator[None]:
    """Run the block whole: an interrupt that arrives inside it is acted on once it ends."""
    _state.deferred += 1
    try:
        yield
    finally:
        _state.deferred -= 1
        if not _state.deferred and _state.pending:
            _state.pending = False
            _deliver()
