"""Replicas bench: one judge over N replicas (`grade --replica URL`), each with a prefix cache.

    python bench/replicas_bench.py [--replicas 4] [--questions 400] [--systems 20]
                                   [--cache-size 64] [--latency-ms 5] [--concurrency 32]

1. Starts `--replicas` mock Chat Completions servers in this process (aiohttp, 127.0.0.1). Each plays
   a prefix cache: an LRU of `--cache-size` SYSTEM prompts; a request whose SYSTEM is in it is a hit.
   A reply comes after `--latency-ms` (a hit after a fifth of it, as a cached prefix skips prefill).
   A SYSTEM counts as cached once a reply for it was sent (a request arriving while the first is
   still out misses).
2. Runs a real `tabench grade` (a child process, `--no-cache`) of `--questions` x `--systems`
   answers (T1 off: every answer a judge call) with `--judge URL1 --replica URL2 ...`.
3. Prints, against a floor measured in the same run (the same grading through one endpoint that
   hands requests to the replicas in turn: a router without affinity), the cache-hit share (goal
   >= 90%) and the load of each replica against the mean (goal: none above 1.2x).
4. Grades again and stops one replica once half the replies are out: prints the goodput (replies a
   second) before and after, and that no answer was lost.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import sys
import tempfile
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

from aiohttp import web
from aiohttp.test_utils import TestServer
from prompt_cache_bench import write_answers, write_battery

ROOT = Path(__file__).resolve().parents[1]

REPLY = '{"verdict": "pass", "reason": "ok", "facets": {}}'


class MockReplica:
    """One replica: a Chat Completions endpoint with an LRU prefix cache of SYSTEM prompts."""

    def __init__(self, cache_size: int, latency: float) -> None:
        self.cache: OrderedDict[str, None] = OrderedDict()
        self.cache_size = cache_size
        self.latency = latency
        self.requests = self.hits = 0
        self.server: TestServer | None = None
        self.url = ""
        self.replied: list[float] = []  # when each reply was sent
        self.on_reply: Callable[[], None] | None = None
        self.killed_at = 0.0

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self.complete)
        self.server = TestServer(app, host="127.0.0.1", port=0)
        await self.server.start_server()
        self.url = f"http://127.0.0.1:{self.server.port}/v1"

    async def stop(self) -> None:
        server, self.server = self.server, None
        if server is not None:
            await server.close()

    async def complete(self, request: web.Request) -> web.Response:
        body = await request.json()
        system = body["messages"][0]["content"]
        self.requests += 1
        hit = system in self.cache
        if hit:
            self.hits += 1
            self.cache.move_to_end(system)
        await asyncio.sleep(self.latency / 5 if hit else self.latency)
        self.cache[system] = None
        while len(self.cache) > self.cache_size:
            self.cache.popitem(last=False)
        self.replied.append(time.perf_counter())
        if self.on_reply is not None:
            self.on_reply()
        return web.json_response(
            {
                "id": "x",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": REPLY}, "finish_reason": "stop"}
                ],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            }
        )


class Router:
    """The floor: one endpoint in front of the replicas handing requests out in turn, whatever the
    prompt (a router without affinity), in this process (no extra hop)."""

    def __init__(self, mocks: list[MockReplica]) -> None:
        self.turn = itertools.cycle(mocks)
        self.server: TestServer | None = None
        self.url = ""

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", lambda request: next(self.turn).complete(request))
        self.server = TestServer(app, host="127.0.0.1", port=0)
        await self.server.start_server()
        self.url = f"http://127.0.0.1:{self.server.port}/v1"


async def grade(work: Path, urls: list[str], concurrency: int, out: str) -> tuple[int, dict[str, int]]:
    """A real `tabench grade` (a child process, --no-cache); its exit status and verdict counts."""
    argv = [
        sys.executable,
        "-m",
        "tabench_dsl",
        "grade",
        str(work / "battery"),
        "--answers",
        str(work / "answers.jsonl"),
    ]
    argv += ["--judge", urls[0], *itertools.chain.from_iterable(("--replica", u) for u in urls[1:])]
    argv += [
        "--model",
        "mock-judge",
        "--no-cache",
        "--concurrency",
        str(concurrency),
        "--out",
        str(work / out),
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = await asyncio.create_subprocess_exec(
        *argv, env=env, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE
    )
    _, err = await child.communicate()
    verdicts: dict[str, int] = {}
    if (work / out).exists():
        for line in (work / out).read_text(encoding="utf-8").splitlines():
            verdict = json.loads(line)["verdict"]
            verdicts[verdict] = verdicts.get(verdict, 0) + 1
    if child.returncode not in (0, 1):
        print(err.decode(), file=sys.stderr)
    return child.returncode or 0, verdicts


def measure(mocks: list[MockReplica]) -> tuple[float, list[float]]:
    """The cache-hit share over every replica, and each replica's load against the mean."""
    hits = sum(m.hits for m in mocks) / max(1, sum(m.requests for m in mocks))
    mean = sum(m.requests for m in mocks) / len(mocks)
    return hits, [m.requests / mean for m in mocks]


