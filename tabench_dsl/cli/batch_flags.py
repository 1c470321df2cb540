"""`--batch` and `--batch-live-fallback` for `grade` and `calibrate`, what they print while the
batches run, and what Ctrl-C says about the batches it leaves running.

The flags make `session.open_grader` build a `grading.batch.BatchGrader`; with the builtin or replay
judge that is a usage error (the grader says so when the judge is known). `BatchLog` shows each
batch's state and request counts whenever they change, and the summary once the grading ends.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec

from ..core.display import shown
from ..core.errors import UsageError


def add_batch_options(parser: argparse.ArgumentParser) -> None:
    """Add `--batch` and `--batch-live-fallback` to a grade or calibrate parser."""
    add = parser.add_argument
    add(
        "--batch",
        nargs="?",
        const=PROVIDER_BATCHES,
        default=None,
        metavar="files:DIR",
        help="send the judge calls as batches to the provider's batch service (OpenAI Batch API, "
        "Anthropic Message Batches): half the price, results within 24 hours; --resume waits for "
        "batches already submitted. files:DIR writes each round's requests to "
        "DIR/round-N.requests.jsonl and reads DIR/round-N.results.jsonl (OpenAI batch file formats) "
        "for vllm run-batch, Ray Data or any scheduler to run",
    )
    add(
        "--batch-live-fallback",
        action="store_true",
        help="with --batch: ask the answers of a batch that failed, expired or was cancelled by live "
        "calls instead of in the next batch",
    )


#: `--batch` given without a value: the judge provider's own batch service.
PROVIDER_BATCHES = "provider"


class BatchOptions(msgspec.Struct, frozen=True):
    """`--batch` and `--batch-live-fallback`, read once: whether the judge calls go as batches, the
    folder of `--batch files:DIR` (None: the provider's own service), and whether the answers of a
    failed batch are asked live."""

    enabled: bool = False
    files: Path | None = None
    live_fallback: bool = False


def batch_options(args: argparse.Namespace, *, workers: int = 1) -> BatchOptions:
    """The batch flags of a grade or calibrate command line, checked (`workers`: its `--workers`)."""
    files = _batch_files(args.batch)
    if args.batch_live_fallback and not args.batch:
        raise UsageError("--batch-live-fallback needs --batch")
    if args.batch and getattr(args, "replicas", None):
        raise UsageError("--replica sends live calls; --batch sends batches to one service: choose one")
    if args.batch and workers > 1:
        raise UsageError("--batch grades in one process: the provider runs the batches; drop --workers")
    return BatchOptions(enabled=bool(args.batch), files=files, live_fallback=args.batch_live_fallback)


def _batch_files(given: str | None) -> Path | None:
    """The folder of `--batch files:DIR`, else None; a usage error for any other value."""
    if given in (None, PROVIDER_BATCHES):
        return None
    folder = given.removeprefix("files:")
    if folder == given or not folder:
        raise UsageError(
            f"--batch {shown(given)}: the only value --batch takes is files:DIR "
            "(put the battery before --batch, or another flag after it)"
        )
    return Path(folder)


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


def grader_factory(batch: BatchOptions, log: BatchLog | None) -> Callable[..., Any]:
    """The `grader` argument of `open_grader` for these batch options: the live `Grader`, or a
    `BatchGrader` with `--batch`."""
    if not batch.enabled:
        from ..grading.runner import Grader

        return Grader
    from ..grading.batch import BatchGrader

    return functools.partial(
        BatchGrader,
        files=batch.files,
        live_fallback=batch.live_fallback,
        on_status=log.status if log is not None else None,
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
