"""Everything a grading needs, opened in one place: `open_grader`.

`tabench grade`, `tabench calibrate` and each `--workers` process grade through it: the HTTP
session (a connection pool sized to the concurrency), the judge (`judges.factory.make_judge`), the
retry policy and the adaptive limiter, the reply cache (none for `--no-cache` or a deterministic
judge), and the `runner.Grader` that uses them; on the way out the cache is committed and closed,
then the judge and the session.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Callable, Mapping

import msgspec

from ..core.compiled import CompiledBattery
from ..core.records import Record
from ..core.results import RecordSink
from .cache import open_reply_cache
from .judges.base import DEFAULT_TIMEOUT
from .runner import MAX_ANSWER_BYTES, Grader
from .transport import DEFAULT_RATE_LIMIT_WAIT


class GradingOptions(msgspec.Struct, frozen=True):
    """How to grade, as the command line gives it: the judge (`--judge`, `--model`), the transport
    (`--timeout`, `--retries`, `--concurrency`, `--rpm`, `--tpm`, and `--rate-limit-wait`: the
    minutes one call may keep being rate limited), the reply cache file (None for `--no-cache`)
    and the largest answer sent to the judge (`--max-answer-bytes`)."""

    judge: str | None = None
    model: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    retries: int = 5
    concurrency: int = 8
    rpm: float | None = None
    tpm: float | None = None
    cache: str | None = None
    max_answer_bytes: int = MAX_ANSWER_BYTES
    rate_limit_wait: float = DEFAULT_RATE_LIMIT_WAIT / 60.0


@contextlib.asynccontextmanager
async def open_grader(
    battery: CompiledBattery,
    options: GradingOptions,
    *,
    writer: RecordSink | None = None,
    on_record: Callable[[Record], None] | None = None,
    on_skip: Callable[[], None] | None = None,
    on_notice: Callable[[str], None] | None = None,
    env: Mapping[str, str] | None = None,
) -> AsyncIterator[Grader]:
    """A `Grader` for `battery` with the judge, transport and cache `options` name, open for the
    `async with` block. `on_notice` gets the judge's notice (`judge.notice`: why the builtin judge
    grades), when it has one; `env` (default: the process environment) gives the keys and base
    URLs. Raises `UsageError` / `JudgeError` as `make_judge` and the cache do."""
    import aiohttp

    from .judges.factory import make_judge
    from .transport import AdaptiveLimiter, RateLimit, RetryPolicy

    env = os.environ if env is None else env
    policy = RetryPolicy(
        attempts=options.retries + 1, timeout=options.timeout, rate_limit_wait=options.rate_limit_wait * 60.0
    )
    limiter = AdaptiveLimiter(options.concurrency, rate=RateLimit(options.rpm, options.tpm))
    connector = aiohttp.TCPConnector(limit=options.concurrency, limit_per_host=options.concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:
        judge = make_judge(
            options.judge,
            model=options.model,
            manifest_judge=battery.judge,
            settings=battery.settings,
            session=session,
            env=env,
            timeout=options.timeout,
        )
        try:
            if judge.notice and on_notice is not None:
                on_notice(judge.notice)
            cache = open_reply_cache(options.cache, judge.info)
            try:
                yield Grader(
                    battery,
                    judge,
                    writer=writer,
                    cache=cache,
                    policy=policy,
                    limiter=limiter,
                    on_record=on_record,
                    on_skip=on_skip,
                    env=env,
                    max_answer_bytes=options.max_answer_bytes,
                )
            finally:
                if cache is not None:
                    cache.close()
        finally:
            await judge.aclose()
