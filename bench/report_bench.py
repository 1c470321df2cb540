"""How long `tabench report --html` takes to build the page of a large run.

Writes a results file of 20,000 records (10 systems, every outcome, answers of varied length; the
same generator the viewer's tests use) to a temporary folder, reads it once with `load_run`, then
times `render_report` over a few runs: with the default cap (`MAX_ANSWERS` answers in full) and with
every answer in full, the page's worst case. Reading the file is timed apart, since the page
builder never sees the file. Each figure is the median of the runs, as wall-clock time and as this
process's CPU time: on a shared machine the second is the steadier one to compare.

    python bench/report_bench.py [--records 20000] [--runs 5]

Prints one line per figure, with the page size, e.g.
`render, 1,000 answers in full: 0.310 s wall, 0.290 s CPU (median of 5), 1.1 MB`; exits 0.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# The record generator lives with the tests; the bench uses the same one so the figures describe
# the runs the tests check.
sys.path.insert(0, str(REPO / "tests"))


def _median_seconds(work: Callable[[], object], runs: int) -> tuple[str, object]:
    """`work()` run `runs` times: its median wall-clock and CPU seconds as text, and its result."""
    wall, cpu, result = [], [], None
    for _ in range(runs):
        started, started_cpu = time.perf_counter(), time.process_time()
        result = work()
        wall.append(time.perf_counter() - started)
        cpu.append(time.process_time() - started_cpu)
    return (
        f"{statistics.median(wall):.3f} s wall, {statistics.median(cpu):.3f} s CPU (median of {runs})"
    ), result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)

    from support.make_results import many_results, write_results

    from tabench_dsl.review.report import MAX_ANSWERS, render_report
    from tabench_dsl.review.viewer.run import load_run

    with tempfile.TemporaryDirectory() as folder:
        path = write_results(Path(folder) / "run.jsonl", many_results(args.records))
        read, run = _median_seconds(lambda: load_run(path), args.runs)
        print(f"read {args.records:,} records: {read}")
        render_report(run)  # the first page pays for imports and template compilation: not counted
        for cap in (MAX_ANSWERS, args.records):
            seconds, html = _median_seconds(lambda cap=cap: render_report(run, max_answers=cap), args.runs)
            size = len(str(html).encode("utf-8")) / 1e6
            print(f"render, {min(cap, args.records):,} answers in full: {seconds}, {size:.1f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
