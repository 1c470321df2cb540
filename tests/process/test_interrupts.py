"""The interrupt handler in-process: an interrupt is never lost and never printed as a traceback,
wherever it lands (a loop, a deferred section, a finaliser, after the command returned)."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

from tabench_dsl.cli import INTERRUPTED, main
from tabench_dsl.core import interrupts


class _SignalsWhenCollected:
    """Sends SIGINT to this process from its finaliser, then runs more bytecode there: Python runs
    the handler inside the finaliser, where an exception cannot propagate."""

    def __del__(self) -> None:
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(1000):
            pass


def test_an_interrupt_raised_inside_a_finaliser_is_recorded_not_printed(capsys) -> None:
    # What SIGINT did before: Python's default, or SIG_IGN when the suite runs as a background job.
    outside = signal.getsignal(signal.SIGINT)
    with interrupts.catch_interrupts():
        before = interrupts.received()
        _SignalsWhenCollected()  # collected at once: the handler runs inside __del__
        assert interrupts.interrupted(since=before)
    assert "Exception ignored" not in capsys.readouterr().err
    assert signal.getsignal(signal.SIGINT) is outside  # restored after the block


def test_a_deferred_interrupt_is_acted_on_when_the_section_ends() -> None:
    with interrupts.catch_interrupts():
        before = interrupts.received()
        with pytest.raises(KeyboardInterrupt), interrupts.deferred_interrupts():
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(1000):
                pass
            reached = True  # the section ran to its end
        assert reached and interrupts.interrupted(since=before)


def test_after_the_command_returned_a_signal_is_only_recorded() -> None:
    with interrupts.catch_interrupts():
        before = interrupts.received()
        interrupts.stop_raising()
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(1000):
            pass
        assert interrupts.interrupted(since=before)


def test_a_command_whose_interrupt_was_swallowed_still_exits_130(tmp_path, capsys, monkeypatch) -> None:
    # `tabench new` writes a battery; a finaliser that runs during it takes the Ctrl-C.
    monkeypatch.chdir(tmp_path)
    import tabench_dsl.cli.new_cmd as new_cmd

    real_run = new_cmd.run

    def run_then_collect(args):
        status = real_run(args)
        _SignalsWhenCollected()
        return status

    monkeypatch.setattr(new_cmd, "run", run_then_collect)
    assert main(["new", "demo"]) == 130
    err = capsys.readouterr().err
    assert err.rstrip().endswith(INTERRUPTED) and "Traceback" not in err and "Exception ignored" not in err


@pytest.mark.parametrize("loop_kind", ["auto", "asyncio"])
def test_a_signal_in_the_loops_last_turn_waits_until_the_loop_is_closed(monkeypatch, loop_kind: str) -> None:
    """SIGTERM after the grading's task is done but while its loop still runs (its done callbacks):
    raised there, the exception would leave uvloop marked running and closing it would fail with
    'Cannot close a running event loop'. It is acted on once the loop is closed."""
    from tabench_dsl.grading.event_loop import run_event_loop

    monkeypatch.setenv("TABENCH_EVENT_LOOP", loop_kind)

    async def grading() -> str:
        task = asyncio.current_task()
        assert task is not None
        task.add_done_callback(lambda _: os.kill(os.getpid(), signal.SIGTERM))
        return "graded"

    with interrupts.catch_interrupts():
        before = interrupts.received()
        with pytest.raises(KeyboardInterrupt):
            run_event_loop(grading)
        assert interrupts.interrupted(since=before)


def test_a_signal_after_the_task_is_done_is_held_until_the_loop_is_closed() -> None:
    """While a finished task is still registered (its loop running its last turn), a signal raises
    nothing there; the closing section (deferred) acts on it."""
    loop = asyncio.new_event_loop()
    try:
        task = loop.create_task(asyncio.sleep(0))
        loop.run_until_complete(task)
        with interrupts.catch_interrupts():
            interrupts.serve(task, loop)
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(1000):
                pass
            held = True  # reached: nothing was raised while the loop was registered
            with pytest.raises(KeyboardInterrupt), interrupts.deferred_interrupts():
                interrupts.serve(None, None)
        assert held
    finally:
        interrupts.serve(None, None)
        loop.close()


def test_a_signal_between_a_check_and_a_set_result_cancels_only_after_that_callback() -> None:
    """aiohttp's reader checks that the future a task awaits is pending, then sets its result; a
    signal whose handler ran between the two and cancelled the task there would cancel that future
    under it (`InvalidStateError` inside the transport's callback, printed as a fatal error). The
    task is cancelled by the loop once the callback is done: the callback sets its result, and the
    task is still cancelled at its next wait."""
    loop = asyncio.new_event_loop()
    raised: list[BaseException] = []
    try:
        waiter = loop.create_future()

        async def main() -> None:
            await waiter
            await asyncio.sleep(30)  # where the cancel lands

        def reader_callback() -> None:  # as aiohttp's `set_result(waiter, None)` does
            if not waiter.done():
                os.kill(os.getpid(), signal.SIGINT)  # the handler runs at the next bytecode
                for _ in range(1000):
                    pass
                try:
                    waiter.set_result(None)
                except asyncio.InvalidStateError as exc:
                    raised.append(exc)

        with interrupts.catch_interrupts():
            task = loop.create_task(main())
            interrupts.serve(task, loop)
            loop.call_soon(reader_callback)
            with pytest.raises(asyncio.CancelledError):
                loop.run_until_complete(task)
            assert interrupts.cancelled()
            interrupts.serve(None, None)
        assert raised == []
        assert waiter.result() is None
    finally:
        interrupts.serve(None, None)
        loop.close()


class _InterruptedHere:
    """A class attribute whose `__set_name__` is where the interrupt lands: the signal handler
    raises `KeyboardInterrupt` at whatever line runs, here while a class body is being made."""

    def __set_name__(self, owner: type, name: str) -> None:
        raise KeyboardInterrupt


def test_an_interrupt_while_a_class_is_made_exits_130(monkeypatch, capsys) -> None:
    """Python 3.11 wraps it in a RuntimeError ("Error calling __set_name__"): still an interrupt,
    exit 130 with its message, no traceback; any other RuntimeError is not taken for one."""
    from tabench_dsl.cli import totals_cmd

    def imports_late(args) -> int:
        class Limits:  # as a module imported at the end of a command defines one
            whole = _InterruptedHere()

        return 0

    monkeypatch.setattr(totals_cmd, "run", imports_late)
    assert main(["totals", "whatever.jsonl"]) == 130
    assert capsys.readouterr().err.strip() == INTERRUPTED

    def fails(args) -> int:
        raise RuntimeError("a bug")

    monkeypatch.setattr(totals_cmd, "run", fails)
    with pytest.raises(RuntimeError, match="a bug"):
        main(["totals", "whatever.jsonl"])


def test_an_interrupted_grade_says_how_to_continue(capsys) -> None:
    from tabench_dsl.cli import say_interrupted

    say_interrupted(["grade", "b", "--answers", "a.jsonl", "--judge-header", "X-Key=s3cret"])
    err = capsys.readouterr().err
    assert err == (
        "tabench: to continue this grading, run the same command with --resume: the answers already "
        f"graded are skipped\n{INTERRUPTED}\n"
    )
    say_interrupted(["grade", "b", "--answers", "a.jsonl", "--resume"])
    assert "run the same command again: the answers already graded are skipped" in capsys.readouterr().err
    say_interrupted(["totals", "r.jsonl"])
    assert capsys.readouterr().err == INTERRUPTED + "\n"
