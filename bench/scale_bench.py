"""How long each reading command takes, and how much memory it needs, on a large results file.

Writes a results file of N records (the test generator's records, `make_results.many_results`, over
50 systems), a second grading of the same answers (every tenth verdict flipped) for `diff`, a battery
of the file's questions and an answers file holding every answer whose record is final (so
`grade --resume` has nothing left to grade), then runs each command as its own process and
prints its wall time, peak resident memory (the child's own `ru_maxrss`, from `os.wait4`) and, for
a first run, its CPU time (user and system, with the processes it forked) against the msgspec pass's.
Two floors measured in the same run are printed first: the time and memory of a process that only
starts tabench's command line, and of one msgspec pass over the results file (a process that
decodes every line to Python values and does nothing else: what any first read costs at least).
Each first run (no index yet) is also given as a multiple of the msgspec pass.

    python bench/scale_bench.py [--records 1000000] [--systems 50] [--only totals,diff] [--keep DIR]

With `--keep DIR` the files are written into DIR once and read again by the next run given the same
DIR, records and systems (a 10,000,000-record file takes minutes to write). Every command's first
run, in every run of the bench, starts with no index, decisions, caches or outputs beside the files
(not even what an earlier command kept), so every first run is a first read.

Prints one line per run, e.g. `totals    1.234 s   180 MB  (exit 0)`; a command marked `(index build)`
is its first run, which builds the index beside the results file; the run after it is the
command's own figure. `view` is timed until its page's first requests are answered
(`VIEW_REQUESTS`), then stopped with an interrupt; `view decide` from a decision posted on an
adjudicated answer until the totals and the first page of answers are read again; `view paging`
pages through every adjudicated answer, 500 a page as the list's filter asks, and gives the mean
seconds a page, also as a multiple of the msgspec pass over a page's lines (the floor's time
scaled to 500 lines: what reading a page's lines costs at least). `--again N` times each
command's later run N times (each printed; the worst is the figure). Exits 0, or 1 when a command
exited with a status other than its expected one.

Every child, the floors included, runs tabench as `pip install .` leaves it: byte-compiled. This
environment may set PYTHONDONTWRITEBYTECODE=1, and the bench runs the source tree, so without a
cache of its own each command would compile every tabench module it imports on every run (about
0.3-0.4 s of a later run's start-up here), which no installed tabench does. So the bench compiles
tabench once (`compileall`) into a cache of its own, `pycache/` in its folder
(`PYTHONPYCACHEPREFIX`: the repository is never written to), and runs every child with it, writing
into it what else they import (the standard library's and the dependencies' modules are looked
for there too, so `tabench --help`, which imports every command, fills it first). The import floor
is also printed as the environment gives it (`floor (import, no cache)`), once.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# The record generator lives with the tests; the bench uses the same one so the figures describe
# the runs the tests check.
sys.path.insert(0, str(REPO / "tests"))

#: Records built and written at a time: the generator holds a list, so large files go in chunks.
CHUNK = 100_000
#: Questions a bench rubric file holds.
RUBRIC_QUESTIONS = 50_000


def write_files(folder: Path, records: int, systems: int) -> dict[str, Path]:
    """The results file, its flipped twin, a battery of its questions and an answers file."""
    import msgspec
    from support.make_results import many_results

    from tabench_dsl.core.records import record_encoder

    paths = {name: folder / f"{name}.jsonl" for name in ("a", "b", "answers")}
    per_system = max(records // systems, 1)
    flip = {"pass": "fail", "fail": "pass"}
    with open(paths["a"], "wb") as a, open(paths["b"], "wb") as b, open(paths["answers"], "w") as ans:
        # Chunks of whole systems, so each question appears once per system.
        step = max(CHUNK // per_system, 1)
        for first in range(0, systems, step):
            count = min(step, systems - first)
            chunk = many_results(per_system * count, systems=count, seed=first)
            for number, record in enumerate(chunk):
                record = msgspec.structs.replace(record, system=f"sys-{int(record.system[4:]) + first:02d}")
                a.write(record_encoder.encode(record) + b"\n")
                if number % 10 == 0 and record.verdict in flip:
                    record = msgspec.structs.replace(record, verdict=flip[record.verdict])
                b.write(record_encoder.encode(record) + b"\n")
                if record.verdict != "error":  # an error is graded again: leave nothing to grade
                    line = {"system": record.system, "question": record.question, "answer": record.answer}
                    ans.write(json.dumps(line) + "\n")
    paths["battery"] = write_battery(folder / "battery", per_system)
    return paths


def write_battery(folder: Path, questions: int) -> Path:
    """A battery named as the generator's records are, with questions q00000 onwards, in rubric
    files of `RUBRIC_QUESTIONS` each (a spec file may hold 8 MiB: 10,000,000 records over 50 systems
    have 200,000 questions)."""
    folder.mkdir()
    parts = range(0, max(questions, 1), RUBRIC_QUESTIONS)
    rubrics = ", ".join(f"memos-{n}.rubric" for n in range(len(parts)))
    (folder / "battery.yaml").write_text(
        f"name: memos-agent\nscorer: tabench-1.1\npolicies: [memos.policy]\nrubrics: [{rubrics}]\n"
    )
    (folder / "memos.policy").write_text("S1: Judge only what the answer says.\n")
    for n, first in enumerate(parts):
        blocks = (
            f'question q{q:05d} {{\n  prompt "Question {q}?"\n  gold "Gold {q}"\n}}\n'
            for q in range(first, min(first + RUBRIC_QUESTIONS, questions))
        )
        (folder / f"memos-{n}.rubric").write_text("".join(blocks))
    return folder


def measure(argv: list[str], env: dict[str, str]) -> tuple[float, float, int, float]:
    """Run `argv`; its wall seconds, peak resident megabytes, exit status and CPU seconds (`cpu`)."""
    started = time.perf_counter()
    child = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert child.stderr is not None
    err = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - started
    if child.returncode not in (0, 1):
        sys.stderr.write(err.decode("utf-8", "replace")[-2000:])
    # ru_maxrss is in kilobytes on Linux.
    return wall, usage.ru_maxrss / 1024, child.returncode, cpu(usage)


def cpu(usage: resource.struct_rusage) -> float:
    """The user and system CPU seconds of a child and of the children it waited for (the
    processes a command forks to read a file's ranges): what a loaded machine does not change
    much, beside a wall time that it does."""
    return usage.ru_utime + usage.ru_stime


def measure_view(argv: list[str], env: dict[str, str], *, then: str = "") -> tuple[float, float, int, float]:
    """Start `tabench view`, read the URL it prints, ask what the page asks for first; the wall
    seconds until every answer is in, the peak resident megabytes and the exit status after an
    interrupt (Ctrl-C), which stops it. With `then="decide"` (`view decide`), the seconds are those
    of what the page does at a decision instead: post it on the first adjudicated answer, then ask
    for the totals and the list again; with `then="paging"` (`view paging`), the mean seconds of
    a page of the adjudicated answers (`time_paging`)."""
    started = time.perf_counter()
    child = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert child.stdout is not None and child.stderr is not None
    found = re.search(r"serving (http://\S+)", child.stdout.readline().decode("utf-8", "replace"))
    wall = float("nan")
    if found is not None:
        for path in VIEW_REQUESTS:
            with urllib.request.urlopen(found.group(1) + path, timeout=600) as response:
                response.read()
        wall = time.perf_counter() - started
        if then == "decide":
            wall = time_decision(found.group(1))
        elif then == "paging":
            wall = time_paging(found.group(1))
        child.send_signal(signal.SIGINT)
    err = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode not in (0, 130):  # 130: stopped by the interrupt, as asked
        sys.stderr.write(err.decode("utf-8", "replace")[-2000:])
    return wall, usage.ru_maxrss / 1024, child.returncode, cpu(usage)


def time_decision(url: str) -> float:
    """The wall seconds from posting a decision on the first adjudicated answer to the totals and
    the first page of answers read again, as the page asks for them after a decision."""
    with urllib.request.urlopen(url + "api/records?verdict=adjudicate&offset=0&limit=1", timeout=600) as got:
        first = json.loads(got.read())["items"][0]
    body = json.dumps({"system": first["system"], "question": first["question"], "verdict": "pass"})
    started = time.perf_counter()
    request = urllib.request.Request(
        url + "api/decision", body.encode(), headers={"Content-Type": "application/json"}
    )
    for asked in (request, url + "api/totals", url + "api/records?offset=0&limit=50"):
        with urllib.request.urlopen(asked, timeout=600) as response:
            response.read()
    return time.perf_counter() - started


#: Records a page of `view paging` holds (the list's largest page is 500).
PAGE = 500


def time_paging(url: str) -> float:
    """The mean wall seconds of a page of the adjudicated answers, `PAGE` a page, over every page
    of them in turn (what scrolling the filtered list asks for)."""
    pages, offset, total = 0, 0, 1
    started = time.perf_counter()
    while offset < total:
        asked = f"{url}api/records?verdict=adjudicate&offset={offset}&limit={PAGE}"
        with urllib.request.urlopen(asked, timeout=600) as response:
            total = json.loads(response.read())["total"]
        pages, offset = pages + 1, offset + PAGE
    return (time.perf_counter() - started) / pages


#: Names the records and systems a kept folder's files were written with, once they all were.
WRITTEN = "written.txt"
#: The files a kept folder reuses; everything else in it is what a run left (indexes, decisions,
#: caches, outputs) and is removed before the next run.
INPUTS = ("a.jsonl", "b.jsonl", "answers.jsonl", "battery", WRITTEN)


def reusable(folder: Path, records: int, systems: int) -> bool:
    """Whether `folder` holds the files of an earlier run with the same records and systems."""
    written = folder / WRITTEN
    return written.is_file() and written.read_text().split() == [str(records), str(systems)]


def clear(folder: Path, *, every_file: bool, keep: tuple[str, ...] = ()) -> None:
    """Remove what an earlier run left in `folder` but `keep` (with `every_file`, its inputs too)."""
    for entry in folder.iterdir():
        if entry.name not in keep and (every_file or entry.name not in INPUTS):
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()


BUILD = " (index build)"
MSGSPEC_PASS = "floor (msgspec pass)"
#: The msgspec pass, as a process of its own: every line of the file decoded, blocks of lines read
#: at a time (what `store.fast_lines` reads with), nothing kept.
MSGSPEC_PASS_CODE = """
import sys, msgspec
decode = msgspec.json.Decoder().decode
with open(sys.argv[1], "rb") as f:
    rest = b""
    while block := f.read(1 << 24):
        lines = (rest + block).split(b"\\n")
        rest = lines.pop()
        for line in lines:
            if line:
                decode(line)
    if rest.strip():
        decode(rest)
"""
#: The import floor as the environment gives it: no bytecode cache of the bench's (`bytecode_cache`).
IMPORT_NO_CACHE = "floor (import, no cache)"
#: The runs, in order. A label ending in BUILD is its command's first run, which finds no index
#: beside the results file (RESULTS.index.sqlite) and builds it, timed on its own; the run right
#: after it is the command's figure.
ORDER = (
    *(IMPORT_NO_CACHE, "floor (import)", MSGSPEC_PASS, f"totals --json{BUILD}", "totals", "totals --json"),
    *(f"report --html{BUILD}", "report --html", f"diff A B{BUILD}", "diff A B", "export csv"),
    *(f"grade --resume{BUILD}", "grade --resume"),
    *(f"view{BUILD}", "view", "view decide", "view paging"),
)
#: The commands that keep nothing in the index: each run is a first read (given as its ratio).
FIRST_EVERY_TIME = ("export csv",)
#: What the viewer's page asks for before it shows anything (`viewer.js`), then its first page of
#: answers: `view` is timed from its start until all of these are answered.
VIEW_REQUESTS = ("api/meta", "api/totals", "api/systems?offset=0&limit=50", "api/records?offset=0&limit=50")


def commands(paths: dict[str, Path], folder: Path) -> dict[str, list[str]]:
    """Each command the bench runs, by name, as `tabench` arguments."""
    a, b = str(paths["a"]), str(paths["b"])
    return {
        "floor (import)": ["--version"],
        IMPORT_NO_CACHE: ["--version"],
        "totals": ["totals", a],
        "totals --json": ["totals", a, "--json"],
        "report --html": ["report", a, "--html", str(folder / "report.html")],
        "diff A B": ["diff", a, b],
        "export csv": ["export", a, "--format", "csv", "--out", str(folder / "export.csv")],
        "view": ["view", a, "--no-browser", "--port", "0"],
        "view decide": ["view", a, "--no-browser", "--port", "0"],
        "view paging": ["view", a, "--no-browser", "--port", "0"],
        "grade --resume": [
            "grade",
            str(paths["battery"]),
            "--answers",
            str(paths["answers"]),
            "--out",
            a,
            "--resume",
            "--judge",
            "http://127.0.0.1:9/v1",
            "--model",
            "none",
            "--no-cache",
        ],
    }


#: The folder (in the bench's) of the bytecode cache every child runs with (`bytecode_cache`).
PYCACHE = "pycache"
#: What a command's first run finds beside the inputs: what installing tabench leaves (the
#: bytecode). Everything else a run left (every index, decision, cache, compiled battery, signing
#: key and output) is removed before each first run, so none reads what another command kept: a
#: first `report` after `merge` meets no totals that `totals` kept.
INSTALLED = (PYCACHE,)


def bytecode_cache(folder: Path, env: dict[str, str]) -> dict[str, str]:
    """`env` with a bytecode cache in `folder` (`PYTHONPYCACHEPREFIX`, written to as Python writes
    `__pycache__`), tabench compiled into it as `pip install .` compiles it, and what every command
    imports at its start (`tabench --help` imports them all) compiled there too; see the module
    docstring."""
    cached = dict(env, PYTHONPYCACHEPREFIX=str(folder / PYCACHE))
    cached.pop("PYTHONDONTWRITEBYTECODE", None)
    package = str(REPO / "tabench_dsl")
    subprocess.run([sys.executable, "-m", "compileall", "-q", "-j", "0", package], env=cached, check=True)
    subprocess.run(
        [sys.executable, "-m", "tabench_dsl", "--help"], env=cached, stdout=subprocess.DEVNULL, check=True
    )
    return cached


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--systems", type=int, default=50)
    parser.add_argument("--only", default="", help="comma-separated command names to run (default: all)")
    parser.add_argument("--keep", type=Path, default=None, help="write the files here once; reuse them")
    parser.add_argument("--again", type=int, default=1, help="times each later run is timed (default 1)")
    parser.add_argument("--write-to", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.write_to is not None:  # the files written by a process of their own (see below)
        write_files(args.write_to, args.records, args.systems)
        return 0

    env = dict(os.environ, PYTHONPATH=str(REPO), COLUMNS="160")
    for variable in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL"):
        env.pop(variable, None)
    failed = False
    with contextlib.ExitStack() as stack:
        if args.keep is None:
            folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        else:
            folder = args.keep.resolve()
            folder.mkdir(parents=True, exist_ok=True)
            if any(folder.iterdir()) and not (folder / WRITTEN).is_file():  # never empty a stranger's folder
                parser.error(f"--keep {folder}: not empty and not a folder this bench wrote")
        env["TABENCH_CACHE"] = str(folder / "cache")
        env["XDG_CACHE_HOME"] = str(folder / "xdg")  # the index's signing key, made for this run
        paths = {name: folder / f"{name}.jsonl" for name in ("a", "b", "answers")}
        paths["battery"] = folder / "battery"
        started = time.perf_counter()
        if not reusable(folder, args.records, args.systems):
            clear(folder, every_file=True)
            (folder / WRITTEN).write_text("being written\n")  # marks the folder as this bench's
            # Written by a child process: a child's peak memory (`ru_maxrss`) starts from its
            # parent's, which holding the generator's records would raise above every command's own.
            writer = [sys.executable, __file__, "--write-to", str(folder), "--records", str(args.records)]
            subprocess.run([*writer, "--systems", str(args.systems)], env=env, check=True)
            (folder / WRITTEN).write_text(f"{args.records} {args.systems}\n")
            done = "wrote"
        else:
            clear(folder, every_file=False)
            done = "kept"
        plain, env = env, bytecode_cache(folder, env)
        size = paths["a"].stat().st_size / 1e6
        print(f"{done} {args.records:,} records ({size:,.0f} MB) in {time.perf_counter() - started:.1f} s")
        wanted = {n.strip() for n in args.only.split(",") if n.strip()}
        every = commands(paths, folder)
        floor = floor_cpu = float("nan")
        for label in ORDER:
            name = label.removesuffix(BUILD)
            if wanted and name not in wanted and not label.startswith("floor"):
                continue
            if label == MSGSPEC_PASS:
                floor_argv = [sys.executable, "-c", MSGSPEC_PASS_CODE, str(paths["a"])]
                floor, rss, status, floor_cpu = measure(floor_argv, env)
                cpu_used = f"cpu {floor_cpu:.1f} s"
                print(f"{label:<28} {floor:7.3f} s  {rss:6.0f} MB  (exit {status})  {cpu_used}", flush=True)
                continue
            argv = [sys.executable, "-m", "tabench_dsl", *every[name]]
            viewing = name.startswith("view")
            first = label.endswith(BUILD) or name in FIRST_EVERY_TIME
            if first:
                clear(folder, every_file=False, keep=INSTALLED)
            for _ in range(1 if first or label.startswith("floor") else max(args.again, 1)):
                child_env = plain if label == IMPORT_NO_CACHE else env
                if viewing:
                    then = name.removeprefix("view").strip()
                    wall, rss, status, used = measure_view(argv, child_env, then=then)
                else:
                    wall, rss, status, used = measure(argv, child_env)
                failed |= status not in ((0, 1, 130) if viewing else (0, 1))  # 130: stopped by Ctrl-C
                # The CPU of every process of the command against the pass's, which a loaded
                # machine changes less than either wall time: on two free cores, the wall ratio
                # can come down to half of it, no lower.
                cpu_ratio = f"cpu {used / floor_cpu:.1f}x"
                ratio = f"  {wall / floor:4.1f}x the msgspec pass ({cpu_ratio})" if first else ""
                if name == "view paging":  # a page's lines cost at least the floor's share of them
                    over = wall / (floor * PAGE / args.records)
                    ratio = f"  a page; {over:4.1f}x the msgspec pass over its lines"
                print(f"{label:<28} {wall:7.3f} s  {rss:6.0f} MB  (exit {status}){ratio}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
