"""What a batch grading prints: each batch's state and request counts whenever they change
(`BatchLog`), the summary once the grading ends, and what Ctrl-C says about the batches it leaves
running at the provider (`batches_left_running`)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..core.display import shown
from .batch_flags import BatchOptions


class BatchLog:
    """Shows the state of each batch when it changes (`status`): a line to `log`, and all of them to
    `show` (the progress bar); and what the grading did."""

    def __init__(self, log: Callable[[str], None], show: Callable[[str], None] | None = None) -> None:
        self.log = log
        self.show = show
        self._seen: dict[str, tuple[str, int, int]] = {}
        self.rounds = self.submitted = self.batches = 0

    def status(self, status: Any) -> None:
        now = (status.state, status.done, status.total)
        if self._seen.get(status.id) == now:
            return
        self._seen[status.id] = now
        if self.show is not None:  # every batch of the grading on the bar: state, requests done
            self.show(
                "batches: "
                + ", ".join(f"{state} {done}/{total}" for state, done, total in self._seen.values())
            )
        failed = f", {status.failed} without a reply" if status.failed else ""
        self.log(
            f"tabench: batch {shown(status.id)}: {shown(status.state)}, "
            f"{status.done}/{status.total} request(s) done{failed}"
        )

    def finished(self, grader: Any) -> None:
        rounds = getattr(grader, "rounds", None)
        if rounds is not None:
            self.rounds, self.submitted, self.batches = rounds.rounds, rounds.submitted, rounds.batches

    def summary(self) -> str:
        return (
            f"batch: {self.submitted} request(s) submitted in {self.batches} batch(es), "
            f"{self.rounds} round(s)"
        )


@contextlib.contextmanager
def batches_left_running(batch: BatchOptions, results: Path) -> Iterator[None]:
    """On Ctrl-C during a batch grading: say that the batches submitted keep running at the
    provider, and how to collect them (`--resume`) or cancel them (`tabench batches --cancel`).
    First, the ledger beside `results` must be one tabench wrote, or none (`outputs.check_ledger_out`)."""
    if batch.enabled:
        from ..outputs import check_ledger_out

        check_ledger_out(results)
    try:
        yield
    except KeyboardInterrupt:
        if batch.enabled:
            from ..grading.batch import ledger_path

            folder = batch.files
            if folder is not None and ledger_path(results).exists():
                print(
                    f"tabench: the requests files are in {shown(str(folder))}; once their results files "
                    "are written there, run the same command with --resume to read them",
                    file=sys.stderr,
                )
            elif ledger_path(results).exists():
                print(
                    "tabench: the batches submitted keep running at the provider; run the same command "
                    f"with --resume to collect them, or `tabench batches {shown(str(results))} --cancel` "
                    "to cancel them",
                    file=sys.stderr,
                )
        raise
