"""`--batch` and `--batch-live-fallback` for `grade` and `calibrate`, read once into `BatchOptions`.

The flags make `session.open_grader` build a `grading.batch.BatchGrader`; with the builtin or replay
judge that is a usage error (the grader says so when the judge is known). What the batches print
while they run, and what Ctrl-C says of them, is `batch_log`'s.
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from ..core.display import shown
from ..core.errors import UsageError

if TYPE_CHECKING:
    from .batch_log import BatchLog


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
