"""Shared pieces of the grading tests: a small battery on disk, verdict replies, one grading run
against a real judge server through the real judge, transport, cache and results code."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Mapping
from pathlib import Path

import aiohttp

from tabench_dsl.core.compiled import CompiledBattery
from tabench_dsl.core.records import Answer, Record
from tabench_dsl.grading.cache import ReplyCache
from tabench_dsl.grading.judges.factory import make_judge
from tabench_dsl.grading.runner import Grader, RunStats
from tabench_dsl.grading.transport import ExchangeGate, RetryPolicy
from tabench_dsl.language.battery import load_battery
from tabench_dsl.language.render import compile_battery
from tabench_dsl.store.results import ResultsWriter, iter_records

RUBRIC = """\
question h01 {
  prompt "Which stages make up the memory pipeline?"
  gold "Four stages: Ingest, Index, Recall, Compact"
  accept "Ingest, Index, Recall and Compact"
}
question h02 {
  prompt "Which port does the daemon listen on?"
  gold "7311"
}
question h03 {
  prompt "What colour is the sky?"
  gold "blue"
  t1 off
}
"""


def verdict(v: str, reason: str, **facets: bool) -> str:
    """A well-formed judge reply."""
    return json.dumps({"verdict": v, "reason": reason, "facets": facets})


PASS = verdict("pass", "names all four stages", missing_minor=False)
FAIL = verdict("fail", "omits the Compact stage", missing_minor=True)
#: A fail whose reason concludes pass: a contradiction.
CONTRADICTION = verdict("fail", "The answer matches the gold.")
#: A pass whose reason concludes fail: kept, with a warning.
FAIL_SHAPED_PASS = verdict("pass", "The answer is wrong about the order")
MALFORMED = "I think it is probably fine."


def write_battery(root: Path, *, t1: bool = True, rubric: str = RUBRIC) -> Path:
    folder = root / "battery"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "battery.yaml").write_text(
        "name: demo\nscorer: tabench-1.1\npolicies: [rules.policy]\nrubrics: [questions.rubric]\n"
        f"t1: {'true' if t1 else 'false'}\n",
        encoding="utf-8",
    )
    (folder / "rules.policy").write_text("S1: Judge the substance, not the wording.\n", encoding="utf-8")
    (folder / "questions.rubric").write_text(rubric, encoding="utf-8")
    return folder


def compiled_battery(root: Path, *, t1: bool = True) -> CompiledBattery:
    return compile_battery(load_battery(write_battery(root, t1=t1)))


def fast_policy(attempts: int = 3, timeout: float = 5.0) -> RetryPolicy:
    """Retries without waiting, so fault tests run in milliseconds."""

    async def no_wait(_: float) -> None:
        await asyncio.sleep(0)

    return RetryPolicy(attempts=attempts, timeout=timeout, sleep=no_wait)


async def grade(
    battery: CompiledBattery,
    url: str,
    answers: Iterable[Answer],
    out: Path,
    *,
    cache: ReplyCache | None = None,
    policy: RetryPolicy | None = None,
    env: Mapping[str, str] | None = None,
    concurrency: int = 4,
) -> tuple[list[Record], RunStats]:
    """Grade `answers` with the Chat Completions judge at `url`; return every record of `out`."""
    env = dict(env or {})
    async with aiohttp.ClientSession() as session:
        judge = make_judge(url, model="judge-m", session=session, env=env, timeout=5.0)
        with ResultsWriter(out) as writer:
            grader = Grader(
                battery,
                judge,
                writer=writer,
                cache=cache,
                policy=policy or fast_policy(),
                limiter=ExchangeGate(concurrency),
                env=env,
            )
            stats = await grader.run(answers)
    return list(iter_records(out)), stats


def user_content(request: dict) -> str:
    """The user message of a Chat Completions request body the server received."""
    return request["messages"][1]["content"]
