"""How fast `tabench compile --json` turns a battery into prompts, whole process included.

Builds a 5,000-question battery in a temporary folder (every field of the rubric language used),
then times the complete `tabench compile BATTERY --json` process (from process start, stdout to a
file) over a few runs, and compares it with a floor measured in the same run: a bare `python -c`
process that renders the same prompts from ready values with json.dumps and string joins. One
cProfile run says where the time goes.

    python bench/compile_bench.py [--questions 5000] [--runs 5] [--no-profile]

Prints e.g. `compile: 5000 prompts in 0.61 s = 8200 prompts/s; floor 52000/s; ratio 6.3`; exits 0.
The target is >= 5,000 prompts/s on a 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import os
import pstats
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TARGET = 5000.0
PER_FILE = 100

POLICY_A = """\
# House rules, first file.
S1: Judge the substance of the answer,
    not its wording or its length.
S2: A premise rejection that names the actual mechanism is judged on substance.
S3: Extra correct detail passes.
S4: Names that refer to the same thing are the same answer.
S5: Tool narration around the answer is ignored.
S6: A bare 'cannot determine' fails.
"""
POLICY_B = """\
S7: Partial credit is not a pass.
S8: Quote the gold only when the answer is ambiguous.
S9: An answer in another language is judged on its content — français, 日本語.
S10: <tags> & entities are text.
S11: Summaries at the end do not override the body.
S12: Missing answers fail.
"""


def _question(i: int) -> str:
    qid = f"q{i:05d}"
    guide_or_facets = (
        f'  guide "Watch the stage order of pipeline {i}; a missing Compact is minor."\n'
        if i % 2
        else (
            f'  facet missing_minor "omits the order of stage {i}"\n'
            f'  facet erroneous_assertion "claims a Summarize stage in {i}"\n'
            f'  facet extra_correct_info "names the Compact schedule of {i}"\n'
        )
    )
    return (
        f"question {qid} {{\n"
        f'  prompt "Which stages make up memory pipeline #{i}? Answer with \\"names\\", café."\n'
        f'  gold "Four stages: Ingest, Index, Recall, Compact ({i})"\n'
        f'  accept "Ingest, Index, Recall and Compact ({i})"\n'
        f'  accept "ingest → index → recall → compact"\n'
        f'  trap "There is no Summarize stage in pipeline {i}."\n'
        f'  structure "A list of stage names, one per line"\n'
        f'  scoring """\n'
        f"    All four stages are needed for a pass;\n"
        f"    three of four is partial, not full credit ({i}).\n"
        f'    """\n'
        f"{guide_or_facets}"
        f'  exemplar correct "Ingest, Index, Recall, Compact." why "all four named"\n'
        f'  exemplar partial "Ingest, Index, Recall." why "three of four" expect fail\n'
        f'  exemplar incorrect "Ingest, Summarize." why "names the trap"\n'
        f"{'  t1 off' + chr(10) if i % 7 == 0 else ''}"
        f"}}\n\n"
    )


def build_battery(root: Path, n: int) -> Path:
    """Write an n-question battery under `root`; return its folder."""
    folder = root / "bench-battery"
    (folder / "questions").mkdir(parents=True)
    (folder / "battery.yaml").write_text(
        "name: compile-bench\nscorer: tabench-1.1\npolicies: [a.policy, b.policy]\n"
        "rubrics: [questions/*.rubric]\njudge: {model: bench-model, temperature: 0, max_tokens: 300}\n",
        encoding="utf-8",
    )
    (folder / "a.policy").write_text(POLICY_A, encoding="utf-8")
    (folder / "b.policy").write_text(POLICY_B, encoding="utf-8")
    for start in range(0, n, PER_FILE):
        text = "".join(_question(i) for i in range(start, min(start + PER_FILE, n)))
        (folder / "questions" / f"part{start // PER_FILE:04d}.rubric").write_text(text, encoding="utf-8")
    return folder


# The floor: the same prompts from ready values, with json.dumps and string joins only.
FLOOR = r"""
import hashlib, json, sys
v = json.load(open(sys.argv[1], encoding="utf-8"))
p0, p1, p2, p3, p4 = v["pieces"]
policies = v["policies"]
out = []
for q in v["questions"]:
    system = (p0 + policies + p1 + json.dumps(q["obj"], indent=1, ensure_ascii=False, sort_keys=True)
              + p2 + q["guide"] + p3 + json.dumps(q["exemplars"], indent=1, ensure_ascii=False) + p4)
    sha = hashlib.sha256(system.encode("utf-8")).hexdigest()
    out.append(json.dumps({"question": q["id"], "system": system, "sha256": sha},
                          ensure_ascii=False, separators=(",", ":")))
sys.stdout.buffer.write(("\n".join(out) + "\n").encode("utf-8"))
"""


def ready_values(folder: Path, out: Path) -> None:
    """The floor's input: template pieces and per-question values, computed once outside any timing."""
    sys.path.insert(0, str(REPO))
    from tabench_dsl.language.battery import load_battery
    from tabench_dsl.language.render import exemplars_json, facet_guide, policies_text, question_object

    battery = load_battery(folder)
    template = (Path(battery.scorer.path) / "system.j2").read_text(encoding="utf-8").removesuffix("\n")
    pieces, rest = [], template
    for hole in ("{{ policies }}", "{{ question_json }}", "{{ facet_guide }}", "{{ exemplars_json }}"):
        head, rest = rest.split(hole)
        pieces.append(head)
    pieces.append(rest)
    values = {
        "pieces": pieces,
        "policies": policies_text(battery.policies),
        "questions": [
            {
                "id": q.id,
                "obj": question_object(q),
                "guide": facet_guide(q),
                "exemplars": json.loads(exemplars_json(q)),
            }
            for q in battery.questions
        ],
    }
    out.write_text(json.dumps(values, ensure_ascii=False), encoding="utf-8")


