"""How the reasoning cut (`core.reasoning.cut_reasoning`) scales: linear in the text, whatever its shape.

    python bench/reasoning_bench.py [--size 200000] [--runs 5]

For each shape of text (plain prose, many short blocks, deep nesting, an opener never closed, tag
fragments that almost match, stray closers) it times the cut on a text of `--size` characters and
on one eight times longer, and prints the characters per second and the growth: how much more the
long text takes than the short one, over how much more the floor takes (1.0 is exactly linear; a
quadratic scan would show about 8). The floor, measured in the same run, is one case-insensitive
regex search for the opener over the same text with its tags disguised (so it reads to the end):
the least a cut must do. Exit status 1 when a shape grows by more than `GROWTH_LIMIT`.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tabench_dsl.core.reasoning import cut_reasoning

#: The growth (x8 text, against the floor's) above which a shape counts as super-linear: a linear
#: cut shows about 1, a quadratic one about 8; the margin is for a machine shared with other work.
GROWTH_LIMIT = 3.0
#: Seconds each timing lasts at least (`best_time`).
MIN_TIMING = 0.05

#: Each shape: a unit repeated to the size asked for.
SHAPES: dict[str, Callable[[int], str]] = {
    "plain prose": lambda n: ("The index is kept in SQLite and compacted nightly. " * (n // 51 + 1))[:n],
    "many blocks": lambda n: ("<think>a short thought</think> and an answer. " * (n // 46 + 1))[:n],
    "deep nesting": lambda n: "<think>" * (n // 15) + "x" + "</think>" * (n // 15),
    "unclosed opener": lambda n: "Answer first. <think>" + "still thinking " * (n // 15),
    "near misses": lambda n: ("<thin <think </thin> think> <THINK " * (n // 34 + 1))[:n],
    "stray closers": lambda n: "<think>t</think>" + ("</think> text " * (n // 14 + 1))[:n],
}


def best_time(function: Callable[[], object], runs: int) -> float:
    """Seconds one call of `function` takes: the fastest of `runs` timings (the least disturbed),
    each over enough calls to last `MIN_TIMING` seconds (a search of a short text takes
    microseconds, below what one timing of a shared machine can tell apart)."""
    calls = 1
    while True:
        start = time.perf_counter()
        for _ in range(calls):
            function()
        if time.perf_counter() - start >= MIN_TIMING:
            break
        calls *= 2
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        for _ in range(calls):
            function()
        times.append((time.perf_counter() - start) / calls)
    return min(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    opener = re.compile(re.escape("<think>"), re.IGNORECASE)

    def floor_of(text: str) -> float:
        # One search over the whole text, its tags disguised so that it must read to the end.
        disguised = text.replace("<", "[")
        return best_time(lambda: opener.search(disguised), args.runs)

    worst = 0.0
    head = f"{'shape':<16} {'chars/s':>12} {'floor chars/s':>14} {'vs floor':>9}"
    print(f"{head} {'growth x8':>10} {'floor x8':>9}")
    for name, make in SHAPES.items():
        short, long = make(args.size), make(args.size * 8)
        t_short = best_time(lambda text=short: cut_reasoning(text), args.runs)
        t_long = best_time(lambda text=long: cut_reasoning(text), args.runs)
        f_short, f_long = floor_of(short), floor_of(long)
        # Growth against the floor's own: a longer text costs more per character for any scan
        # once it outgrows the CPU caches; what is left is the cut's own growth.
        growth = (t_long / t_short) / (f_long / f_short)
        worst = max(worst, growth)
        rate, floor_rate = len(long) / t_long, len(long) / f_long
        print(
            f"{name:<16} {rate:>12,.0f} {floor_rate:>14,.0f} {rate / floor_rate:>9.2f} "
            f"{growth:>10.2f} {f_long / (8 * f_short):>9.2f}"
        )
    print(
        f"worst growth x8 against the floor's: {worst:.2f} (limit {GROWTH_LIMIT}), best of {args.runs} runs"
    )
    return 1 if worst > GROWTH_LIMIT else 0


if __name__ == "__main__":
    sys.exit(main())
