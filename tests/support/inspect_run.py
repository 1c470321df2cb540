"""A real Inspect AI run for the integration tests, offline.

The system under test is Inspect's `openai/...` provider pointed at a scripted chat server on
127.0.0.1 (`tests/support/judge_server.py`, through OPENAI_BASE_URL with a dummy key and
`responses_api=False`): Inspect's `mockllm/model` with its default output counts tokens with
tiktoken, which downloads its vocabulary and fails without a network. The servers run on an
event loop of their own in a thread, since `inspect_ai.eval` runs its own loop and blocks the
calling thread until it is done.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator
from typing import Any

from support.judge_server import JudgeServer, Responder, start_judge_server

#: The model under test, as Inspect names it in the log.
SUT_MODEL = "openai/sut-model"


@contextlib.contextmanager
def servers_in_thread(*responders: Responder, **options: Any) -> Iterator[list[JudgeServer]]:
    """Scripted servers (one per responder) on a loop in a thread of their own, closed on exit."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="test-servers", daemon=True)
    thread.start()
    servers: list[JudgeServer] = []
    try:
        for responder in responders:
            future = asyncio.run_coroutine_threadsafe(start_judge_server(responder, **options), loop)
            servers.append(future.result(timeout=30))
        yield servers
    finally:
        for server in servers:
            asyncio.run_coroutine_threadsafe(server.close(), loop).result(timeout=30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=30)
        loop.close()


def run_task(task: Any, *, sut_url: str, log_dir: str, epochs: int = 1, **options: Any) -> Any:
    """Run `task` with Inspect against the scripted model at `sut_url`; return its log. The caller
    sets OPENAI_BASE_URL / OPENAI_API_KEY (Inspect's provider reads them)."""
    from inspect_ai import eval as inspect_eval

    logs = inspect_eval(
        task,
        model=SUT_MODEL,
        model_args={"responses_api": False},
        model_base_url=sut_url,
        epochs=epochs,
        log_dir=log_dir,
        display="none",
        max_retries=0,
        **options,
    )
    assert len(logs) == 1 and logs[0].status == "success", logs[0].error
    return logs[0]
