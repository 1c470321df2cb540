"""How the readers of hostile files scale: each must take time that grows with its input, not faster.

Each figure is measured at a size N and at 4N in the same run; the ratio of the two times is about
4 for linear work and about 16 for quadratic work:

- lint of a rubric with N questions without exemplars (N warnings, each naming its source line);
- splitting one batch result line of N bytes arriving in 256-byte chunks (`LineSplitter`);
- checking the nesting of an Inspect JSON log of N bytes (`log_bounds.check_log`);
- an injection pattern that backtracks on Python's engine (`^(a+)+$`), searched on RE2 in an
  answer of N characters; Python's own engine is timed at 24 characters beside it, as the floor
  it replaces.

    python bench/hostile_bench.py [--n 4000]

Prints one line per figure, `NAME: N -> t s, 4N -> t s, ratio r`; exits 1 when a ratio is over 8.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tabench_dsl.core.linear_regex import compile_linear
from tabench_dsl.grading.batch.service import LineSplitter
from tabench_dsl.grading.log_bounds import check_log
from tabench_dsl.language.lint import lint_battery

RUBRIC_QUESTION = 'question q{n} {{\n  prompt "Question {n}?"\n  gold "Answer {n}."\n}}\n'


def battery(folder: Path, questions: int) -> Path:
    folder.mkdir(parents=True)
    (folder / "battery.yaml").write_text(
        "name: b\nscorer: tabench-1.1\npolicies: [p.policy]\nrubrics: [q.rubric]\n", encoding="utf-8"
    )
    (folder / "p.policy").write_text("S1: Judge the substance.\n", encoding="utf-8")
    text = "".join(RUBRIC_QUESTION.format(n=n) for n in range(questions))
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
    python = timed(lambda: re.search("^(a+)+$", "a" * 24 + "!"), runs=1)
    print(f"floor: Python's re on '^(a+)+$' with 24 characters: {python:.3f} s (doubles with each one more)")
    return 0 if max(ratios) <= 8 else 1


if __name__ == "__main__":
    sys.exit(main())
