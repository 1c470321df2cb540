"""Runtime bench: what `tabench grade` costs on top of the HTTP calls it has to make.

    python bench/runtime_bench.py [--quick] [--calls N[,N...]] [--rss-calls N] [--profile]
                                  [--workers N] [--repeat K] [--with-no-cache]

1. Starts `bench/mock_judge.py` (a separate process, 20 ms per reply, precomputed verdict bytes).
2. Writes a battery (T1 off, so every answer is one judge call) and an answers file per size
   (`--calls`, default 5,000 and 20,000).
3. Runs, each as a child process against its own fresh mock judge, and reads each child's CPU time
   (user + sys) and peak RSS from `os.wait4`:
   - `bare`: a bare aiohttp client: the same number of calls, POSTing a pre-encoded request body
     and JSON-decoding the reply and the verdict in it, nothing else;
   - `cold`: `tabench grade --concurrency 64` as a user runs it: the reply cache on (an empty cache
     file, so every answer is a judge call and a cache write) and the results file written;
   - `warm`: the same grading again into a new results file with the cache `cold` filled (the
     judge on the same port, so the cache keys match): every answer a cache hit, no call;
   - `off` (with `--with-no-cache`): `--no-cache`, results written;
   - `own`: the `cold` grading with the HTTP exchange canned (`_http.post_json` replaced by a
     20 ms sleep and the mock judge's reply bytes; the request body still encoded): what tabench
     does per answer besides aiohttp's part of a call. `cold` is about `bare` + `own`, so
     (`bare` + `own`) / `bare` is the floor of the ratio that the HTTP client leaves (no judge
     process runs beside it, so it meets a little less competition than the others). The start-up
     `bare` also pays (the interpreter, aiohttp, uvloop: a bare client making no call) is taken
     out of it.
4. Prints CPU microseconds per answer for each, the ratio of `cold` to `bare` (target <= 1.2) and
   the efficiency = ideal wall time (calls x 20 ms / 64) / actual wall time of `cold`, process start
   included (target >= 0.85).
5. Runs `tabench grade --workers N` (default 2, cache on) the same way and prints its figures beside
   the single process's: CPU per call (the parent and its workers, which it reaps, together) and
   efficiency.
6. Runs `tabench grade` over a bigger answers file and prints its peak RSS (target < 300 MB).

On the 2-core machine the mock judge and the measured process share the CPU (and other work on the
machine competes too): each measurement runs `--repeat` times (default 2), bare and tabench runs
interleaved, every run is printed with the load average before it, and the best is taken.

Bytecode: the children run with their bytecode cached in the bench's temporary folder
(PYTHONPYCACHEPREFIX, filled by an unmeasured warm-up run of each), as an installed package has
it. Without that, an environment with PYTHONDONTWRITEBYTECODE set recompiles every tabench module
at each start (~0.1 s of CPU).
`--profile` also runs the `cold` grading under cProfile and prints its top functions.
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


OWN_GRADE = textwrap.dedent(
    """
    import asyncio, sys
    sys.path.insert(0, sys.argv[1])
    import mock_judge
    from tabench_dsl.grading.judges import _http

    LATENCY = float(sys.argv[2]) / 1000.0
    HEADERS = {"Content-Type": "application/json", "Content-Length": str(len(mock_judge.REPLY))}

    async def canned(session, url, body, headers, timeout):
        _http.msgspec.json.encode(body)  # encoded as a real call encodes it
        await asyncio.sleep(LATENCY)
        return 200, HEADERS, mock_judge.REPLY, LATENCY * 1000.0

    _http.post_json = canned
    from tabench_dsl.cli import entry
    sys.argv = ["tabench", *sys.argv[3:]]
    entry()
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
        warm_cache = work / "cache-warmup.sqlite"
        Child(
            grade_argv(battery, answers, work / "results-warmup.jsonl", judge.url, cache=warm_cache), cwd=work
        )


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

    def __init__(self, port: int = 0) -> None:
        self.proc = subprocess.Popen(
            [PYTHON, str(HERE / "mock_judge.py"), "--latency-ms", str(LATENCY_MS), "--port", str(port)],
            stdout=subprocess.PIPE,
            text=True,
        )
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        if not line.startswith("port "):
            self.proc.kill()
            raise SystemExit("the mock judge did not start")
        self.port = int(line.split()[1])
        self.url = f"http://127.0.0.1:{self.port}/v1"
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
    battery: Path,
    answers: Path,
    out: Path,
    url: str,
    *,
    cache: Path | None,
    profile: Path | None = None,
    workers: int = 1,
) -> list[str]:
    """`tabench grade` as the bench runs it; `cache` None is `--no-cache`."""
    head = [PYTHON, "-m", "cProfile", "-o", str(profile)] if profile else [PYTHON]
    caching = ["--no-cache"] if cache is None else ["--cache", str(cache)]
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
        *caching,
        "--concurrency",
        str(CONCURRENCY),
        "--workers",
        str(workers),
        "--json",
    ]


