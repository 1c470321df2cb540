"""`tabench grade --workers N`: grading spread over N worker processes, one results writer.

Why: against a fast judge a grading is bound by one core (the HTTP client alone costs ~240 us a
call); N processes use N cores. Against a real judge (hundreds of milliseconds a call) one process
is plenty, so the default stays one process and `Grader.run` without this package. Measured on a
2-core machine against the bench's local judge (20 ms, itself on those 2 cores), 20,000 calls:
at --concurrency 64 two processes were slower than one (efficiency 0.63-0.66 against 0.73-0.74;
465-510 us CPU a call against 372-380: the parent's share, two start-ups, more wake-ups; even the
bare aiohttp client loses when split in two), while at 256, where one process is CPU bound, two
finished in 7.1 s instead of 8.9 s.

    parent (pool.WorkerPool)                       worker (worker.main)
      reads the answers, skips those done            its own event loop, aiohttp session, judge,
      config frame ------------------------------->  cache connection, limiter (a share of the
      answer batches (bounded in flight) --------->  concurrency), Grader.grade per answer
      writes each record as it arrives <-----------  finished records, batched per loop turn
      end frame (no answers left) ---------------->  finishes what it holds, says done, exits

One module per side and one for what travels between them:
- `frames`: the messages and their encoding (a length-prefixed msgpack frame);
- `pool`: the parent, which starts the workers, feeds them and alone writes the results file;
- `worker`: a worker process, entered through `worker.main` (`pool.WORKER_COMMAND`).

Ctrl-C or SIGTERM (`core.interrupts`): the parent stops handing out answers, closes the workers'
input and terminates them; records already received are whole, those in flight are not written
(resume grades them); exit 130. The parent killed outright (kill -9): a worker sees end-of-file on
its stdin without an end frame and exits at once. A worker that dies: its answers in flight are not
written; the parent says so, goes on with the others and the run exits 1. A judge or usage error in
a worker (a refused key, a missing model) stops the run as it stops a single-process run.

Decided where the spec is silent: `--rpm`/`--tpm` are split evenly between the workers;
`--workers auto` is 2 with 4 CPUs or more, else 1 (see `parse_workers`); the workers run in a
session of their own (a terminal's Ctrl-C reaches the parent only, which stops them).
"""

from __future__ import annotations

from .frames import WorkerConfig
from .pool import WORKER_COMMAND, WorkerPool, parse_workers

__all__ = ["WORKER_COMMAND", "WorkerConfig", "WorkerPool", "parse_workers"]
