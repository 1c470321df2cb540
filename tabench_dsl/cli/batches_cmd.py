"""`tabench batches RESULTS [--cancel]`: the batches a `grade --batch` submitted (from the ledger beside
RESULTS), each with its state at the provider now; `--cancel` cancels those still running.

Decided where the spec is silent:
- A batch the ledger saw end is not asked about again: its state is the one recorded.
- A batch whose state cannot be fetched is listed with the reason; the command exits 1.
- `--cancel` leaves the ledger as it is: a later `grade --batch --resume` sees the batches
  cancelled and sends their unfinished answers in a new round.
- The ledger never chooses where a key goes: calls go to the endpoint the command line and
  environment name now (`--judge URL`, else OPENAI_BASE_URL or ANTHROPIC_BASE_URL, else the
  provider's own API), and a ledger entry recording another endpoint stops the command (exit 2)
  before anything is sent (`grading.batch.reopen`).
- Exit status: 0 done, 1 when some batch could not be asked about or cancelled, 2 for usage.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from pathlib import Path

from ..core.display import shown
from ..core.errors import UsageError
from .command_help import add_command


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = add_command(
        sub,
        "batches",
        help="list (or cancel) the batches a grade --batch submitted",
        description="List the batches a `tabench grade --batch` submitted for a results file, with "
        "their state and request counts at the provider; --cancel cancels those still running.",
        exit_codes=(
            (0, "done"),
            (1, "some batch could not be asked about or cancelled"),
        ),
    )
    add = parser.add_argument
    add("results", type=Path, metavar="RESULTS", help="the results file (JSONL) of the batch grading")
    add("--cancel", action="store_true", help="cancel every batch still running")
    add(
        "--judge",
        metavar="URL",
        help="the http(s) base URL of the OpenAI-wire batch service the grading used with --judge "
        "(else OPENAI_BASE_URL or ANTHROPIC_BASE_URL, else the provider's own API), or files:DIR, "
        "the folder of a grade --batch files:DIR",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ..grading.batch import Ended, Submitted, ledger_path, read_ledger
    from ..grading.batch.reopen import Endpoint, check_endpoint, endpoint_named_now
    from ..grading.event_loop import run_event_loop

    path = ledger_path(args.results)
    if not path.is_file():
        raise UsageError(f"{path}: no batch ledger (was {args.results} graded with --batch?)")
    submitted: list[Submitted] = []
    ended: dict[str, str] = {}
    for entry in read_ledger(path):
        if isinstance(entry, Submitted):
            submitted.append(entry)
        elif isinstance(entry, Ended):
            ended[entry.id] = entry.state
    judge_url = (
        args.judge if args.judge and args.judge.startswith(("http://", "https://", "files:")) else None
    )
    if args.judge and judge_url is None:
        raise UsageError(f"--judge: not an http(s) URL nor files:DIR: '{shown(args.judge)}'")
    endpoints: dict[str, Endpoint] = {}
    for entry in submitted:
        if entry.id not in ended:  # only a batch asked about is sent anything
            now = endpoints.setdefault(
                entry.service, endpoint_named_now(entry.service, judge_url, os.environ)
            )
            check_endpoint(entry, now)
    lines, problems = run_event_loop(functools.partial(_ask, submitted, ended, endpoints, args.cancel))
    print(f"{'batch':<32} {'service':<10} {'round':>5} {'requests':>8}  state")
    for line in lines:
        print(line)
    for problem in problems:
        print(f"tabench: {shown(problem)}", file=sys.stderr)
    return 1 if problems else 0


async def _ask(submitted, ended, endpoints, cancel: bool) -> tuple[list[str], list[str]]:
    import aiohttp

    from ..core.errors import TransportError
    from ..grading.batch.reopen import reopen_service

    lines: list[str] = []
    problems: list[str] = []
    async with aiohttp.ClientSession() as session:
        for entry in submitted:
            kind = shown(entry.service)
            head = f"{shown(entry.id):<32} {kind:<10} {entry.round:>5} {len(entry.requests):>8}  "
            if entry.id in ended:
                lines.append(head + f"{shown(ended[entry.id])} (ended)")
                continue
            try:
                service = reopen_service(entry, session, os.environ, endpoints[entry.service])
                status = await service.status(entry.id)
                if cancel and not status.ended:
                    status = await service.cancel(entry.id)
                    head += "cancel requested: "
            except TransportError as exc:
                lines.append(head + "unknown")
                problems.append(f"batch {shown(entry.id)}: {exc}")
                continue
            counts = f", {status.done}/{status.total} done" if status.total else ""
            lines.append(head + f"{shown(status.state)}{counts}" + (" (ended)" if status.ended else ""))
    return lines, problems