def count_lines(path: Path) -> int:
    with open(path, "rb") as f:
        return sum(1 for _ in f)


def fresh(*paths: Path) -> None:
    """Remove `paths` and a cache's write-ahead log and shared memory beside them."""
    for path in paths:
        for one in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
            one.unlink(missing_ok=True)


class Run:
    """One measured child: its mode, CPU and wall seconds, and the load average before it."""

    def __init__(self, mode: str, child: Child, calls: int, judge_cpu: float) -> None:
        self.mode = mode
        self.cpu = child.cpu
        self.wall = child.wall
        self.load = child.load
        self.us = child.cpu / calls * 1e6
        self.judge_us = judge_cpu / calls * 1e6

    def line(self, ideal: float) -> str:
        return (
            f"{self.mode} {self.us:7.1f} us/answer wall {self.wall:5.2f} s eff {ideal / self.wall:4.2f} "
            f"(judge {self.judge_us:5.1f} us; {self.load})"
        )


def measure_round(
    work: Path, battery: Path, answers: Path, body: Path, calls: int, modes: list[str]
) -> dict[str, Run]:
    """One run of each mode over `answers`, bare first; `warm` reuses `cold`'s cache and port."""
    runs: dict[str, Run] = {}
    with MockJudge() as judge:
        bare_argv = [PYTHON, "-c", BARE_CLIENT, f"{judge.url}/chat/completions", str(calls)]
        bare = Child([*bare_argv, str(CONCURRENCY), str(body)], cwd=work)
        runs["bare"] = Run("bare", bare, calls, judge.stop())
    out, cache = work / "results.jsonl", work / "cache.sqlite"
    fresh(out, cache)
    argv = grade_argv(battery, answers, out, "http://127.0.0.1:9/v1", cache=cache)
    own = Child([PYTHON, "-c", OWN_GRADE, str(HERE), str(LATENCY_MS), *argv[3:]], cwd=work)
    if count_lines(out) != calls:
        raise SystemExit(f"own: expected {calls} records, found {count_lines(out)}")
    # The interpreter's and aiohttp's start-up are in `bare` already: taken out of `own`.
    with MockJudge() as judge:
        started = Child(
            [PYTHON, "-c", BARE_CLIENT, f"{judge.url}/chat/completions", "0", "1", str(body)], cwd=work
        )
        judge.stop()
    own.cpu -= started.cpu
    runs["own"] = Run("own", own, calls, 0.0)
    port = 0
    for mode in modes:
        fresh(out)
        if mode != "warm":
            fresh(cache)
        with MockJudge(port if mode == "warm" else 0) as judge:
            port = judge.port
            argv = grade_argv(battery, answers, out, judge.url, cache=None if mode == "off" else cache)
            runs[mode] = Run(mode, Child(argv, cwd=work), calls, judge.stop())
        if count_lines(out) != calls:
            raise SystemExit(f"{mode}: expected {calls} records, found {count_lines(out)}")
        hits = sum(b'"cache_hit":true' in line for line in out.open("rb"))
        if hits != (calls if mode == "warm" else 0):
            raise SystemExit(f"{mode}: {hits} cache hits in {calls} records")
    return runs


def bench_size(work: Path, battery: Path, body: Path, calls: int, args: argparse.Namespace) -> None:
    """The CPU and wall figures of `calls` answers: every mode `--repeat` times, the best kept."""
    answers = work / f"answers-{calls}.jsonl"
    write_answers(answers, calls)
    modes = ["cold", "warm", *(["off"] if args.with_no_cache else [])]
    ideal = calls * LATENCY_MS / 1000.0 / CONCURRENCY
    print(f"{calls} calls, {LATENCY_MS:g} ms judge latency, concurrency {CONCURRENCY}:")
    rounds = []
    for run in range(max(1, args.repeat)):
        runs = measure_round(work, battery, answers, body, calls, modes)
        rounds.append(runs)
        print(f"  run {run + 1}:")
        for one in runs.values():
            print(f"    {one.line(ideal)}")
    best = {mode: min((r[mode] for r in rounds), key=lambda one: one.cpu) for mode in ["bare", "own", *modes]}
    print(f"  best of {len(rounds)} (CPU and wall each at their best):")
    bare = best["bare"]
    for mode, one in best.items():
        wall = min(r[mode].wall for r in rounds)
        ratio = "" if mode == "bare" else f"  {one.us / bare.us:4.2f}x bare"
        print(f"    {mode:4s} {one.us:7.1f} us CPU/answer, wall {wall:6.2f} s, eff {ideal / wall:.2f}{ratio}")
    ratio = best["cold"].us / bare.us
    own = best["own"].us
    print(
        f"  tabench's own part of an answer (own): {own:.1f} us; floor of the ratio it leaves, "
        f"(bare + own) / bare: {(bare.us + own) / bare.us:.2f}"
    )
    efficiency = ideal / min(r["cold"].wall for r in rounds)
    print(
        f"  CPU ratio grade (cache on, results written) / bare: {ratio:.2f}   "
        f"(target <= 1.2: {'met' if ratio <= 1.2 else 'MISSED'})"
    )
    print(
        f"  efficiency of grade: {efficiency:.2f}   (target >= 0.85: "
        f"{'met' if efficiency >= 0.85 else 'MISSED'})"
    )
    if args.workers > 1:
        bench_workers(work, battery, answers, calls, args.workers, best["cold"], ideal)


