"""Rate-limit bench: does `tabench grade` get the most out of a judge's rate limit, losing nothing?

    python bench/ratelimit_bench.py [--seconds 15] [--rates 20,100] [--bursts 1] [--modes headers,bare]
                                    [--limits requests] [--workers 1] [--latency-ms 20]
                                    [--concurrency 64] [--answers N] [--retry-after S] [--sweep]
                                    [--runs 5]

1. Starts a mock judge (this script with `--serve`, a process of its own on 127.0.0.1): Chat
   Completions behind a token bucket of `rate` requests a second holding `burst` seconds of that
   (at least one request). A request beyond the bucket gets 429 with `Retry-After` (whole seconds
   until a token, at least 1; `--retry-after S` sends S instead). With `--limits tokens` the
   bucket counts tokens instead (every request costs TOKENS_PER_CALL, the limit is `rate`
   requests' worth a second, given as tokens per minute). In mode `headers` every reply also
   carries OpenAI's rate-limit headers (`x-ratelimit-{limit,remaining,reset}-{requests,tokens}`,
   resets as "250ms" / "1s"); in mode `bare` none, so pacing has only the 429s to learn from.
2. Writes a battery (T1 off: every answer is one judge call) and `--seconds` of the limit's worth
   of answers (`--answers` sets the count instead). The default, 15 s, is the work a point of
   issue #23's sweep is measured over: at 5 a second, 75 answers, so 5% of 429s is 3 (the slow
   start's, the climb's and, in a bucket one request deep, the bracket's: `grading/pacing/one_deep.py`).
3. Runs a real `tabench grade --no-cache --concurrency 64 [--workers N]` in this process
   (`cli.main`), default flags otherwise.
4. Prints, per point: goodput as a share of what the bucket could have given (successful judge
   calls, as the server saw them, over `burst + rate x span`, span from the first request to the
   last success: the initial burst is not counted as speed), 429s as a share of judge calls, and
   answers lost (records that ended `error`, or no record at all). At a bucket one request deep,
   also the arrival jitter the mock saw (`arrival_jitter`: how far each gap after the last request
   taken strays from the running median, 90th and 99th percentile), which the simulator's network
   (`tests/support/pacing_sim.py`) is calibrated to.

`--sweep`: every limit of 5, 20, 100 and 500 a second, each with a burst of 1 s and of 0.2 s of it,
with and without headers, plus a tokens-per-minute limit (100 requests' worth a second), plus the
buckets one request deep without headers (a strict gateway: 1, 2, 5, 10 and 50 a second, a burst of
one request), each with one worker and with `--workers 2`; then one table.

`--virtual`: the same points in virtual time, against a simulated server's bucket
(`tests/support/pacing_sim.py`: the real pacer, transport and shared pacer on an event loop whose
clock jumps to the next timer), seeded by the run's number: the whole sweep in about a minute, a
pacing change judged before the real runs (which it does not replace: no real network, no CPU).

`--runs N`: every point N times, and the worst of them reported (the one furthest from the targets:
a miss before a pass, then the lowest goodput): a pacer that holds a limit only on a lucky run does
not hold it.

Targets: 0 lost, goodput >= 95% of the limit, 429s <= 5% of judge calls, at every point.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from mock_judge import REPLY  # noqa: E402  (the same chat completion the runtime bench's judge sends)
from pacing_trace import Trace, decompose, split_transit  # noqa: E402
from pacing_trace import describe as describe_trace  # noqa: E402
from runtime_bench import write_answers, write_battery  # noqa: E402

LIMITED = json.dumps(
    {"error": {"message": "Rate limit reached for requests", "type": "requests", "param": None, "code": None}}
).encode()
#: The mock's tokens budget when requests are limited: far more than the bench uses.
TOKENS_LIMIT = 10_000_000
#: The mock's requests budget when tokens are limited.
REQUESTS_LIMIT = 1_000_000
#: Tokens the mock charges a request (the reply's usage says as much).
TOKENS_PER_CALL = 940
#: The sweep's points: (rates, bursts in seconds of the rate, modes, limits).
SWEEP = [
    ("5,20,100,500", "1,0.2", "headers,bare", "requests"),
    ("100", "1,0.2", "headers,bare", "tokens"),
]
#: The sweep's buckets one request deep (a burst of one request: 1 / rate seconds), no headers.
ONE_DEEP = "1,2,5,10,50"


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

    def take_cost(self, cost: float) -> bool:
        now = time.monotonic()
        self.level = min(self.burst, self.level + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.level >= cost:
            self.level -= cost
            return True
        return False


async def serve(
    rate: float, burst: float, latency: float, headers: bool, tokens: bool, retry_after: float = 0.0
) -> None:
    from aiohttp import web

    cost = TOKENS_PER_CALL if tokens else 1
    bucket = Bucket(rate * cost, max(1.0, rate * burst) * cost)
    stats = {"ok": 0, "limited": 0, "first": None, "last_ok": None, "burst": bucket.burst / cost}
    #: (arrival, taken) of every request, for the arrival jitter (`arrival_jitter`)
    arrivals: list[tuple[float, bool]] = []

    def rate_headers() -> dict[str, str]:
        if not headers:
            return {}
        reset = go_duration((bucket.burst - bucket.level) / bucket.rate)
        mine = {"limit": str(int(bucket.burst)), "remaining": str(int(bucket.level)), "reset": reset}
        other = {"limit": str(REQUESTS_LIMIT if tokens else TOKENS_LIMIT), "reset": "6ms"}
        other["remaining"] = str(int(other["limit"]) - (1 if tokens else TOKENS_PER_CALL))
        requests, tokens_ = (other, mine) if tokens else (mine, other)
        return {
            **{f"x-ratelimit-{k}-requests": v for k, v in requests.items()},
            **{f"x-ratelimit-{k}-tokens": v for k, v in tokens_.items()},
        }

    async def handle(request: web.BaseRequest) -> web.Response:
        await request.read()
        if request.method == "GET" and request.path == "/stats":
            return web.json_response({**stats, "arrivals": arrivals})
        if request.method != "POST":
            return web.Response(status=404)
        now = time.monotonic()
        if stats["first"] is None:
            stats["first"] = now
        taken = bucket.take_cost(cost)
        arrivals.append((now, taken))
        if not taken:
            stats["limited"] += 1
            wait = retry_after or max(1, math.ceil((cost - bucket.level) / bucket.rate))
            extra = {"retry-after": f"{wait:g}", "content-type": "application/json", **rate_headers()}
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


def arrival_jitter(arrivals: list[tuple[float, bool]]) -> tuple[float, float]:
    """Seconds the arrivals the server saw stray from an even pace (a bucket one request deep is
    paced a gap after the last request it took): each arrival's gap after the last one taken
    against the running median of nine such gaps, over the last two thirds of the run (the bracket
    found), the 90th and the 99th percentile of how far off; zeros for fewer than thirty."""
    gaps, last = [], None
    for at, taken in arrivals:
        if last is not None:
            gaps.append(at - last)
        if taken:
            last = at
    gaps = gaps[len(gaps) // 3 :]
    if len(gaps) < 20:
        return 0.0, 0.0
    off = sorted(abs(gap - statistics.median(gaps[max(0, i - 4) : i + 5])) for i, gap in enumerate(gaps))
    return off[int(0.9 * (len(off) - 1))], off[int(0.99 * (len(off) - 1))]


def run_virtual(work: Path, battery: Path, point: dict, args, run: int) -> dict:
    """One point in virtual time: the real pacer, transport and shared pacer against a simulated
    bucket (`tests/support/pacing_sim.py`), seeded by the run's number."""
    sys.path.insert(0, str(HERE.parent / "tests"))
    from support.pacing_sim import Server, simulate

    rate, burst, mode, workers = (point[k] for k in ("rate", "burst", "mode", "workers"))
    count = args.answers or max(40, round(rate * args.seconds))
    started = time.perf_counter()
    server = Server(rate=rate, depth=max(1.0, rate * burst), answers=count, headers=mode == "headers")
    server.workers, server.seed, server.latency = workers, run, args.latency_ms / 1000.0
    with contextlib.ExitStack() as stack:
        trace = stack.enter_context(Trace()) if args.trace else None
        figures = simulate(server)
    return {
        "trace": trace and decompose(trace.sends, server.arrivals, rate),
        "jitter": arrival_jitter(server.arrivals),
        **point,
        "status": 0,
        "wall": time.perf_counter() - started,
        "goodput": figures.share * rate,
        "share": figures.share,
        "limited": figures.limited,
        "calls": figures.calls,
        "limited_share": figures.limited_share,
        "lost": figures.lost,
    }


