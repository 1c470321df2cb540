"""Runtime bench: what `tabench grade` costs on top of the HTTP calls it has to make.

    python bench/runtime_bench.py [--quick] [--calls N] [--rss-calls N] [--profile] [--workers N]

1. Starts `bench/mock_judge.py` (a separate process, 20 ms per reply, precomputed verdict bytes).
2. Writes a battery (T1 off, so every answer is one judge call) and an answers file.
3. Runs a bare aiohttp client (POST a pre-encoded request body + JSON-decode the reply, nothing
   else) and `tabench grade --no-cache --concurrency 64` against the same server, each as a child
   process, and reads each child's CPU time (user + sys) and peak RSS from `os.wait4`.
4. Prints CPU microseconds per judge call for both, their ratio (target <= 2.0), and the efficiency
   = ideal wall time (calls x 20 ms / 64) / actual wall time of `tabench grade`, process start
   included (target >= 0.85).
5. Runs `tabench grade --workers N` (default 2) the same way and prints its figures beside the
   single process's: CPU per call (the parent and its workers, which it reaps, together) and
   efficiency.
6. Runs `tabench grade` over a bigger answers file and prints its peak RSS (target < 300 MB).

On the 2-core machine the mock judge and the measured process share the CPU (and other work on the
machine competes too): each measurement runs `--repeat` times (default 2), every run is printed
with the load average before it, and the best is taken.

Bytecode: the children run with their bytecode cached in the bench's temporary folder
(PYTHONPYCACHEPREFIX, filled by an unmeasured warm-up run of each), as an installed package has
it. Without that, an environment with PYTHONDONTWRITEBYTECODE set recompiles every tabench module
at each start (~0.1 s of CPU).
`--profile` also runs the grading under cProfile and prints its top functions.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PYTHON = sys.executable
LATENCY_MS = 20.0
CONCURRENCY = 64
QUESTIONS = 50

BARE_CLIENT = textwrap.dedent(
    """
    import asyncio, json, os, sys
    import aiohttp

    async def main(url, calls, concurrency, body_path):
        body = open(body_path, "rb").read()
        headers = {"content-type": "application/json", "accept": "application/json"}
        remaining = iter(range(calls))
        connector = aiohttp.TCPConnector(limit=concurrency)
        async with aiohttp.ClientSession(connector=connector) as session:
            async def worker():
                for _ in remaining:
                    async with session.post(url, data=body, headers=headers) as response:
                        reply = json.loads(await response.read())
                        json.loads(reply["choices"][0]["message"]["content"])
            await asyncio.gather(*(worker() for _ in range(concurrency)))

    # The same event loop as `tabench grade` picks (uvloop when installed), for a fair comparison.
    loop_factory = None
    if os.environ.get("TABENCH_EVENT_LOOP", "auto") != "asyncio":
        try:
            import uvloop
            loop_factory = uvloop.new_event_loop
        except ImportError:
            pass
    with asyncio.Runner(loop_factory=loop_factory) as runner:
        runner.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]))
    """
)


def event_loop() -> str:
    """The event loop `tabench grade` and the bare client run on here."""
    import importlib.util

    if os.environ.get("TABENCH_EVENT_LOOP", "auto") != "asyncio" and importlib.util.find_spec("uvloop"):
        return "uvloop"
    return "asyncio"


def write_battery(folder: Path) -> Path:
    """A battery of QUESTIONS questions, T1 off, with prompts of a realistic size."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "battery.yaml").write_text(
        "name: runtime-bench\nscorer: tabench-1.1\npolicies: [bench.policy]\n"
        "rubrics: [questions.rubric]\nt1: false\njudge: {model: mock-judge}\n",
        encoding="utf-8",
    )
    rules = [
        f"S{i}: Rule {i} of the bench policy: cite the mechanism, not only its name." for i in range(1, 9)
    ]
    (folder / "bench.policy").write_text("\n".join(rules) + "\n", encoding="utf-8")
    blocks = []
    for i in range(QUESTIONS):
        blocks.append(
            f"question q{i:03d} {{\n"
            f'  prompt "Which stages make up memory pipeline number {i}?"\n'
            f'  gold "Four stages: Ingest, Index, Recall, Compact (pipeline {i})"\n'
            f'  accept "Ingest, Index, Recall and Compact"\n'
            f'  trap "There is no Summarize stage."\n'
            f'  scoring "All four stages are needed for a pass; three of four is partial."\n'
            f'  facet missing_minor "omits the order of the stages"\n'
            f'  exemplar correct "Ingest, Index, Recall, Compact." why "all four named"\n'
            f'  exemplar partial "Ingest, Index, Recall." why "three of four" expect fail\n'
            f"}}\n"
        )
    (folder / "questions.rubric").write_text("\n".join(blocks), encoding="utf-8")
    return folder


