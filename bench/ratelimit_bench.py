"""Rate-limit bench: does `tabench grade` get the most out of a judge's rate limit, losing nothing?

    python bench/ratelimit_bench.py [--answers 2000] [--rates 20,100] [--modes headers,bare]
                                    [--latency-ms 20] [--concurrency 64]

1. Starts a mock judge (this script with `--serve`, a process of its own on 127.0.0.1): Chat
   Completions behind a token bucket of `rate` requests a second holding `rate` (a second's burst).
   A request beyond the bucket gets 429 with `Retry-After` (whole seconds until a token, at least
   1). In mode `headers` every reply also carries OpenAI's rate-limit headers
   (`x-ratelimit-{limit,remaining,reset}-{requests,tokens}`, resets as "250ms" / "1s"); in mode
   `bare` none, so pacing has only the 429s to learn from.
2. Writes a battery (T1 off: every answer is one judge call) and `--answers` answers.
3. Runs a real `tabench grade --no-cache --concurrency 64` in this process (`cli.main`), default
   flags otherwise.
4. Prints, per rate and mode: goodput (successful judge calls a second, from the first request to
   the last success, as the server saw them) as a share of the limit, 429s as a share of judge
   calls, and answers lost (records that ended `error`, or no record at all).

Targets: 0 lost, goodput >= 95% of the limit, 429s <= 5% of judge calls, at every rate.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from mock_judge import REPLY  # noqa: E402  (the same chat completion the runtime bench's judge sends)
from runtime_bench import write_answers, write_battery  # noqa: E402

LIMITED = json.dumps(
    {"error": {"message": "Rate limit reached for requests", "type": "requests", "param": None, "code": None}}
).encode()
#: The mock's tokens budget: far more than the bench uses, so only the requests limit binds.
TOKENS_LIMIT = 10_000_000


def go_duration(seconds: float) -> str:
    """A reset as OpenAI writes it: "20ms", "1s", "1.5s", "6m0s"."""
    if seconds < 1:
        return f"{max(1, round(seconds * 1000))}ms"
    if seconds < 60:
        return f"{round(seconds, 3):g}s"
    minutes, rest = divmod(seconds, 60)
    return f"{int(minutes)}m{round(rest, 3):g}s"


# -- the mock judge (runs in its own process) ----------------------------------------------------


class Bucket:
    """`rate` requests a second, `burst` deep, full at the start."""

    def __init__(self, rate: float, burst: float) -> None:
        self.rate, self.burst = rate, burst
        self.level = burst
        self.stamp = time.monotonic()

    def take(self) -> bool:
        now = time.monotonic()
        self.level = min(self.burst, self.level + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.level >= 1:
            self.level -= 1
            return True
        return False


async def serve(rate: float, latency: float, headers: bool) -> None:
    from aiohttp import web

    bucket = Bucket(rate, rate)
    stats = {"ok": 0, "limited": 0, "first": None, "last_ok": None}

    def rate_headers() -> dict[str, str]:
        if not headers:
            return {}
        reset = (bucket.burst - bucket.level) / bucket.rate
        return {
            "x-ratelimit-limit-requests": str(int(bucket.burst)),
            "x-ratelimit-remaining-requests": str(int(bucket.level)),
            "x-ratelimit-reset-requests": go_duration(reset),
            "x-ratelimit-limit-tokens": str(TOKENS_LIMIT),
            "x-ratelimit-remaining-tokens": str(TOKENS_LIMIT - 940),
            "x-ratelimit-reset-tokens": "6ms",
        }

    async def handle(request: web.BaseRequest) -> web.Response:
        await request.read()
        if request.method == "GET" and request.path == "/stats":
            return web.json_response(stats)
        if request.method != "POST":
            return web.Response(status=404)
        now = time.monotonic()
        if stats["first"] is None:
            stats["first"] = now
        if not bucket.take():
            stats["limited"] += 1
            wait = max(1, math.ceil((1 - bucket.level) / bucket.rate))
            extra = {"retry-after": str(wait), "content-type": "application/json", **rate_headers()}
            return web.Response(status=429, body=LIMITED, headers=extra)
        extra = rate_headers()
        await asyncio.sleep(latency)
        stats["ok"] += 1
        stats["last_ok"] = time.monotonic()
        return web.Response(body=REPLY, headers={"content-type": "application/json", **extra})

    server = web.Server(handle, access_log=None)
    runner = web.ServerRunner(server, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, backlog=1024)
    await site.start()
    print(f"port {site._server.sockets[0].getsockname()[1]}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await runner.cleanup()


# -- the measurement -------------------------------------------------------------------------------


def stats_of(url: str) -> dict:
    import urllib.request

    with urllib.request.urlopen(f"{url}/stats", timeout=10) as reply:
        return json.loads(reply.read())


def run_one(work: Path, battery: Path, answers: Path, count: int, rate: float, mode: str, args) -> dict:
    from tabench_dsl.cli import main

    argv = [sys.executable, str(Path(__file__).resolve()), "--serve", "--rate", str(rate)]
    argv += ["--latency-ms", str(args.latency_ms), "--mode", mode]
    server = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline() if server.stdout else ""
        if not line.startswith("port "):
            raise SystemExit("the mock judge did not start")
        root = f"http://127.0.0.1:{int(line.split()[1])}"
        out = work / f"results-{rate:g}-{mode}.jsonl"
        started = time.perf_counter()
        with (
            open(os.devnull, "w") as quiet,
            contextlib.redirect_stdout(quiet),
            contextlib.redirect_stderr(quiet),
        ):
            status = main(
                [
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
                    "--concurrency",
                    str(args.concurrency),
                ]
            )
        wall = time.perf_counter() - started
        stats = stats_of(root)
    finally:
        server.terminate()
        server.wait(timeout=30)
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines() if line.strip()]
    errors = sum(1 for r in records if r.get("verdict") == "error")
    lost = errors + max(0, count - len(records))
    calls = stats["ok"] + stats["limited"]
    span = (stats["last_ok"] or 0) - (stats["first"] or 0)
    goodput = stats["ok"] / span if span > 0 else 0.0
    return {
        "rate": rate,
        "mode": mode,
        "status": status,
        "wall": wall,
        "goodput": goodput,
        "share": goodput / rate,
        "limited": stats["limited"],
        "calls": calls,
        "limited_share": stats["limited"] / calls if calls else 0.0,
        "lost": lost,
    }


def main_bench(args) -> int:
    rates = [float(r) for r in args.rates.split(",")]
    modes = args.modes.split(",")
    results = []
    with tempfile.TemporaryDirectory(prefix="tabench-ratelimit-") as tmp:
        work = Path(tmp)
        battery = write_battery(work / "battery")
        answers = work / "answers.jsonl"
        write_answers(answers, args.answers)
        os.chdir(work)
        for rate in rates:
            for mode in modes:
                load = os.getloadavg()[0]
                result = run_one(work, battery, answers, args.answers, rate, mode, args)
                results.append(result)
                print(
                    f"limit {rate:>5g}/s  {mode:<7}  goodput {result['goodput']:6.1f}/s "
                    f"({result['share']:6.1%} of the limit)  429s {result['limited']:>4} "
                    f"({result['limited_share']:5.1%} of {result['calls']} judge calls)  "
                    f"lost {result['lost']}  wall {result['wall']:.1f} s  (load {load:.2f})",
                    flush=True,
                )
    met = all(r["lost"] == 0 and r["share"] >= 0.95 and r["limited_share"] <= 0.05 for r in results)
    print(
        f"targets (0 lost, goodput >= 95% of the limit, 429s <= 5% of calls): {'met' if met else 'NOT met'}"
    )
    return 0 if met else 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=2000)
    parser.add_argument("--rates", default="20,100", help="the limits to try, requests a second")
    parser.add_argument(
        "--modes", default="headers,bare", help="headers: OpenAI rate-limit headers; bare: none"
    )
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency-ms", type=float, default=20.0, help="the mock's time per reply")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--rate", type=float, default=20.0, help=argparse.SUPPRESS)
    parser.add_argument("--mode", default="headers", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        asyncio.run(serve(args.rate, args.latency_ms / 1000.0, args.mode == "headers"))
        return
    raise SystemExit(main_bench(args))


if __name__ == "__main__":
    main()