def run_one(work: Path, battery: Path, point: dict, args, run: int = 0) -> dict:
    from tabench_dsl.cli import main

    rate, burst, mode, limits, workers = (point[k] for k in ("rate", "burst", "mode", "limits", "workers"))
    count = args.answers or max(40, round(rate * args.seconds))
    answers = work / f"answers-{count}.jsonl"
    if not answers.exists():
        write_answers(answers, count)
    argv = [sys.executable, str(Path(__file__).resolve()), "--serve", "--rate", str(rate)]
    argv += ["--burst", str(burst), "--limits", limits]
    argv += ["--latency-ms", str(args.latency_ms), "--mode", mode, "--retry-after", str(args.retry_after)]
    server = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline() if server.stdout else ""
        if not line.startswith("port "):
            raise SystemExit("the mock judge did not start")
        root = f"http://127.0.0.1:{int(line.split()[1])}"
        out = work / f"results-{rate:g}-{burst:g}-{mode}-{limits}-{workers}.jsonl"
        out.unlink(missing_ok=True)  # a run of `--runs` again: not a resumed grading
        started = time.perf_counter()
        with (
            open(os.devnull, "w") as quiet,
            contextlib.redirect_stdout(quiet),
            contextlib.redirect_stderr(quiet),
            contextlib.ExitStack() as stack,
        ):
            trace = stack.enter_context(Trace()) if args.trace else None
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
                    "--workers",
                    str(workers),
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
        "trace": trace and decompose(trace.sends, stats["arrivals"], rate),
        "transit": trace and split_transit(trace, stats["arrivals"]),
        "jitter": arrival_jitter(stats["arrivals"]),
        **point,
        "status": status,
        "wall": wall,
        "goodput": goodput,
        "share": stats["ok"] / (stats["burst"] + rate * span) if span > 0 else 0.0,
        "limited": stats["limited"],
        "calls": calls,
        "limited_share": stats["limited"] / calls if calls else 0.0,
        "lost": lost,
    }


