"""Prompt-cache bench: how many judge requests a provider could serve from its prompt cache.

    python bench/prompt_cache_bench.py [--questions 100] [--systems 20] [--latency-ms 40]
                                       [--concurrency 8 64] [--workers 1]

1. Starts a mock judge in this process (aiohttp, Chat Completions wire format, on 127.0.0.1) that
   plays a provider's prefix cache: an LRU of `--cache-size` (16) SYSTEM prompts. A SYSTEM counts as
   cached only once a reply for it was sent (a request arriving while the first one is still out
   misses, as at a real provider); a hit refreshes its entry. Each reply reports
   `usage.prompt_tokens_details.cached_tokens` (the SYSTEM's tokens on a hit, else 0), with
   `prompt_tokens` counting every prompt token (tokens estimated as characters / 4). It answers
   after `--latency-ms` (+-25%, seeded) with a pass verdict.
2. Writes a battery of `--questions` questions (T1 off: every answer is a judge call) and an answers
   file of `--systems` systems answering every question, ordered system by system (how answers
   files usually run).
3. Runs a real `tabench grade` (a child process, `--no-cache`) against the mock, for each
   `--concurrency`: grouped by question (the default), and the baseline in file order (the
   battery's manifest saying `judge: {prompt_cache: false}`, which also drops the cache hint).
4. Prints, per run, the requests, the requests that could be served from the cache (all but the
   first of each question), the share of those that were (target >= 90% grouped; file order gives
   about 0%), the cached tokens the results file recorded (they must equal the mock's count), and
   the wall time.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import random
import sys
import tempfile
import time
from collections import OrderedDict
from pathlib import Path

from aiohttp import web

HERE = Path(__file__).resolve().parent
PYTHON = sys.executable
TARGET = 0.90

VERDICT = json.dumps({"verdict": "pass", "reason": "names every stage the gold names", "facets": {}})


def tokens_of(text: str) -> int:
    """The mock's token estimate: a token for every four characters."""
    return max(1, len(text) // 4)


class PrefixCacheJudge:
    """The mock judge and its simulated prompt cache, with what it counted."""

    def __init__(self, cache_size: int, latency: float, seed: int = 7) -> None:
        self.cache_size = cache_size
        self.latency = latency
        self.random = random.Random(seed)
        self.cached: OrderedDict[str, None] = OrderedDict()
        self.reset()

    def reset(self) -> None:
        self.cached.clear()
        self.requests = 0
        self.hits = 0
        self.cached_tokens = 0
        self.systems: set[str] = set()
        self.keys: dict[str, set[str]] = {}
        self.busy = 0.0  # seconds of requests in flight, summed over time (area under the curve)
        self.first = self.last = 0.0

    async def chat(self, request: web.Request) -> web.Response:
        body = json.loads(await request.read())
        messages = body["messages"]
        system = next(m["content"] for m in messages if m["role"] == "system")
        prompt = sum(tokens_of(m["content"]) for m in messages)
        digest = hashlib.sha256(system.encode()).hexdigest()
        self.requests += 1
        self.systems.add(digest)
        if "prompt_cache_key" in body:
            self.keys.setdefault(digest, set()).add(body["prompt_cache_key"])
        hit = digest in self.cached
        if hit:
            self.cached.move_to_end(digest)
            self.hits += 1
        cached = tokens_of(system) if hit else 0
        self.cached_tokens += cached
        started = time.perf_counter()
        self.first = self.first or started
        await asyncio.sleep(self.latency * self.random.uniform(0.75, 1.25))
        self.last = time.perf_counter()
        self.busy += self.last - started
        completion = tokens_of(VERDICT)
        reply = {
            "id": "chatcmpl-bench",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": VERDICT}, "finish_reason": "stop"}
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
                "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
            },
        }
        # The reply is sent: from now on the provider holds this SYSTEM (the newest entry).
        self.cached[digest] = None
        self.cached.move_to_end(digest)
        while len(self.cached) > self.cache_size:
            self.cached.popitem(last=False)
        return web.json_response(reply)


def write_battery(folder: Path, questions: int, *, prompt_cache: bool) -> Path:
    """`questions` questions, T1 off, with SYSTEM prompts of a realistic size."""
    folder.mkdir(parents=True, exist_ok=True)
    judge = (
        "judge: {model: mock-judge}" if prompt_cache else "judge: {model: mock-judge, prompt_cache: false}"
    )
    (folder / "battery.yaml").write_text(
        "name: prompt-cache-bench\nscorer: tabench-1.1\npolicies: [bench.policy]\n"
        f"rubrics: [questions.rubric]\nt1: false\n{judge}\n",
        encoding="utf-8",
    )
    rules = [
        f"S{i}: Rule {i} of the bench policy: cite the mechanism, not only its name, and say why it holds."
        for i in range(1, 25)
    ]
    (folder / "bench.policy").write_text("\n".join(rules) + "\n", encoding="utf-8")
    blocks = []
    for i in range(questions):
        blocks.append(
            f"question q{i:03d} {{\n"
            f'  prompt "Which stages make up memory pipeline number {i}, and in which order do they run?"\n'
            f'  gold "Four stages: Ingest, Index, Recall, Compact (pipeline {i})"\n'
            f'  trap "There is no Summarize stage."\n'
            f'  scoring "All four stages are needed for a pass; three of four is partial."\n'
            f'  facet missing_minor "omits the order of the stages"\n'
            f'  exemplar correct "Ingest, Index, Recall, Compact." why "all four named"\n'
            f'  exemplar partial "Ingest, Index, Recall." why "three of four" expect fail\n'
            f"}}\n"
        )
    (folder / "questions.rubric").write_text("\n".join(blocks), encoding="utf-8")
    return folder


