"""Batch bench: `tabench grade --batch` over 20,000 answers against a mock OpenAI batch service.

    python bench/batch_bench.py [--answers 20000] [--delay 2] [--input-price 2.50] [--output-price 10]

1. Starts `bench/mock_batch_service.py` (its own process; a batch completes `--delay` s after it was
   created; one answer in ten is malformed on its first ask, one in twenty a contradiction).
2. Writes a battery (T1 off: every answer is a judge call) and the answers file.
3. Runs `tabench grade --batch --no-cache` as a child process (polling every 0.2 s) and reads its
   wall time and peak RSS from `os.wait4` (target < 300 MB).
4. Prints the requests submitted against the judge calls the grading needed (the attempts its
   records hold: first asks, format re-asks, stern retries) and the requests submitted twice (must
   be 0), the rounds and batches, and the cost of the tokens the records hold at the given prices
   per million tokens: live, and as a batch (half, as both providers price their batch services).
Exit status 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from runtime_bench import write_battery  # noqa: E402  (the runtime bench's battery: 50 questions)

#: Peak RSS target of the grading process, MiB.
RSS_TARGET_MIB = 300.0
#: The share of the live price both providers charge for a batch request.
BATCH_DISCOUNT = 0.5


def write_answers(path: Path, count: int) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for n in range(count):
            system, question = divmod(n, 50)
            answer = f"The pipeline has Ingest, Index and Recall stages (system {system}, answer {n})."
            f.write(
                json.dumps({"system": f"s{system:04d}", "question": f"q{question:03d}", "answer": answer})
                + "\n"
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=20_000)
    parser.add_argument("--delay", type=float, default=2.0, help="seconds a mock batch takes")
    parser.add_argument("--input-price", type=float, default=2.50, help="live $ per million input tokens")
    parser.add_argument("--output-price", type=float, default=10.0, help="live $ per million output tokens")
    args = parser.parse_args()

    service = subprocess.Popen(
        [sys.executable, str(HERE / "mock_batch_service.py"), "--delay", str(args.delay)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = service.stdout.readline() if service.stdout else ""
        if not line.startswith("port "):
            raise SystemExit("the mock batch service did not start")
        root = f"http://127.0.0.1:{int(line.split()[1])}"
        with tempfile.TemporaryDirectory(prefix="tabench-batch-bench-") as folder:
            work = Path(folder)
            battery = write_battery(work / "battery")
            answers = work / "answers.jsonl"
            write_answers(answers, args.answers)
            out = work / "results.jsonl"
            env = dict(os.environ, TABENCH_BATCH_POLL="0.2")
            env.pop("OPENAI_API_KEY", None)
            argv = [
                sys.executable,
                "-m",
                "tabench_dsl",
                "grade",
                str(battery),
                "--answers",
                str(answers),
                "--out",
                str(out),
                "--judge",
                f"{root}/v1",
                "--model",
                "mock-judge",
                "--no-cache",
                "--batch",
                "--json",
            ]
            started = time.perf_counter()
            proc = subprocess.Popen(
                argv, cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
            )
            stderr = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
            _, status, usage = os.wait4(proc.pid, 0)
            wall = time.perf_counter() - started
            rss = usage.ru_maxrss / 1024.0
            if os.waitstatus_to_exitcode(status) != 0:
                raise SystemExit(f"tabench grade --batch failed:\n{stderr[-3000:]}")
            stats = json.load(urllib.request.urlopen(f"{root}/stats"))
            needed = prompt = completion = records = 0
            for raw in out.open("rb"):
                record = json.loads(raw)
                records += 1
                for attempt in record["attempts"]:
                    needed += 1
                    prompt += attempt["tokens"]["prompt"]
                    completion += attempt["tokens"]["completion"]
    finally:
        service.terminate()
        service.wait()

    found = re.search(r"batch: (\d+) request\(s\) submitted in (\d+) batch\(es\), (\d+) round\(s\)", stderr)
    rounds = found[3] if found else "?"
    twice = stats["submitted"] - stats["unique"]
    live = (prompt * args.input_price + completion * args.output_price) / 1e6
    batch = live * BATCH_DISCOUNT
    print(f"answers graded:      {records} in {wall:.1f} s (mock batches take {args.delay:g} s)")
    print(f"requests submitted:  {stats['submitted']} in {stats['batches']} batch(es), {rounds} round(s)")
    print(f"judge calls needed:  {needed} (attempts in the records); submitted twice: {twice}")
    print(f"peak RSS:            {rss:.0f} MiB (target < {RSS_TARGET_MIB:.0f})")
    print(f"tokens:              {prompt} in, {completion} out")
    print(
        f"cost at ${args.input_price:g}/${args.output_price:g} per M tokens: live ${live:.4f}, "
        f"batch ${batch:.4f} ({BATCH_DISCOUNT:.0%})"
    )
    ok = stats["submitted"] == needed and twice == 0 and rss < RSS_TARGET_MIB and records == args.answers
    print("targets: " + ("met" if ok else "MISSED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