def points_of(args) -> list[dict]:
    """The points to measure: the sweep's, or those the flags name."""
    grids = SWEEP if args.sweep else [(args.rates, args.bursts, args.modes, args.limits)]
    workers = [1, 2] if args.sweep else [int(w) for w in args.workers.split(",")]
    points = []
    for count in workers:
        points += [
            {"rate": float(rate), "burst": float(burst), "mode": mode, "limits": limits, "workers": count}
            for rates, bursts, modes, limit_kinds in grids
            for limits in limit_kinds.split(",")
            for rate in rates.split(",")
            for burst in bursts.split(",")
            for mode in modes.split(",")
        ]
        if args.sweep:
            points += [
                {
                    "rate": float(rate),
                    "burst": 1 / float(rate),
                    "mode": "bare",
                    "limits": "requests",
                    "workers": count,
                }
                for rate in ONE_DEEP.split(",")
            ]
    # 5 a second 0.2 s deep, without headers, is one deep too: each point once
    return list({tuple(sorted(point.items())): point for point in points}.values())


def met(result: dict) -> bool:
    """The targets at one point: nothing lost, goodput >= 95% of the bucket, 429s <= 5% of judge
    calls or at most three (a bucket one request deep is found only by a refusal)."""
    few = result["limited_share"] <= 0.05 or result["limited"] <= 3
    return result["lost"] == 0 and result["share"] >= 0.95 and few