def bench_workers(
    work: Path, battery: Path, answers: Path, calls: int, workers: int, single: Run, ideal: float
) -> None:
    """`--workers N` beside the single process, cache on."""
    out, cache = work / "results.jsonl", work / "cache.sqlite"
    fresh(out, cache)
    with MockJudge() as judge:
        argv = grade_argv(battery, answers, out, judge.url, cache=cache, workers=workers)
        pool = Run(f"--workers {workers}", Child(argv, cwd=work), calls, judge.stop())
    if count_lines(out) != calls:
        raise SystemExit(f"--workers {workers}: expected {calls} records, found {count_lines(out)}")
    print("  side by side:            us CPU/answer   wall      efficiency")
    print(f"    tabench grade           {single.us:10.1f}   {single.wall:6.2f} s   {ideal / single.wall:.2f}")
    print(
        f"    tabench grade --workers {workers:<2d}{pool.us:8.1f}   {pool.wall:6.2f} s   "
        f"{ideal / pool.wall:.2f}   (target >= 0.85: {'met' if ideal / pool.wall >= 0.85 else 'MISSED'})"
    )


def profile(work: Path, battery: Path, answers: Path) -> None:
    """The `cold` grading under cProfile: its top functions by own time."""
    prof, cache = work / "grade.prof", work / "cache-prof.sqlite"
    fresh(cache)
    with MockJudge() as judge:
        argv = grade_argv(battery, answers, work / "results-prof.jsonl", judge.url, cache=cache, profile=prof)
        Child(argv, cwd=work)
        judge.stop()
    import pstats

    print("cProfile of tabench grade, cache on (top 30 by own time):")
    pstats.Stats(str(prof)).sort_stats("tottime").print_stats(30)


def main() -> None:
    parser = argparse.ArgumentParser(description="tabench grade runtime bench")
    parser.add_argument("--quick", action="store_true", help="2,000 calls and 10,000 answers for RSS")
    parser.add_argument(
        "--calls", default=None, help="answers for the CPU bench, comma-separated (default 5000,20000)"
    )
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
    parser.add_argument("--with-no-cache", action="store_true", help="also measure --no-cache")
    parser.add_argument("--no-rss", action="store_true", help="skip the memory bench")
    args = parser.parse_args()
    sizes = [int(n) for n in (args.calls or ("2000" if args.quick else "5000,20000")).split(",")]
    rss_calls = args.rss_calls or (10_000 if args.quick else 100_000)

    with tempfile.TemporaryDirectory(prefix="tabench-bench-") as tmp:
        work = Path(tmp)
        battery = write_battery(work / "battery")
        body = work / "body.json"
        body.write_bytes(request_body(battery))
        print(
            f"runtime bench: {os.cpu_count()} CPU(s), shared: the mock judge (a process of its own) "
            f"competes with the measured process; event loop: {event_loop()}"
        )
        child_env(work, battery, body)
        for calls in sizes:
            bench_size(work, battery, body, calls, args)
        if args.profile:
            answers = work / f"answers-{sizes[0]}.jsonl"
            profile(work, battery, answers)
        if not args.no_rss:
            big = work / "answers-big.jsonl"
            write_answers(big, rss_calls)
            out, cache = work / "results-big.jsonl", work / "cache-big.sqlite"
            with MockJudge() as judge:
                rss = Child(grade_argv(battery, big, out, judge.url, cache=cache), cwd=work)
                judge.stop()
            print(
                f"memory bench ({rss.load}): {rss_calls} answers, cache on: peak RSS of tabench grade "
                f"{rss.rss_mib:.1f} MiB "
                f"(target < 300 MB: {'met' if rss.rss_mib * 1.048576 < 300 else 'MISSED'}), "
                f"wall {rss.wall:.1f} s, {rss.cpu / rss_calls * 1e6:.1f} us CPU/call"
            )


if __name__ == "__main__":
    main()
