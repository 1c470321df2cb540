"""How the readers of hostile files scale: each must take time that grows with its input, not faster.

Each figure is measured at a size N and at 4N in the same run; the ratio of the two times is about
4 for linear work and about 16 for quadratic work:

- lint of a rubric with N questions without exemplars (N warnings, each naming its source line);
- splitting one batch result line of N bytes arriving in 256-byte chunks (`LineSplitter`);
- checking the nesting of an Inspect JSON log of N bytes (`log_bounds.check_log`);
- an injection pattern that backtracks on Python's engine (`^(a+)+$`), searched on RE2 in an
  answer of N characters; Python's own engine is timed at 24 characters beside it, as the floor
  it replaces;
- the language server's diagnostics of a rubric with N questions, one warning each (the lint of
  the buffer and each warning's range in the client's units, as `lsp.server.publish` makes them).

Then a battery's own contradiction phrase that backtracks (`(a|aa)+b`, hours on the `regex`
module) read in a reason of 60 `a`s: the time the check takes beside its budget per reason
(`contradiction.REASON_SECONDS`), which is what it may cost.

Then the doors of round 3, each printed with its time and peak memory beside the ordinary
command's on input of the same size (the floor, measured in the same run):

- the language server's diagnostics of a 0.7 MiB rubric of 5,000 questions, one warning each,
  beside `tabench lint` of it;
- `totals --csv` of a 2 MiB results file of 4,000 systems each naming its own facet, beside
  `totals --json` of it (each in its own process: peak RSS);
- a `--batch files:DIR` results line nested 50,000 deep, beside a flat line of the same size.

    python bench/hostile_bench.py [--n 4000]

Prints one line per figure, `NAME: N -> t s, 4N -> t s, ratio r`, the phrase budget's line, then
one line per door; exits 1 when a ratio is over 8, the phrase takes over 8 times its budget, or a
door takes over 8 times the time or memory of its floor.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pygls.workspace import TextDocument

from tabench_dsl.core.errors import UsageError
from tabench_dsl.core.linear_regex import compile_linear
from tabench_dsl.grading.batch.file_batches import FileBatches
from tabench_dsl.grading.batch.service import LineSplitter
from tabench_dsl.grading.contradiction import REASON_SECONDS, ContradictionCheck
from tabench_dsl.grading.log_bounds import check_log
from tabench_dsl.language.editing import problems_of_open_files
from tabench_dsl.language.lint import lint_battery
from tabench_dsl.lsp.documents import DocumentLines, diagnostic

RUBRIC_QUESTION = 'question q{n} {{\n  prompt "Question {n}?"\n  gold "Answer {n}."\n}}\n'


def battery(folder: Path, questions: int, pad: int = 0) -> Path:
    """A battery of `questions` questions without exemplars (a warning each), each prompt padded
    with `pad` more characters."""
    folder.mkdir(parents=True)
    (folder / "battery.yaml").write_text(
        "name: b\nscorer: tabench-1.1\npolicies: [p.policy]\nrubrics: [q.rubric]\n", encoding="utf-8"
    )
    (folder / "p.policy").write_text("S1: Judge the substance.\n", encoding="utf-8")
    text = "".join(RUBRIC_QUESTION.format(n=f"{n}{'x' * pad}") for n in range(questions))
    (folder / "q.rubric").write_text(text, encoding="utf-8")
    return folder


def timed(work: Callable[[], object], runs: int = 3) -> float:
    """The best of `runs` timings of `work()` (the machine is shared: the best is the least noisy)."""
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - start)
    return best


def split(size: int) -> None:
    splitter = LineSplitter(1 << 30)
    chunk = b"y" * 256
    for _ in range(size // 256):
        splitter.feed(chunk)
    splitter.end()


def lsp_diagnostics(folder: Path) -> int:
    """The language server's diagnostics of the battery's rubric as an open buffer: the lint of
    the buffer in its battery, then each problem's range in the client's units."""
    rubric = folder / "q.rubric"
    text = rubric.read_text(encoding="utf-8")
    doc = TextDocument(rubric.resolve().as_uri(), text)
    found = 0
    for problems in problems_of_open_files(str(rubric), text, {}).values():
        lines = DocumentLines(doc)
        found += len([diagnostic(lines, p) for p in problems])
    return found


def in_process(work: Callable[[], object]) -> tuple[float, float]:
    """Seconds of one `work()`, and the peak MiB of Python allocations (tracemalloc) of another
    (tracing slows the work down: the time is taken without it)."""
    start = time.perf_counter()
    work()
    seconds = time.perf_counter() - start
    tracemalloc.start()
    try:
        work()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return seconds, peak / (1 << 20)


#: Runs one tabench command in a fresh process, its output to /dev/null; prints seconds and peak RSS.
_MEASURE = """
import contextlib, os, resource, sys, time
sys.path.insert(0, sys.argv[1])
from tabench_dsl.cli import main
with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
    start = time.perf_counter()
    main(sys.argv[2:])
    seconds = time.perf_counter() - start