def write_answers(path: Path, questions: int, systems: int) -> None:
    """Every system's answer to every question, one system after the other."""
    with open(path, "w", encoding="utf-8") as f:
        for s in range(systems):
            for q in range(questions):
                answer = f"The pipeline runs Ingest, Index, Recall and Compact (system {s}, question {q})."
                f.write(json.dumps({"system": f"s{s:02d}", "question": f"q{q:03d}", "answer": answer}) + "\n")


async def grade(battery: Path, answers: Path, out: Path, url: str, concurrency: int, workers: int) -> float:
    """Run `tabench grade` as a child process; its wall time in seconds."""
    argv = [
        PYTHON,
        "-m",
        "tabench_dsl",
        "grade",
        str(battery),
        "--answers",
        str(answers),
        "--judge",
        url,
        "--no-cache",
        "--concurrency",
        str(concurrency),
        "--workers",
        str(workers),
        "--out",
        str(out),
    ]
    env = {**os.environ, "PYTHONPATH": str(HERE.parent)}
    started = time.perf_counter()
    child = await asyncio.create_subprocess_exec(
        *argv, env=env, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE
    )
    _, err = await child.communicate()
    if child.returncode != 0:
        raise SystemExit(f"tabench grade failed ({child.returncode}):\n{err.decode()}")
    return time.perf_counter() - started


def recorded_cached_tokens(results: Path) -> int:
    total = 0
    with open(results, encoding="utf-8") as f:
        for line in f:
            for attempt in json.loads(line)["attempts"]:
                total += attempt["tokens"]["cached_prompt"]
    return total


async def bench(args: argparse.Namespace) -> int:
    judge = PrefixCacheJudge(args.cache_size, args.latency_ms / 1000.0)
    app = web.Application()
    app.router.add_post("/v1/chat/completions", judge.chat)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # port 0: the port the kernel chose
    url = f"http://127.0.0.1:{port}/v1"
    failed = False
    try:
        with tempfile.TemporaryDirectory(prefix="tabench-prompt-cache-") as tmp:
            work = Path(tmp)
            grouped = write_battery(work / "grouped", args.questions, prompt_cache=True)
            in_file_order = write_battery(work / "file-order", args.questions, prompt_cache=False)
            answers = work / "answers.jsonl"
            write_answers(answers, args.questions, args.systems)
            print(
                f"{args.questions} questions x {args.systems} systems, answers system by system; "
                f"mock judge: LRU of {args.cache_size} SYSTEM prompts, {args.latency_ms:g} ms a reply; "
                f"--workers {args.workers}"
            )
            header = f"{'order':<26}{'conc.':>6}{'requests':>10}{'could':>8}{'cached':>8}{'share':>8}"
            print(header + f"{'recorded':>10}{'wall s':>8}{'in flight':>10}")
            for concurrency in args.concurrency:
                for name, battery in (
                    ("grouped by question", grouped),
                    ("file order (cache off)", in_file_order),
                ):
                    judge.reset()
                    out = work / f"results-{battery.name}-{concurrency}.jsonl"
                    wall = await grade(battery, answers, out, url, concurrency, args.workers)
                    could = judge.requests - len(judge.systems)
                    share = judge.hits / could if could else 0.0
                    recorded = recorded_cached_tokens(out)
                    keys_stable = all(len(keys) == 1 for keys in judge.keys.values())
                    print(
                        f"{name:<26}{concurrency:>6}{judge.requests:>10}{could:>8}{judge.hits:>8}"
                        f"{share:>8.1%}{recorded:>10}{wall:>8.2f}"
                        f"{judge.busy / max(judge.last - judge.first, 1e-9):>10.1f}"
                    )
                    if recorded != judge.cached_tokens:
                        print(f"  recorded cached tokens {recorded} != the mock's {judge.cached_tokens}")
                        failed = True
                    if battery is grouped and (share < TARGET or not keys_stable or not judge.keys):
                        failed = True
            print(f"target: grouped >= {TARGET:.0%} of the requests that could be served from the cache")
    finally:
        await runner.cleanup()
    print("FAILED" if failed else "ok")
    return 1 if failed else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=100)
    parser.add_argument("--systems", type=int, default=20)
    parser.add_argument("--cache-size", type=int, default=16)
    parser.add_argument("--latency-ms", type=float, default=40.0)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[8, 64])
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    raise SystemExit(asyncio.run(bench(args)))


if __name__ == "__main__":
    main()