def write_answers(path: Path, count: int) -> None:
    """`count` answers: systems s0000.. each answering every question once."""
    with open(path, "w", encoding="utf-8") as f:
        for n in range(count):
            system, question = divmod(n, QUESTIONS)
            answer = f"The pipeline has Ingest, Index and Recall stages (system {system}, answer {n})."
            f.write(
                json.dumps({"system": f"s{system:04d}", "question": f"q{question:03d}", "answer": answer})
            )
            f.write("\n")


def request_body(battery: Path) -> bytes:
    """The JSON body tabench sends for the first answer, for the bare client to send as is."""
    sys.path.insert(0, str(HERE.parent))
    from tabench_dsl.language.battery import load_battery
    from tabench_dsl.language.render import compile_battery

    compiled = compile_battery(load_battery(battery))
    question = compiled.questions["q000"]
    return json.dumps(
        {
            "model": "mock-judge",
            "messages": [
                {"role": "system", "content": question.system},
                {
                    "role": "user",
                    "content": compiled.user.fill("The pipeline has Ingest, Index and Recall."),
                },
            ],
            "temperature": 0.0,
            "max_tokens": 300,
        }
    ).encode()


#: The environment of the measured children (set up by `child_env`).
CHILD_ENV: dict[str, str] = dict(os.environ)