try:  # this program's own peak: ru_maxrss would keep the parent's from before exec
    with open("/proc/self/status") as status:
        peak = next(int(l.split()[1]) for l in status if l.startswith("VmHWM:"))
except (OSError, StopIteration):
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(seconds, peak / 1024)
"""


def in_subprocess(argv: list[str]) -> tuple[float, float]:
    """Seconds and peak RSS in MiB of one tabench command in its own process."""
    root = str(Path(__file__).resolve().parents[1])
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, root, *argv], capture_output=True, text=True, check=True
    )
    seconds, mib = done.stdout.split()
    return float(seconds), float(mib)


def door(name: str, hostile: tuple[float, float], floor: tuple[float, float], floor_name: str) -> float:
    """Print one door beside its floor; the larger of its time and memory ratios."""
    print(
        f"{name}: {hostile[0]:.3f} s, {hostile[1]:.1f} MiB peak; {floor_name}: {floor[0]:.3f} s, "
        f"{floor[1]:.1f} MiB peak"
    )
    return max(hostile[0] / max(floor[0], 1e-3), hostile[1] / max(floor[1], 1e-3))


def results_of_many_facets(path: Path, systems: int) -> None:
    """A results file of `systems` systems, each naming its own facet (one T1 record each)."""
    record = {
        "system": "s", "question": "q1", "tier": "t1", "verdict": "pass", "reason": "T1",
        "prompt_sha256": "0" * 64, "battery": "b", "answer": "a", "answer_sha256": "0" * 64,
        "attempts": [], "judge": {"backend": "t1", "model": "t1"}, "time": "2026-01-01T00:00:00+00:00",
    }  # fmt: skip
    with path.open("w", encoding="utf-8") as out:
        for n in range(systems):
            record.update(system=f"system-{n:05d}", facets={f"facet_of_system_{n:05d}": True})
            out.write(json.dumps(record) + "\n")


def batch_line(folder: Path, body: bytes) -> Callable[[], object]:
    """Reading a files:DIR batch whose results file holds one line with `body` as its reply."""
    service = FileBatches(folder)
    request = json.dumps({"model": "m", "messages": [{"role": "user", "content": "x"}]}).encode()
    status = asyncio.run(service.submit([service.entry("tb-1", request)]))
    line = b'{"id": "x", "custom_id": "tb-1", "response": {"status_code": 200, "body": ' + body + b"}}\n"
    service.results_file(status.id).write_bytes(line)

    def read() -> object:
        try:
            return asyncio.run(service.status(status.id))
        except UsageError as bad:  # the deep line: named with its place, never a traceback
            return bad

    return read


def round_three(root: Path) -> list[float]:
    """The doors of round 3 (module docstring), each beside its floor; their ratios."""
    ratios = []
    rubric = battery(root / "lsp", 5000, pad=30)  # about 0.7 MiB
    size = (rubric / "q.rubric").stat().st_size / (1 << 20)
    ratios.append(
        door(
            f"lsp diagnostics, {size:.2f} MiB rubric, 5000 warnings",
            in_process(lambda: lsp_diagnostics(rubric)),
            in_process(lambda: lint_battery(rubric)),
            "lint",
        )
    )
    results = root / "facets.jsonl"
    results_of_many_facets(results, 4000)
    size = results.stat().st_size / (1 << 20)
    as_json = in_subprocess(["totals", str(results), "--json"])  # first: it builds the results index
    as_csv = in_subprocess(["totals", str(results), "--csv"])
    ratios.append(
        door(f"totals --csv, {size:.1f} MiB, 4000 systems x own facet", as_csv, as_json, "totals --json")
    )
    depth = 50_000
    deep = batch_line(root / "deep", b"[" * depth + b"]" * depth)
    flat = batch_line(root / "flat", b'{"x": "' + b"y" * (2 * depth - 10) + b'"}')
    ratios.append(door("files:DIR line nested 50000 deep", in_process(deep), in_process(flat), "flat line"))
    return ratios


def phrase_budget() -> float:
    """A battery's backtracking contradiction phrase on a reason it cannot match: the check's time
    as a multiple of its budget per reason (a shipped scorer's lists are trusted: no budget)."""
    check = ContradictionCheck(pass_shaped=["(a|aa)+b"], fail_shaped=["wrong"], trusted=False)
    seconds = timed(lambda: check.conclusion("a" * 60 + " is wrong"), runs=1)
    ratio = seconds / REASON_SECONDS
    budget = f"{ratio:.1f}x its budget ({REASON_SECONDS} s)"
    print(f"backtracking phrase '(a|aa)+b', 60 characters: {seconds:.3f} s, {budget}")
    return ratio


def figure(name: str, make: Callable[[int], Callable[[], object]], n: int) -> float:
    small, large = timed(make(n)), timed(make(4 * n))
    ratio = large / small if small else float("inf")
    print(f"{name}: {n} -> {small:.3f} s, {4 * n} -> {large:.3f} s, ratio {ratio:.1f}")
    return ratio


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=4000)
    n = parser.parse_args().n
    ratios = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)

        def lint(size: int) -> Callable[[], object]:
            folder = battery(root / f"b{size}", size)
            problems = lint_battery(folder)
            assert len(problems) == size, problems[:3]  # one warning a question: no exemplars
            return lambda: lint_battery(folder)

        def log(size: int) -> Callable[[], object]:
            path = root / f"log{size}.json"
            body = ", ".join('{"a": [1, {"b": "x\\\\"y"}]}' for _ in range(size * 50))
            path.write_text('{"version": 2, "samples": [' + body + "]}", encoding="utf-8")
            return lambda: check_log(path)

        ratios.append(figure("lint warnings (questions)", lint, n))
        ratios.append(figure("result line split (KiB)", lambda s: lambda: split(s * 1024), n))
        ratios.append(figure("log nesting check (x50 samples)", log, n))
        pattern = compile_linear("^(a+)+$")
        ratios.append(
            figure("RE2 '^(a+)+$' (KiB)", lambda s: lambda: pattern.search("a" * (s * 1024) + "!"), n)
        )

        def lsp(size: int) -> Callable[[], object]:
            folder = battery(root / f"lsp{size}", size)
            return lambda: lsp_diagnostics(folder)

        ratios.append(figure("lsp diagnostics (questions)", lsp, n))
        ratios.append(phrase_budget())
        doors = round_three(root)
    python = timed(lambda: re.search("^(a+)+$", "a" * 24 + "!"), runs=1)
    print(f"floor: Python's re on '^(a+)+$' with 24 characters: {python:.3f} s (doubles with each one more)")
    return 0 if max(ratios) <= 8 and max(doors) <= 8 else 1


if __name__ == "__main__":
    sys.exit(main())
