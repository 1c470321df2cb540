"""Grading progress on stderr: a `rich` bar on a terminal, plain lines otherwise.

The bar is redrawn by rich's own refresh thread a few times a second, never once per record, so a
fast grading loop does not pay for drawing. Plain lines (logs, CI) come every `PLAIN_STEP` of the
total or every `PLAIN_SECONDS`, whichever is first, never closer than `PLAIN_MIN_GAP` (a log of a fast
run is not one line per answer), and once at the end.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from ..core.display import shown
from ..core.records import Record

#: A plain progress line at least every this fraction of the total ...
PLAIN_STEP = 0.10
#: ... or every this many seconds ...
PLAIN_SECONDS = 5.0
#: ... but never two lines closer than this many seconds.
PLAIN_MIN_GAP = 1.0


class Progress:
    """Count graded records against `total` (an upper bound: lines of the answers file).

    Call `advance(record)` per record and `close()` at the end (or use as a context manager).
    """

    def __init__(self, total: int, *, stream: TextIO | None = None, bar: bool | None = None) -> None:
        self.stream = stream or sys.stderr
        self.total = max(total, 0)
        self.done = 0
        self.counts = {"pass": 0, "fail": 0, "adjudicate": 0, "error": 0}
        self._started = time.monotonic()
        self._last_line = self._started
        self._next_step = self._step()
        self._printed = 0
        self._status = ""
        use_bar = bar if bar is not None else _isatty(self.stream)
        self._rich = None
        self._task = None
        if use_bar:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn
            from rich.progress import Progress as RichProgress

            self._rich = RichProgress(
                TextColumn("grading"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[tally]}", markup=False),  # batch states come from a server
                TimeRemainingColumn(),
                console=Console(file=self.stream),
                refresh_per_second=4,
                transient=False,
            )
            self._task = self._rich.add_task("grade", total=self.total or None, tally="")
            self._rich.start()

    def _step(self) -> int:
        return self.done + max(1, int(self.total * PLAIN_STEP))

    def tally(self) -> str:
        """`pass 3 fail 1 adjudicate 0 error 0`."""
        return " ".join(f"{name} {count}" for name, count in self.counts.items())

    def skipped(self, count: int = 1) -> None:
        """Answers skipped by --resume count as done (the bar's total includes them)."""
        self.done += count
        self.counts["skipped"] = self.counts.get("skipped", 0) + count
        self._tick()

    def advance(self, record: Record) -> None:
        """One more record written."""
        self.done += 1
        self.counts[record.verdict] = self.counts.get(record.verdict, 0) + 1
        self._tick()

    def status(self, text: str) -> None:
        """Show `text` after the tally on the bar (the batches' states while a batch grading waits
        for them); plain output prints nothing more: its caller logs such changes as lines."""
        self._status = shown(text)
        self._tick()

    def _tick(self) -> None:
        if self._rich is not None:
            # Only numbers change here; rich's refresh thread draws.
            assert self._task is not None  # made with the bar
            tally = f"{self.tally()}  {self._status}" if self._status else self.tally()
            self._rich.update(self._task, completed=self.done, tally=tally)
        else:
            since = time.monotonic() - self._last_line
            if since >= PLAIN_SECONDS or (self.done >= self._next_step and since >= PLAIN_MIN_GAP):
                self._line()

    def log(self, message: str) -> None:
        """Print a line (a bad answer line, a warning) without tearing the bar.

        Such lines quote answers files and judges, so they are shown as text (`display.shown`):
        no control sequence in them reaches the terminal, and rich reads no markup or emoji code.
        """
        message = shown(message, lines=True)
        if self._rich is not None:
            self._rich.console.print(message, markup=False, highlight=False, emoji=False)
        else:
            print(message, file=self.stream, flush=True)

    def _line(self) -> None:
        self._last_line = time.monotonic()
        self._next_step = self._step()
        self._printed = self.done
        elapsed = self._last_line - self._started
        of = f"/{self.total}" if self.total else ""
        # Answers skipped by --resume count as done, not as graded: the line must not say "graded
        # 39/39" of a run that graded none.
        word = "done" if self.counts.get("skipped") else "graded"
        print(f"{word} {self.done}{of} in {elapsed:.1f} s: {self.tally()}", file=self.stream, flush=True)

    def close(self) -> None:
        """Stop the bar, or print the last plain line."""
        if self._rich is not None:
            self._rich.stop()
            self._rich = None
        elif self.done != self._printed:
            self._line()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