def _tabench() -> list[str]:
    # `python -m` from the repository folder runs this checkout's tabench, as the console script
    # does for an installed one; the interpreter and imports are the same either way.
    return [sys.executable, "-m", "tabench_dsl"]


class Timing:
    """Wall-clock and CPU seconds (user + system) of each run of one command."""

    def __init__(self) -> None:
        self.wall: list[float] = []
        self.cpu: list[float] = []

    @property
    def best(self) -> float:
        return min(self.wall)


def _cpu_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _time(argv: list[str], out: Path, runs: int) -> Timing:
    timing = Timing()
    for _ in range(runs):
        with out.open("wb") as f:
            cpu = _cpu_children()
            start = time.perf_counter()
            subprocess.run(argv, stdout=f, check=True, cwd=REPO)
            timing.wall.append(time.perf_counter() - start)
            timing.cpu.append(_cpu_children() - cpu)
    return timing


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_bytes().decode("utf-8").splitlines()]


def profile(folder: Path, tmp: Path) -> None:
    """One cProfile run of the compile process; print where its time goes."""
    prof = tmp / "compile.prof"
    argv = [
        sys.executable,
        "-m",
        "cProfile",
        "-o",
        str(prof),
        "-m",
        "tabench_dsl",
        "compile",
        str(folder),
        "--json",
    ]
    with (tmp / "profiled.jsonl").open("wb") as f:
        subprocess.run(argv, stdout=f, check=True, cwd=REPO)
    stats = pstats.Stats(str(prof))
    total = stats.total_tt  # type: ignore[attr-defined]
    cum: dict[str, float] = {}
    for (filename, _line, name), (_cc, _nc, _tt, ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        key = f"{Path(filename).name}:{name}"
        cum[key] = max(cum.get(key, 0.0), ct)

    def get(key: str) -> float:
        return cum.get(key, 0.0)

    run = get("compile_cmd.py:run")
    load, lark = get("battery.py:load_battery"), get("lark.py:parse")
    cut, check = get("visitors.py:transform"), get("rubric.py:build_questions")
    render, write = get("render.py:compile_battery"), get("compile_cmd.py:_write")
    parts = {
        "interpreter and CLI setup": total - run,
        "Lark parsing (lexer, LALR, tree)": lark,
        "cutting field lines into fields (parse.py)": cut,
        "validating questions (rubric.py)": check,
        "rest of load_battery (YAML, files)": load - lark - cut - check,
        "compile_battery (render, sha256)": render,
        "writing the JSON lines": write,
        "other (importing Lark, Jinja2, YAML; JSON encoding)": run - load - render - write,
    }
    print(f"profile of one run (cProfile slows Python code about 2x; in-process total {total:.2f} s):")
    for label, seconds in parts.items():
        print(f"  {label:56s} {seconds:6.3f} s  {100 * seconds / total:5.1f}%")
    bound = max(parts, key=lambda k: parts[k])
    print(f"bound by: {bound} ({100 * parts[bound] / total:.0f}% of the run)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--questions", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-profile", action="store_true")
    args = parser.parse_args(argv)

    tmp = Path(tempfile.mkdtemp(prefix="tabench-bench-"))
    try:
        folder = build_battery(tmp, args.questions)
        values = tmp / "values.json"
        ready_values(folder, values)
        env_note = f"{os.cpu_count()} cores, Python {sys.version.split()[0]}"

        compile_out, floor_out = tmp / "compile.jsonl", tmp / "floor.jsonl"
        compile_t = _time([*_tabench(), "compile", str(folder), "--json"], compile_out, args.runs)
        floor_t = _time([sys.executable, "-c", FLOOR, str(values)], floor_out, args.runs)
        bare_t = _time([sys.executable, "-c", "pass"], tmp / "bare.txt", args.runs)
        help_t = _time([*_tabench(), "--help"], tmp / "help.txt", args.runs)

        got, want = _lines(compile_out), _lines(floor_out)
        n = len(got)
        rate, floor_rate = n / compile_t.best, n / floor_t.best
        files = len(list((folder / "questions").glob("*.rubric")))
        load = os.getloadavg()[0]
        print(f"battery: {n} questions in {files} rubric files; {env_note}; load average {load:.1f}")
        print(
            f"compile: {n} prompts in {compile_t.best:.2f} s = {rate:.0f} prompts/s "
            f"(first run {compile_t.wall[0]:.2f} s, median {statistics.median(compile_t.wall):.2f} s, "
            f"cpu {min(compile_t.cpu):.2f} s); "
            f"floor {floor_rate:.0f}/s; ratio {floor_rate / rate:.1f}"
        )
        print(
            f"process start: bare python {bare_t.best:.3f} s, `tabench --help` {help_t.best:.3f} s; "
            f"floor {floor_t.best:.3f} s (cpu {min(floor_t.cpu):.3f} s)"
        )
        print(f"output equal to the floor's prompts: {'yes' if got == want else 'NO'}")
        print(f"target {TARGET:.0f} prompts/s: {'met' if rate >= TARGET else 'MISSED'}")
        if not args.no_profile:
            profile(folder, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