def reset(mocks: list[MockReplica]) -> None:
    for mock in mocks:
        mock.cache.clear()
        mock.requests = mock.hits = 0
        mock.replied.clear()


async def run(args: argparse.Namespace) -> int:
    mocks = [MockReplica(args.cache_size, args.latency_ms / 1000) for _ in range(args.replicas)]
    for mock in mocks:
        await mock.start()
    router = Router(mocks)
    await router.start()
    total = args.questions * args.systems
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        write_battery(work / "battery", args.questions, prompt_cache=True)
        write_answers(work / "answers.jsonl", args.questions, args.systems)
        print(
            f"{args.replicas} replicas, {args.questions} questions x {args.systems} systems: "
            f"{total} judge calls"
        )
        for name, urls in (
            ("router, round-robin (floor)", [router.url]),
            ("--replica (affinity)", [m.url for m in mocks]),
        ):
            reset(mocks)
            started = time.perf_counter()
            status, verdicts = await grade(work, urls, args.concurrency, f"{len(urls)}.jsonl")
            seconds = time.perf_counter() - started
            hits, loads = measure(mocks)
            print(
                f"{name:<28} exit {status}, {verdicts}, {seconds:.1f} s; cache hits {hits:.1%}; "
                f"load per replica / mean: {' '.join(f'{x:.2f}' for x in loads)}"
            )
        ok = hits >= 0.9 and max(loads) <= 1.2
        print(
            f"goal: cache hits >= 90%: {hits:.1%} {'ok' if hits >= 0.9 else 'MISSED'}; "
            f"no replica above 1.2x the mean: {max(loads):.2f}x {'ok' if max(loads) <= 1.2 else 'MISSED'}"
        )
        ok = await dies_mid_run(args, mocks, work) and ok
    for mock in mocks:
        await mock.stop()
    return 0 if ok else 1


async def dies_mid_run(args: argparse.Namespace, mocks: list[MockReplica], work: Path) -> bool:
    """One replica stopped once half the replies are out: goodput before and after, nothing lost."""
    reset(mocks)
    total = args.questions * args.systems
    victim = mocks[0]
    stopping: list[asyncio.Task] = []

    def check() -> None:
        if sum(len(m.replied) for m in mocks) >= total // 2 and victim.server is not None:
            victim.killed_at = time.perf_counter()
            stopping.append(asyncio.get_running_loop().create_task(victim.stop()))

    for mock in mocks:
        mock.on_reply = check
    status, verdicts = await grade(work, [m.url for m in mocks], args.concurrency, "dies.jsonl")
    for mock in mocks:
        mock.on_reply = None
    times = sorted(t for m in mocks for t in m.replied)
    kill = victim.killed_at
    before = [t for t in times if t <= kill]
    after = [t for t in times if t > kill]
    rate_before = len(before) / max(1e-9, kill - times[0])
    rate_after = len(after) / max(1e-9, times[-1] - kill)
    graded = sum(verdicts.values())
    print(
        f"one of {len(mocks)} replicas stopped after {len(before)} replies: "
        f"goodput {rate_before:.0f}/s before, {rate_after:.0f}/s after ({rate_after / rate_before:.2f}x); "
        f"exit {status}, {graded}/{total} graded, "
        f"{verdicts}, {total - verdicts.get('pass', 0)} lost"
    )
    return verdicts.get("pass", 0) == total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=4)
    parser.add_argument("--questions", type=int, default=400)
    parser.add_argument("--systems", type=int, default=20)
    parser.add_argument("--cache-size", type=int, default=64)
    parser.add_argument("--latency-ms", type=float, default=5.0)
    parser.add_argument("--concurrency", type=int, default=32)
    return asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