def child_env(work: Path, battery: Path, body: Path) -> None:
    """Give the children a bytecode cache in `work`, as an installed package (and its libraries)
    has one: filled by a small unmeasured run of each child (with a cache prefix set, Python reads
    no `__pycache__` folder, so the libraries are compiled into it too)."""
    CHILD_ENV.pop("PYTHONDONTWRITEBYTECODE", None)
    CHILD_ENV["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
    subprocess.run(
        [PYTHON, "-m", "compileall", "-q", str(HERE.parent / "tabench_dsl")],
        env=CHILD_ENV,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    answers = work / "answers-warmup.jsonl"
    write_answers(answers, CONCURRENCY)
    with MockJudge() as judge:
        bare_argv = [PYTHON, "-c", BARE_CLIENT, f"{judge.url}/chat/completions", str(CONCURRENCY)]
        Child([*bare_argv, str(CONCURRENCY), str(body)], cwd=work)
        Child(grade_argv(battery, answers, work / "results-warmup.jsonl", judge.url), cwd=work)


def load() -> str:
    """The 1-minute load average, for the printout."""
    return f"load {os.getloadavg()[0]:.2f}"


class Child:
    """A finished child process: wall seconds (start included), CPU seconds, peak RSS (MiB)."""

    def __init__(self, argv: list[str], *, cwd: Path, stdout=subprocess.DEVNULL) -> None:
        self.load = load()
        started = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=cwd, stdout=stdout, stderr=subprocess.PIPE, env=CHILD_ENV)
        _, stderr = b"", b""
        stderr = proc.stderr.read() if proc.stderr else b""
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        self.wall = time.perf_counter() - started
        self.cpu = usage.ru_utime + usage.ru_stime
        self.rss_mib = usage.ru_maxrss / 1024.0
        self.status = proc.returncode
        self.stderr = stderr.decode(errors="replace")
        if self.status not in (0,):
            raise SystemExit(f"{argv[:4]} exited {self.status}:\n{self.stderr[-3000:]}")


class MockJudge:
    """`bench/mock_judge.py` in a process of its own; `cpu` is its CPU seconds once stopped."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [PYTHON, str(HERE / "mock_judge.py"), "--latency-ms", str(LATENCY_MS)],
            stdout=subprocess.PIPE,
            text=True,
        )
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        if not line.startswith("port "):
            self.proc.kill()
            raise SystemExit("the mock judge did not start")
        self.url = f"http://127.0.0.1:{int(line.split()[1])}/v1"
        self.cpu = 0.0

    def stop(self) -> float:
        if self.proc.poll() is None:
            self.proc.terminate()
            out, _ = self.proc.communicate(timeout=30)
            for line in out.splitlines():
                if line.startswith("cpu "):
                    self.cpu = float(line.split()[1])
        return self.cpu

    def __enter__(self) -> MockJudge:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def grade_argv(
    battery: Path, answers: Path, out: Path, url: str, *, profile: Path | None = None, workers: int = 1
) -> list[str]:
    head = [PYTHON, "-m", "cProfile", "-o", str(profile)] if profile else [PYTHON]
    return [
        *head,
        "-m",
        "tabench_dsl",
        "grade",
        str(battery),
        "--answers",
        str(answers),
        "--out",
        str(out),
        "--judge",
        url,
        "--model",
        "mock-judge",
        "--no-cache",
        "--concurrency",
        str(CONCURRENCY),
        "--workers",
        str(workers),
        "--json",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description="tabench grade runtime bench")
    parser.add_argument("--quick", action="store_true", help="2,000 calls and 10,000 answers for RSS")
    parser.add_argument("--calls", type=int, default=None, help="answers for the CPU bench (default 20,000)")
    parser.add_argument(
        "--rss-calls", type=int, default=None, help="answers for the RSS bench (default 100,000)"
    )
    parser.add_argument("--profile", action="store_true", help="also profile one grading with cProfile")
    parser.add_argument(
        "--workers", type=int, default=2, help="processes for the --workers figure (default 2; 1: none)"
    )
    parser.add_argument(
        "--repeat", type=int, default=2, help="runs of each measurement, the best taken (default 2)"
    )
    args = parser.parse_args()
    calls = args.calls or (2_000 if args.quick else 20_000)
    rss_calls = args.rss_calls or (10_000 if args.quick else 100_000)

    with tempfile.TemporaryDirectory(prefix="tabench-bench-") as tmp:
        work = Path(tmp)
        battery = write_battery(work / "battery")
        answers = work / "answers.jsonl"
        write_answers(answers, calls)
        body = work / "body.json"
        body.write_bytes(request_body(battery))
        print(f"runtime bench: {calls} calls, {LATENCY_MS:g} ms judge latency, concurrency {CONCURRENCY}")
        print(
            f"  {os.cpu_count()} CPU(s), shared: the mock judge (a process of its own) competes with the"
            f" measured process; event loop: {event_loop()}"
        )

        child_env(work, battery, body)
        ideal = calls * LATENCY_MS / 1000.0 / CONCURRENCY
        bares: list[tuple[Child, float]] = []
        grades: list[tuple[Child, float]] = []
        pooled: list[Child] = []
        for run in range(max(1, args.repeat)):
            with MockJudge() as judge:
                bare_argv = [PYTHON, "-c", BARE_CLIENT, f"{judge.url}/chat/completions", str(calls)]
                bare = Child([*bare_argv, str(CONCURRENCY), str(body)], cwd=work)
                bares.append((bare, judge.stop() / calls * 1e6))
            out = work / "results.jsonl"
            out.unlink(missing_ok=True)
            with MockJudge() as judge:
                grade = Child(grade_argv(battery, answers, out, judge.url), cwd=work)
                grades.append((grade, judge.stop() / calls * 1e6))
            with open(out, "rb") as f:
                lines = sum(1 for _ in f)
            if lines != calls:
                raise SystemExit(f"expected {calls} records, found {lines}")
            print(
                f"  run {run + 1}: bare {bare.cpu / calls * 1e6:6.1f} us/call wall {bare.wall:5.2f} s "
                f"({bare.load}) | grade {grade.cpu / calls * 1e6:6.1f} us/call wall {grade.wall:5.2f} s "
                f"eff {ideal / grade.wall:.2f} ({grade.load})"
            )
            if args.workers > 1:
                out.unlink()
                with MockJudge() as judge:
                    pool = Child(grade_argv(battery, answers, out, judge.url, workers=args.workers), cwd=work)
                    judge.stop()
                pooled.append(pool)
                with open(out, "rb") as f:
                    lines = sum(1 for _ in f)
                if lines != calls:
                    raise SystemExit(f"--workers {args.workers}: expected {calls} records, found {lines}")
                print(
                    f"         --workers {args.workers}: {pool.cpu / calls * 1e6:6.1f} us/call wall "
                    f"{pool.wall:5.2f} s eff {ideal / pool.wall:.2f} ({pool.load})"
                )
        bare, bare_judge = min(bares, key=lambda run: run[0].cpu)
        grade, grade_judge = min(grades, key=lambda run: run[0].cpu)
        bare_wall = min(run[0].wall for run in bares)
        grade_wall = min(run[0].wall for run in grades)
        print(f"  best of {len(grades)} (CPU and wall each taken at their best):")
        bare_us = bare.cpu / calls * 1e6
        grade_us = grade.cpu / calls * 1e6
        print(
            f"  bare aiohttp client : {bare_us:7.1f} us CPU/call, wall {bare_wall:6.2f} s, "
            f"efficiency {ideal / bare_wall:.2f} (mock judge: {bare_judge:.1f} us CPU/call)"
        )
        print(
            f"  tabench grade       : {grade_us:7.1f} us CPU/call, wall {grade_wall:6.2f} s "
            f"(process start included; mock judge: {grade_judge:.1f} us CPU/call)"
        )
        ratio = grade_us / bare_us
        efficiency = ideal / grade_wall
        print(f"  CPU ratio grade/bare: {ratio:.2f}   (target <= 2.0: {'met' if ratio <= 2.0 else 'MISSED'})")
        print(
            f"  efficiency          : {efficiency:.2f}   ideal {ideal:.2f} s / actual {grade_wall:.2f} s "
            f"(target >= 0.85: {'met' if efficiency >= 0.85 else 'MISSED'})"
        )
        if pooled:
            pool_us = min(child.cpu for child in pooled) / calls * 1e6
            pool_wall = min(child.wall for child in pooled)
            print(f"  side by side (best of {len(pooled)}):      us CPU/call   wall      efficiency")
            print(f"    tabench grade           {grade_us:10.1f}   {grade_wall:6.2f} s   {efficiency:.2f}")
            print(
                f"    tabench grade --workers {args.workers:<2d}{pool_us:8.1f}   {pool_wall:6.2f} s   "
                f"{ideal / pool_wall:.2f}   (target >= 0.85: "
                f"{'met' if ideal / pool_wall >= 0.85 else 'MISSED'})"
            )
        busy = grade.cpu / grade.wall
        print(
            f"  bound: tabench grade kept {busy:.0%} of one core busy over its wall time; at "
            f"{grade_us:.0f} us a call one core grades at most {1e6 / grade_us:.0f} calls/s, the ideal "
            f"needs {CONCURRENCY / (LATENCY_MS / 1000.0):.0f}/s"
        )

        if args.profile:
            prof = work / "grade.prof"
            with MockJudge() as judge:
                Child(
                    grade_argv(battery, answers, work / "results-prof.jsonl", judge.url, profile=prof),
                    cwd=work,
                )
                judge.stop()
            import pstats

            print("  cProfile of tabench grade (top 25 by own time):")
            pstats.Stats(str(prof)).sort_stats("tottime").print_stats(25)

        big = work / "answers-big.jsonl"
        write_answers(big, rss_calls)
        with MockJudge() as judge:
            rss = Child(grade_argv(battery, big, work / "results-big.jsonl", judge.url), cwd=work)
            judge.stop()
        print(
            f"memory bench ({rss.load}): {rss_calls} answers: peak RSS of tabench grade "
            f"{rss.rss_mib:.1f} MiB "
            f"(target < 300 MB: {'met' if rss.rss_mib * 1.048576 < 300 else 'MISSED'}), "
            f"wall {rss.wall:.1f} s, {rss.cpu / rss_calls * 1e6:.1f} us CPU/call"
        )


if __name__ == "__main__":
    main()