def worst(results: list[dict]) -> dict:
    """The run furthest from the targets: a miss before a pass, then the lowest goodput."""
    return min(results, key=lambda result: (met(result), result["share"], -result["limited"]))


def one_deep(point: dict) -> bool:
    """A bucket one request deep (a burst of one request)."""
    return point["rate"] * point["burst"] <= 1


def describe(result: dict) -> str:
    """One point's line of the table."""
    what = "tokens" if result["limits"] == "tokens" else "req"
    return (
        f"{result['workers']}w  {what:<6} {result['rate']:>5g}/s  burst {result['burst']:>3g} s  "
        f"{result['mode']:<7}  {result.get('runs', 1)}x  goodput {result['goodput']:6.1f}/s "
        f"({result['share']:6.1%} of the "
        f"bucket)  429s {result['limited']:>5} ({result['limited_share']:5.1%} of {result['calls']:>5})  "
        f"lost {result['lost']}  wall {result['wall']:5.1f} s  (load {result['load']:.2f})"
        + (
            "  arrival jitter p90 {:.1f} ms, p99 {:.1f} ms".format(*(1000 * off for off in result["jitter"]))
            if one_deep(result)
            else ""
        )
    )


def main_bench(args) -> int:
    results = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="tabench-ratelimit-") as tmp:
        work = Path(tmp)
        battery = write_battery(work / "battery")
        os.chdir(work)
        for point in points_of(args):
            if args.virtual and point["limits"] == "tokens":
                continue  # the simulated server counts requests only
            runs = []
            for run in range(args.runs):
                load = os.getloadavg()[0]
                measure = run_virtual if args.virtual else run_one
                runs.append({**measure(work, battery, point, args, run), "load": load, "runs": args.runs})
            results.append(worst(runs))
            print(describe(results[-1]), flush=True)
            for run in runs if args.trace else ():
                print(describe_trace(run["trace"]), run.get("transit") or "", sep="\n", flush=True)
    passed = [met(result) for result in results]
    print(
        f"targets (0 lost, goodput >= 95% of the bucket, 429s <= 5% of calls or at most 3), the worst "
        f"of {args.runs} run(s) a point: met at {sum(passed)} of {len(passed)} points "
        f"({'met' if all(passed) else 'NOT met'}); sweep wall {time.perf_counter() - started:.0f} s"
    )
    return 0 if all(passed) else 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=0, help="answers per point (default: --seconds)")
    parser.add_argument("--seconds", type=float, default=15.0, help="seconds of the limit's work a point")
    parser.add_argument("--rates", default="20,100", help="the limits to try, requests a second")
    parser.add_argument("--bursts", default="1", help="bucket depths to try, in seconds of the limit")
    parser.add_argument("--limits", default="requests", help="requests, tokens (tokens per minute)")
    parser.add_argument("--workers", default="1", help="grade --workers values to try")
    parser.add_argument("--sweep", action="store_true", help="the whole sweep (see the docstring)")
    parser.add_argument("--runs", type=int, default=1, help="runs a point; the worst is reported")
    parser.add_argument(
        "--virtual", action="store_true", help="in virtual time, against a simulated server (seconds)"
    )
    parser.add_argument(
        "--modes", default="headers,bare", help="headers: OpenAI rate-limit headers; bare: none"
    )
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency-ms", type=float, default=20.0, help="the mock's time per reply")
    parser.add_argument(
        "--retry-after", type=float, default=0.0, help="the mock's Retry-After (default: until a token)"
    )
    parser.add_argument(
        "--trace", action="store_true", help="one worker: where one deep loses time (pacing_trace.py)"
    )
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--rate", type=float, default=20.0, help=argparse.SUPPRESS)
    parser.add_argument("--mode", default="headers", help=argparse.SUPPRESS)
    parser.add_argument("--burst", type=float, default=1.0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        asyncio.run(
            serve(
                args.rate,
                args.burst,
                args.latency_ms / 1000.0,
                args.mode == "headers",
                args.limits == "tokens",
                args.retry_after,
            )
        )
        return
    raise SystemExit(main_bench(args))


if __name__ == "__main__":
    main()
