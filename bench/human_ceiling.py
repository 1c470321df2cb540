"""The human ceiling on public data: NQ301's annotators as tabench reviewers, GPT-4 as the judge.

`../shared/data/nq301` (Kamalloo et al., ACL 2023; see its SOURCE.md) holds 1,490 open-QA answers,
each judged by two annotators (a third on some), with GPT-4's verdict on each. This script writes
them as a results file (one record per answer, GPT-4's Yes/No as the judge's pass/fail; a reply that
says neither is left out) and a decisions file (each annotator's verdict as a blind audit by
reviewer `annotator1`..`annotator3`, the documented line format), then runs `tabench totals --json`
in process and prints what its `"reviewers"` section says: each pair of annotators, and the judge
against each and against their consensus, beside the paper's figures (two annotators at kappa
about 0.74, GPT-4 with people at about 0.69). It checks tabench's computation on real data, not
tabench's judges: the figures are the paper's data, read through the code `totals` runs. The third
annotator judged mostly answers the first two disagreed on, so the pairs with them are measured on
the hard cases and sit far below the ceiling by design.

    python bench/human_ceiling.py [--data ../shared/data/nq301]
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
import sys
import tempfile
from pathlib import Path

from tabench_dsl.cli import main as tabench

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "nq301"
PAPER = {"annotators": 0.74, "gpt-4 with people": 0.69}


def verdict(text: str) -> str | None:
    """pass / fail from a Yes/No cell (GPT-4's reply starts with it), None when it says neither."""
    head = text.strip().lower()
    if head.startswith("yes"):
        return "pass"
    if head.startswith("no"):
        return "fail"
    return None


def write_run(data: Path, folder: Path) -> tuple[Path, int]:
    """The results and decisions files of NQ301 in `folder`; the results path and the answers kept."""
    with open(data / "NQ301_human.tsv", encoding="utf-8") as f:
        human = list(csv.DictReader(f, delimiter="\t"))
    with open(data / "NQ301_gpt-4.tsv", encoding="utf-8") as f:
        gpt4 = {(row["id"], row["Model answer"]): row["gpt-4"] for row in csv.DictReader(f, delimiter="\t")}
    results, decisions = [], []
    for n, row in enumerate(human):
        judged = verdict(gpt4.get((row["id"], row["Model answer"]), ""))
        if judged is None:
            continue
        key = {"system": f"answer{n:04}", "question": f"nq{row['id']}"}
        results.append(
            {
                **key,
                "tier": "t2",
                "verdict": judged,
                "reason": "GPT-4 (NQ301_gpt-4.tsv)",
                "prompt_sha256": "nq301",
                "judge": {"backend": "openai", "model": "gpt-4"},
                "answer": row["Model answer"],
            }
        )
        for reviewer in ("annotator1", "annotator2", "annotator3"):
            person = verdict(row.get(reviewer) or "")
            if person is not None:
                decisions.append(
                    {
                        **key,
                        "verdict": person,
                        "prompt_sha256": "nq301",
                        "reviewer": reviewer,
                        "time": "2023-07-01T00:00:00Z",
                        "kind": "audit",
                    }
                )
    path = folder / "nq301.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in results), encoding="utf-8")
    (folder / "nq301.decisions.jsonl").write_text(
        "".join(json.dumps(d) + "\n" for d in decisions), encoding="utf-8"
    )
    return path, len(results)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tabench-nq301-") as folder:
        results, kept = write_run(args.data, Path(folder))
        out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")  # totals writes bytes to stdout.buffer
        with contextlib.redirect_stdout(out):
            status = tabench(["totals", str(results), "--json"])
        out.flush()
        text = out.buffer.getvalue().decode()
    if status != 0:
        print(f"tabench totals exited {status}")
        return 1
    reviewers = json.loads(text)["reviewers"]
    print(f"NQ301: {kept} answers with a GPT-4 verdict; reviewers {', '.join(reviewers['reviewers'])}")
    print(f"{'raters':<28} {'answers':>7} {'agreement':>9} {'kappa (95% bootstrap)':>24}")

    def row(name: str, figures: dict) -> None:
        kappa = "-" if figures["kappa"] is None else f"{figures['kappa']:.3f}"
        if figures["kappa_low"] is not None:
            kappa += f" ({figures['kappa_low']:.3f}-{figures['kappa_high']:.3f})"
        share = figures["agreement"]["value"]
        print(f"{name:<28} {figures['n']:>7} {'-' if share is None else f'{share:.1%}':>9} {kappa:>24}")

    for pair in reviewers["pairs"]:
        row(f"{pair['first']} ~ {pair['second']}", pair["people"])
        row("  judge ~ their consensus", pair["judge_vs_consensus"])
    for judge in reviewers["judge"]:
        row(f"all: judge ~ {judge['reviewer']}", judge["figures"])
    print(f"left out of the validated score (annotators disagree): {reviewers['disagreed']}")
    print(
        f"the paper: annotators kappa ~{PAPER['annotators']}, "
        f"GPT-4 with people kappa ~{PAPER['gpt-4 with people']}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
