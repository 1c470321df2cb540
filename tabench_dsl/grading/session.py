"""Everything a grading needs, opened in one place: `open_grader`.

`tabench grade`, `tabench calibrate` and each `--workers` process grade through it: the HTTP
session (a connection pool sized to the concurrency), the judge (`judges.factory.make_judge`), or
the judge panel (`--judge` given more than once, else the manifest's `judge: {panel: [...]}`), the
retry policy and the adaptive limiter, the reply cache (none for `--no-cache` or a deterministic
judge), and the `runner.Grader` that uses them; on the way out the cache is committed and closed,
then the judge and the session.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING

import msgspec

from ..core.compiled import CompiledBattery
from ..core.errors import UsageError
from ..core.nodes import JudgeDefaults
from ..core.price import Price
from ..core.records import Record
from ..store.results import RecordSink
from .cache import open_reply_cache
from .judges.base import DEFAULT_TIMEOUT, Judge
from .judges.decoding import DecodingFlags
from .judges.request_shape import RequestOptions
from .panel import Panel
from .route import MAX_ANSWER_BYTES
from .runner import Grader
from .transport import DEFAULT_RATE_LIMIT_WAIT

if TYPE_CHECKING:
    import aiohttp

    from .pacing import Pacing


class GradingOptions(msgspec.Struct, frozen=True):
    """How to grade, as the command line gives it: the judge (`--judge`, `--model`), the transport
    (`--timeout`, `--retries`, `--concurrency`, `--rpm`, `--tpm`, and `--rate-limit-wait`: the
    minutes one call may keep being rate limited), the reply cache file (None for `--no-cache`), the
    largest answer sent to the judge (`--max-answer-bytes`) and the judges' price (`--price`, over
    the manifest's).

    `panel` holds the judge names of `--judge` given more than once (then `judge` is None) and
    `panel_rule` is `--panel-rule` (None: the manifest's `judge.rule`, else majority); `t1_audit`
    is the share of T1 passes also sent to the judge (`--t1-audit`)."""

    judge: str | None = None
    model: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    retries: int = 5
    concurrency: int = 8
    rpm: float | None = None
    tpm: float | None = None
    cache: str | None = None
    max_answer_bytes: int = MAX_ANSWER_BYTES
    price: Price | None = None
    panel: tuple[str, ...] = ()
    panel_rule: str | None = None
    t1_audit: float = 0.0
    rate_limit_wait: float = DEFAULT_RATE_LIMIT_WAIT / 60.0
    #: What the command line adds to every judge request (`--structured`, `--judge-param`,
    #: `--judge-header`).
    request: RequestOptions = RequestOptions()
    #: `--temperature`, `--max-tokens`, `--reasoning-effort`, `--thinking-budget` (over the manifest).
    decoding: DecodingFlags = DecodingFlags()
    #: How many times the judge is asked about each T2 answer (`--repeat`, `repeats`).
    repeat: int = 1
    #: `--max-cost`: the cap on the priced spend in USD (None: none), and what the results file
    #: had already spent (`spend_cap`).
    max_cost: float | None = None
    spent_before: float = 0.0
    #: `--replica URL`s: more endpoints of the one judge (`replicas.ReplicaJudge`).
    replicas: tuple[str, ...] = ()


@contextlib.asynccontextmanager
async def open_grader(
    battery: CompiledBattery,
    options: GradingOptions,
    *,
    writer: RecordSink | None = None,
    on_record: Callable[[Record], None] | None = None,
    on_notice: Callable[[str], None] | None = None,
    env: Mapping[str, str] | None = None,
    grader: Callable[..., Grader] = Grader,
    pacer: Pacing | None = None,
) -> AsyncIterator[Grader]:
    """A `Grader` for `battery` with the judge, transport and cache `options` name, open for the
    `async with` block. `on_notice` gets each line a judge says during the run (`Judge.notice`:
    a refused parameter dropped, a structured-output fallback), once; `env` (default: the process
    environment) gives the keys and base URLs. `grader` makes the grader (a `batch.BatchGrader`
    for `--batch`) from the battery, the judge and `Grader`'s keyword arguments; `pacer` paces its
    requests (default: a `Pacer` of its own; a `--workers` worker's is its parent's). Raises
    `UsageError` / `JudgeError` as `make_judge` and the cache do."""
    from .http_session import FirstUseSession
    from .transport import ExchangeGate, RateLimit, RetryPolicy

    env = os.environ if env is None else env
    policy = RetryPolicy(
        attempts=options.retries + 1, timeout=options.timeout, rate_limit_wait=options.rate_limit_wait * 60.0
    )
    limiter = ExchangeGate(options.concurrency, rate=RateLimit(options.rpm, options.tpm), pacer=pacer)
    # Made at the first request: a grading with nothing to send (a resume with every answer done)
    # never imports aiohttp nor builds its TLS context.
    async with FirstUseSession(options.concurrency) as lazy:
        session = lazy.as_session()
        judge = await open_judge(battery, options, session=session, env=env, notice=on_notice)
        try:
            cache = open_reply_cache(options.cache, judge.info)
            try:
                yield grader(
                    battery,
                    judge,
                    writer=writer,
                    cache=cache,
                    policy=policy,
                    limiter=limiter,
                    on_record=on_record,
                    env=env,
                    max_answer_bytes=options.max_answer_bytes,
                    t1_audit=options.t1_audit,
                    # Only when asked for: a `grader` factory of its own need not know of repeats.
                    **({"repeat": options.repeat} if options.repeat > 1 else {}),
                    **({"spend_cap": spend_cap(options)} if options.max_cost is not None else {}),
                )
            finally:
                if cache is not None:
                    cache.close()
        finally:
            await judge.aclose()


async def open_judge(
    battery: CompiledBattery,
    options: GradingOptions,
    *,
    session: aiohttp.ClientSession,
    env: Mapping[str, str],
    notice: Callable[[str], None] | None = None,
) -> Judge | Panel:
    """The one judge `options` and the manifest choose, or their panel: `--judge` given more than
    once, else (no `--judge` at all) the manifest's `judge: {panel: [...]}`. A panel judge from the
    manifest is chosen as the manifest's `judge.backend` is (a URL or a replay file is refused);
    what it leaves out comes from the `judge:` mapping around it, and `--model` fills only a model
    neither names. Every judge built tells `notice` what it changes in its requests during the run.
    Members built before a failure are closed."""
    from .judges.factory import make_judge
    from .panel import RULES

    manifest = battery.judge

    def build(name: str | None, model: str | None, defaults: JudgeDefaults) -> Judge:
        return make_judge(
            name,
            model=model,
            manifest_judge=defaults,
            settings=battery.settings,
            session=session,
            env=env,
            timeout=options.timeout,
            price=options.price,
            request=options.request,
            decoding=options.decoding,
            notice=notice,
        )

    chosen = chosen_judges(options, manifest)
    if len(chosen) == 1:  # a panel has two judges at least (the manifest's and --judge's alike)
        if options.replicas:
            return await open_replicas(build, chosen[0], options.replicas)
        return build(*chosen[0])
    if options.replicas:
        raise UsageError("--replica gives one judge more endpoints; a judge panel takes none (drop it)")
    members: list[Judge] = []
    try:
        for name, model, defaults in chosen:
            members.append(build(name, model, defaults))
        rule = options.panel_rule or manifest.rule or "majority"
        if rule not in RULES:
            raise UsageError(f"unknown panel rule {rule!r}; use one of: {', '.join(RULES)}")
        return Panel(members, rule)  # type: ignore[arg-type]  # checked just above
    except BaseException:
        for built in members:
            await built.aclose()
        raise


async def open_replicas(
    build: Callable[[str | None, str | None, JudgeDefaults], Judge],
    chosen: tuple[str | None, str | None, JudgeDefaults],
    urls: tuple[str, ...],
) -> Judge:
    """The chosen judge and one judge per `--replica` URL (same model and parameters), as one
    `replicas.ReplicaJudge`. Judges built before a failure are closed."""
    from .replicas import ReplicaJudge

    name, model, defaults = chosen
    for url in urls:
        if not url.startswith(("http://", "https://")):
            raise UsageError(f"--replica {url!r}: a replica is the URL of a Chat Completions server")
    judges = [build(name, model, defaults)]
    try:
        model = model or judges[0].params.model
        judges.extend(build(url, model, defaults) for url in urls)
        names = [judge.info.endpoint or judge.info.describe() for judge in judges]
        if len(set(names)) != len(names):
            raise UsageError("--replica: the same endpoint is named twice")
        return ReplicaJudge(judges, names)
    except BaseException:
        for judge in judges:
            await judge.aclose()
        raise


def chosen_judges(
    options: GradingOptions, manifest: JudgeDefaults
) -> list[tuple[str | None, str | None, JudgeDefaults]]:
    """The judges a grading asks, each as `make_judge`'s (name, model, manifest defaults): one judge,
    or a panel: `--judge` given more than once, else (no `--judge` at all) the manifest's `judge:
    {panel: [...]}`, each member completed from the `judge:` mapping around it, `--model` filling
    only a model neither names. `open_judge` builds them and the dry run names them."""
    if options.panel:
        return [(name, options.model, manifest) for name in options.panel]
    if options.judge is None and manifest.panel:
        return [
            (
                None,
                None,
                JudgeDefaults(
                    model=one.model or options.model or manifest.model,
                    temperature=one.temperature if one.temperature is not None else manifest.temperature,
                    max_tokens=one.max_tokens if one.max_tokens is not None else manifest.max_tokens,
                    backend=one.backend,
                    # The battery's price is for the battery's judge: not for a --model of the user's.
                    price=(one.price or manifest.price) if one.model or not options.model else None,
                    structured=manifest.structured,
                    reasoning=manifest.reasoning,
                ),
            )
            for one in manifest.panel
        ]
    return [(options.judge, options.model, manifest)]


def spend_cap(options: GradingOptions):
    """The `--max-cost` cap of `options` (`spend_cap.SpendCap`)."""
    from .spend_cap import SpendCap

    assert options.max_cost is not None
    return SpendCap(options.max_cost, spent_before=options.spent_before)
