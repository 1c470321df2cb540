"""How well the builtin lexical judge agrees with the shipped exemplars, per battery and overall.

Runs `tabench calibrate BATTERY --judge builtin --json` in process (the real calibrate path: T1,
the judge, decoding, retries, through `runner.Grader`) for every battery under `examples/`, and
prints agreement and Cohen's kappa per battery, then overall (exemplars pooled). The target is an
agreement of at least 90%; exit status 1 below it.

    python bench/builtin_agreement.py [BATTERY ...] [--min 0.9]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
from pathlib import Path

from tabench_dsl.cli import main
from tabench_dsl.grading.calibrate import cohen_kappa

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def calibrate_json(battery: Path) -> dict:
    """The `tabench calibrate --json` object of one battery, graded by the builtin judge."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main(["calibrate", str(battery), "--judge", "builtin", "--no-cache", "--json"])
    if status not in (0, 1):
        raise SystemExit(f"tabench calibrate {battery} exited {status}")
    return json.loads(out.getvalue())


def pairs_of(result: dict) -> list[tuple[str, str]]:
    """(expected, got) for every exemplar, rebuilt from the confusion table."""
    return [
        (expected, got)
        for expected, row in result["confusion"].items()
        for got, count in row.items()
        for _ in range(count)
    ]


def main_bench(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("batteries", nargs="*", type=Path, help="battery folders (default: examples/*)")
    parser.add_argument("--min", type=float, default=0.9, help="agreement target (default 0.9)")
    args = parser.parse_args(argv)
    batteries = args.batteries or sorted(p.parent for p in EXAMPLES.glob("*/battery.yaml"))
    pooled: list[tuple[str, str]] = []
    label = ""
    print(f"{'battery':<24}{'exemplars':>10}{'agree':>8}{'agreement':>11}{'kappa':>8}")
    for battery in batteries:
        result = calibrate_json(battery)
        label = result["judge"]["label"]
        pooled += pairs_of(result)
        agreement = result["agreement"] if result["agreement"] is not None else float("nan")
        kappa = result["kappa"] if result["kappa"] is not None else float("nan")
        print(f"{result['battery']:<24}{result['n']:>10}{result['agree']:>8}{agreement:>11.1%}{kappa:>8.3f}")
    agree = sum(1 for e, g in pooled if e == g)
    overall = agree / len(pooled) if pooled else 0.0
    kappa = cohen_kappa(pooled)
    print(f"{'overall':<24}{len(pooled):>10}{agree:>8}{overall:>11.1%}{(kappa or 0.0):>8.3f}")
    print(f"judge: {label}; target agreement {args.min:.0%}: {'met' if overall >= args.min else 'MISSED'}")
    return 0 if overall >= args.min else 1


if __name__ == "__main__":
    sys.exit(main_bench())
