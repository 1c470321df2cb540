"""Import bench: real evals come over whole, and closed answers are settled without a judge call.

    python bench/import_bench.py

1. Imports each real source under tests/data/imports (openai/evals registry evals, a hosted Evals
   export, promptfoo's examples and a results file, Inspect AI datasets; see its NOTICE.md) with
   `tabench import`, in a temporary folder, and lints and compiles each battery (target: 0 lint
   errors).
2. Compares the questions with the sources: for the registry, hosted and Inspect files, every
   sample with a prompt and a gold is a question whose gold is the sample's first `ideal` /
   `target` / the field the criterion references (target: every one).
3. Grades three answers per question that has a `match` check (the gold written another way, a
   wrong closed answer, an answer with nothing to read) with the builtin judge, once as imported
   (no `decides`) and once with `decides` added to every check, and prints how many answers each
   tier settled: the judge calls a check saved (the floor: the same answers with every check
   removed, where T1 and the judge settle them all).
Exit status 1 when a target is missed.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE.parent / "tests" / "data" / "imports"
sys.path.insert(0, str(HERE.parent))

from tabench_dsl.cli import main  # noqa: E402
from tabench_dsl.language.battery import load_battery  # noqa: E402
from tabench_dsl.language.lint import lint_battery  # noqa: E402
from tabench_dsl.language.render import compile_battery  # noqa: E402
from tabench_dsl.store.results import iter_records  # noqa: E402

REGISTRY = DATA / "openai_evals" / "evals" / "registry"
SOURCES: dict[str, tuple[str, list[Path]]] = {
    "registry": (
        "openai-evals",
        [REGISTRY / "evals" / n for n in ("test-basic.yaml", "logic.yaml", "finance.yaml")],
    ),
    "hosted": (
        "openai-evals",
        [DATA / "openai_hosted" / n for n in ("run.json", "eval.json")],
    ),
    "promptfoo": (
        "promptfoo",
        [
            DATA / "promptfoo" / d / "promptfooconfig.yaml"
            for d in ("simple-test", "getting-started", "simple-csv")
        ],
    ),
    "pf-results": ("promptfoo", [DATA / "promptfoo" / "sample-export" / "sample-export.json"]),
    "inspect": ("inspect", [DATA / "inspect" / n for n in ("security_guide.jsonl", "theory_of_mind.jsonl")]),
    "inspect-mcq": ("inspect", [DATA / "inspect" / "samples-mcq.jsonl"]),
}
#: The samples each registry eval reads, for the comparison with the sources.
REGISTRY_SAMPLES = {
    "test-match": "test_match/samples.jsonl",
    "test-fuzzy-match": "test_fuzzy_match/samples.jsonl",
    "logic-fact": "logic/samples.jsonl",
    "finance": "finance/credit.jsonl",
}


def quiet(argv: list[str]) -> int:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return main(argv)


def jsonl(path: Path) -> list[tuple[int, dict]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [(n, json.loads(line)) for n, line in enumerate(lines, start=1) if line.strip()]


def expected_golds(name: str) -> dict[str, str]:
    """Question id -> the gold the source gives it, for the sources whose ids are plain."""
    golds: dict[str, str] = {}
    if name == "registry":
        for evl, data in REGISTRY_SAMPLES.items():
            for line, row in jsonl(REGISTRY / "data" / data):
                ideal = row["ideal"] if isinstance(row["ideal"], list) else [row["ideal"]]
                golds[f"{evl}.{line}"] = ideal[0]
    elif name == "hosted":
        run = json.loads((DATA / "openai_hosted" / "run.json").read_text(encoding="utf-8"))
        items = [row["item"] for row in run["data_source"]["source"]["content"]]
        golds.update({f"run.{n}": item["ground_truth"] for n, item in enumerate(items, start=1)})
    elif name == "inspect":
        rows = [row for _, row in jsonl(DATA / "inspect" / "security_guide.jsonl")]
        golds.update({str(n): row["target"] for n, row in enumerate(rows, start=1)})
    return golds


def closed_answers(battery) -> list[dict]:
    """Three answers per question with a check: the gold said another way, a wrong closed answer,
    and one with nothing to read."""
    rows = []
    for q in battery.questions:
        check = q.match
        if check is None:
            continue
        if check.kind == "number":
            right, wrong = f"The result is {float(check.expected.rstrip('%')):.3f}.", "It is 123456."
        elif check.kind == "choice":
            right = f"Answer: {check.expected}"
            wrong = "Answer: " + next(c for c in (check.among or "AB") if c != check.expected)
        else:
            right, wrong = q.gold.strip(), "Something else entirely"
        for system, text in (("right", right), ("wrong", wrong), ("unread", "I would rather not say.")):
            rows.append({"system": system, "question": q.id, "answer": text})
    return rows


def tiers(folder: Path, answers: Path, out: Path) -> Counter:
    assert quiet(["grade", str(folder), "--answers", str(answers), "--out", str(out), "--no-cache"]) in (0, 1)
    return Counter((r.tier, r.verdict if r.tier == "match" else "") for r in iter_records(out))


def rewrite_checks(folder: Path, how: str) -> None:
    for rubric in (folder / "questions").glob("*.rubric"):
        lines = rubric.read_text(encoding="utf-8").split("\n")
        if how == "decides":
            lines = [
                ln + " decides" if ln.startswith("  match ") and not ln.endswith(" decides") else ln
                for ln in lines
            ]
        else:
            lines = [ln for ln in lines if not ln.startswith("  match ")]
        rubric.write_text("\n".join(lines), encoding="utf-8")


def _cell(counts: Counter) -> str:
    decided = f"{counts[('match', 'pass')]}+{counts[('match', 'fail')]}f"
    return f"match {decided}, t1 {counts[('t1', '')]}, judge {counts[('t2', '')]}"


def main_bench() -> int:
    missed = 0
    print(f"{'source':12} {'questions':>9} {'checks':>6} {'lint errors':>11} {'golds as source':>15}")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for name, (kind, sources) in SOURCES.items():
            out = root / name
            status = quiet(["import", kind, *map(str, sources), "--out", str(out)])
            errors = (
                [p for p in lint_battery(out) if p.severity == "error"]
                if status in (0, 1)
                else ["not written"]
            )
            battery = load_battery(out)
            compile_battery(battery)
            golds = expected_golds(name)
            found = {q.id: q.gold for q in battery.questions}
            same = sum(found.get(qid) == gold for qid, gold in golds.items())
            checks = sum(q.match is not None for q in battery.questions)
            shown = f"{same}/{len(golds)}" if golds else "-"
            print(f"{name:12} {len(battery.questions):>9} {checks:>6} {len(errors):>11} {shown:>15}")
            missed += bool(errors) or same != len(golds)
        print()
        print("closed answers graded (builtin judge): tier counts")
        print(f"{'source':12} {'answers':>7}  {'checks as imported':32}{'with decides':32}no checks (floor)")
        for name in ("registry", "hosted", "promptfoo", "inspect-mcq"):
            folder = root / name
            rows = closed_answers(load_battery(folder))
            answers = root / f"{name}.answers.jsonl"
            answers.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
            counts = []
            for how in ("imported", "decides", "none"):
                if how != "imported":
                    rewrite_checks(folder, how)
                counts.append(tiers(folder, answers, root / f"{name}.{how}.jsonl"))
            cells = [_cell(c) for c in counts]
            print(f"{name:12} {len(rows):>7}  {cells[0]:32}{cells[1]:32}{cells[2]}")
    print(
        "\nmatch P+Nf: answers a check passed and failed without a judge call; judge: answers sent to it."
        "\nNo timing is measured here; grading runs the builtin judge in-process."
    )
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main_bench())
