"""A fast stand-in judge for the runtime bench: Chat Completions on 127.0.0.1, fixed latency.

Every POST to `/v1/chat/completions` (or `/chat/completions`) waits `--latency-ms` (default 20) and
answers one precomputed chat-completion body whose content is a valid verdict object. The handler
is a raw aiohttp low-level server handler (on uvloop when installed) that reads the request body and
does not decode it, so on a 2-core machine the judge takes as little CPU as it can from the process
being measured. Its own CPU seconds are printed on stdout (`cpu S`) when it stops.

    python bench/mock_judge.py [--port 0] [--latency-ms 20]

prints `port N` on stdout once it listens, then serves until SIGTERM or SIGINT.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal

from aiohttp import web

VERDICT = {
    "verdict": "fail",
    "reason": "names three of the four stages",
    "facets": {"extra_correct_info": False, "missing_minor": True, "erroneous_assertion": False},
}

REPLY = json.dumps(
    {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": 0,
        "model": "mock-judge",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": json.dumps(VERDICT)},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 900, "completion_tokens": 40, "total_tokens": 940},
    }
).encode()


PATHS = frozenset({"/v1/chat/completions", "/chat/completions"})
HEADERS = {"Content-Type": "application/json"}


def make_handler(latency: float):
    """The mock judge: aiohttp's low-level server handler (no router, no middlewares, no access
    log), one precomputed reply."""

    async def chat(request: web.BaseRequest) -> web.Response:
        await request.read()
        if request.method != "POST" or request.path not in PATHS:
            return web.Response(status=404)
        await asyncio.sleep(latency)
        return web.Response(body=REPLY, headers=HEADERS)

    return chat


async def serve(port: int, latency: float) -> None:
    server = web.Server(make_handler(latency), access_log=None)
    runner = web.ServerRunner(server, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", port, backlog=1024)
    await site.start()
    bound = site._server.sockets[0].getsockname()[1]  # port 0: the port the kernel chose
    print(f"port {bound}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await runner.cleanup()
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(f"cpu {usage.ru_utime + usage.ru_stime:.3f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency-ms", type=float, default=20.0)
    args = parser.parse_args()
    try:  # the judge must stay cheap: it shares the CPU with the process being measured
        import uvloop

        loop_factory = uvloop.new_event_loop
    except ImportError:
        loop_factory = None
    with asyncio.Runner(loop_factory=loop_factory) as runner:
        runner.run(serve(args.port, args.latency_ms / 1000.0))


if __name__ == "__main__":
    main()
