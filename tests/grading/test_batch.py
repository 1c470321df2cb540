"""`tabench grade --batch` against batch services that speak OpenAI's Batch API and Anthropic's Message
Batches (`batch_server`): rounds with the live grading's re-asks and stern retries, the records live
grading writes, expired and failed batches, errored lines, the ledger, kill -9 then --resume, and
`tabench batches`.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sys
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from support.batch_server import ERRORED, BatchServer, start_batch_server
from support.helpers_grading import CONTRADICTION, FAIL, MALFORMED, PASS, write_battery

from tabench_dsl.cli import main
from tabench_dsl.grading.batch import Ended, Submitted, read_ledger
from tabench_dsl.store.results import iter_records

KEY = "sk-test-batch-0123456789abcdef0123"


@pytest.fixture
async def batch_server() -> AsyncIterator:
    servers: list[BatchServer] = []

    async def start(responder, **options) -> BatchServer:
        server = await start_batch_server(responder, **options)
        servers.append(server)
        return server

    yield start
    for server in servers:
        await server.close()


@pytest.fixture
def work(work: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TABENCH_BATCH_POLL", "0.01")
    write_battery(work, t1=True)
    return work


def write_answers(folder: Path, answers: list[tuple[str, str, str]]) -> Path:
    path = folder / "answers.jsonl"
    path.write_text(
        "".join(
            json.dumps(dict(zip(("system", "question", "answer"), a, strict=True))) + "\n" for a in answers
        ),
        encoding="utf-8",
    )
    return path


def user_text(body: dict) -> str:
    return " ".join(m["content"] for m in body["messages"] if m["role"] == "user")


def scripted(plans: dict[str, list[str]]):
    """A responder: the answer named `ans-X` in a request gets plans[X] in order of its asks (the last
    repeats)."""
    asked: Counter[str] = Counter()

    def respond(body: dict):
        name = re.search(r"ans-(\w+)", user_text(body))[1]
        replies = plans[name]
        reply = replies[min(asked[name], len(replies) - 1)]
        asked[name] += 1
        return reply

    respond.asked = asked
    return respond


async def run(argv: list[str]) -> int:
    return await asyncio.to_thread(main, argv)


def grade_argv(work: Path, judge: str, *extra: str) -> list[str]:
    return [
        "grade",
        str(work / "battery"),
        "--answers",
        str(work / "answers.jsonl"),
        "--judge",
        judge,
        "--model",
        "m",
        "--batch",
        *extra,
    ]


MIXED = [
    ("a", "h02", "the port is 7311 ans-t1"),  # T1 settles it: never asked
    ("a", "h03", "ans-p"),  # pass at once
    ("b", "h03", "ans-m"),  # malformed, then pass: round 2 holds its format re-ask
    ("c", "h03", "ans-c"),  # contradiction, then a consistent fail: round 2 holds its stern retry
    ("d", "h03", "ans-mm"),  # malformed twice: adjudicate
    ("e", "h03", "ans-cc"),  # contradiction twice: adjudicate
]
PLANS = {
    "t1": [PASS],
    "p": [PASS],
    "m": [MALFORMED, PASS],
    "c": [CONTRADICTION, FAIL],
    "mm": [MALFORMED],
    "cc": [CONTRADICTION],
}


def by_pair(results: Path) -> dict:
    return {(r.system, r.question): r for r in iter_records(results)}


def check_mixed(records: dict) -> None:
    assert records[("a", "h02")].tier == "t1" and not records[("a", "h02")].attempts
    assert [a.kind for a in records[("a", "h03")].attempts] == ["first"]
    assert records[("a", "h03")].verdict == "pass"
    assert [a.kind for a in records[("b", "h03")].attempts] == ["first", "format"]
    assert records[("b", "h03")].verdict == "pass"
    assert [a.kind for a in records[("c", "h03")].attempts] == ["first", "stern"]
    assert records[("c", "h03")].verdict == "fail"
    assert (records[("d", "h03")].verdict, records[("d", "h03")].cause) == ("adjudicate", "malformed")
    assert (records[("e", "h03")].verdict, records[("e", "h03")].cause) == ("adjudicate", "contradiction")


async def test_openai_rounds_give_the_records_live_grading_gives(
    work: Path, batch_server, judge_server, capsys
) -> None:
    write_answers(work, MIXED)
    server = await batch_server(scripted(PLANS))
    os.environ["OPENAI_API_KEY"] = KEY
    try:
        assert await run([*grade_argv(work, server.url), "--no-cache"]) == 0
    finally:
        del os.environ["OPENAI_API_KEY"]
    err = capsys.readouterr().err
    batched = by_pair(work / "results.jsonl")
    check_mixed(batched)
    # Round 1: every first ask T1 did not settle; round 2: the re-ask, the stern retries; round 3:
    # the second re-ask of the stern retry that failed again is not asked (one stern retry only).
    assert [len(b) for b in server.submitted] == [5, 4]
    assert len(set(server.requests_submitted)) == len(server.requests_submitted)
    assert all(re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", name) for name in server.requests_submitted)
    assert server.uploads[0]["filename"] and server.uploads[0]["content_type"] == "application/jsonl"
    assert all(h.get("Authorization") == f"Bearer {KEY}" for h in server.headers_seen)
    assert "batch: 9 request(s) submitted in 2 batch(es), 2 round(s)" in err
    # The same answers graded live against a judge giving the same replies: the same records.
    live = await judge_server(scripted(PLANS))
    live_argv = [*grade_argv(work, live.url, "--no-cache", "--out", "live.jsonl")]
    live_argv.remove("--batch")
    assert await run(live_argv) == 0
    lived = by_pair(work / "live.jsonl")
    for pair, record in lived.items():
        other = batched[pair]
        assert (other.verdict, other.reason, other.cause, other.facets, other.tier) == (
            record.verdict,
            record.reason,
            record.cause,
            record.facets,
            record.tier,
        )
        assert [(a.kind, a.raw, a.tokens, a.request_sha256) for a in other.attempts] == [
            (a.kind, a.raw, a.tokens, a.request_sha256) for a in record.attempts
        ]
    # The ledger: both batches, each with its requests and how it ended; no key anywhere.
    entries = list(read_ledger(work / "results.batches.jsonl"))
    submitted = [e for e in entries if isinstance(e, Submitted)]
    assert [e.round for e in submitted] == [1, 2]
    assert {(s, q, k) for e in submitted for _, s, q, k in e.requests} >= {
        ("b", "h03", "format"),
        ("c", "h03", "stern"),
    }
    assert [e.state for e in entries if isinstance(e, Ended)] == ["completed", "completed"]
    for file in ("results.jsonl", "results.batches.jsonl"):
        assert KEY not in (work / file).read_text()


async def test_anthropic_message_batches(work: Path, batch_server, monkeypatch) -> None:
    write_answers(work, MIXED)
    server = await batch_server(scripted(PLANS), api_key=KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.anthropic_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    argv = [
        "grade",
        str(work / "battery"),
        "--answers",
        str(work / "answers.jsonl"),
        "--judge",
        "anthropic:claude-test",
        "--batch",
        "--no-cache",
    ]
    assert await run(argv) == 0
    check_mixed(by_pair(work / "results.jsonl"))
    assert [len(b) for b in server.submitted] == [5, 4]
    assert all(
        h.get("x-api-key") == KEY and h.get("anthropic-version") == "2023-06-01" for h in server.headers_seen
    )
    entries = list(read_ledger(work / "results.batches.jsonl"))
    assert {e.service for e in entries if isinstance(e, Submitted)} == {"anthropic"}


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
async def test_expired_batch_sends_its_unrun_answers_to_the_next_round(
    work: Path, batch_server, monkeypatch, protocol: str
) -> None:
    answers = [(f"s{i}", "h03", f"ans-p{i}") for i in range(6)]
    write_answers(work, answers)
    server = await batch_server(scripted({f"p{i}": [PASS] for i in range(6)}), fates=["expire", "complete"])
    judge = server.url
    if protocol == "anthropic":
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.anthropic_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        judge = "anthropic:claude-test"
    assert await run([*grade_argv(work, judge), "--no-cache"]) == 0
    records = by_pair(work / "results.jsonl")
    assert len(records) == 6 and all(r.verdict == "pass" for r in records.values())
    assert [len(b) for b in server.submitted] == [6, 3]
    assert set(server.submitted[1]) < set(server.submitted[0])  # only the unrun ones, once more
    ended = [e.state for e in read_ledger(work / "results.batches.jsonl") if isinstance(e, Ended)]
    assert ended[0] == ("ended" if protocol == "anthropic" else "expired")


async def test_errored_lines_are_retried_in_the_next_round_up_to_retries(work: Path, batch_server) -> None:
    write_answers(work, [("a", "h03", "ans-x"), ("b", "h03", "ans-y"), ("c", "h03", "ans-z")])
    server = await batch_server(scripted({"x": [ERRORED, PASS], "y": [PASS], "z": [ERRORED]}))
    assert await run([*grade_argv(work, server.url), "--no-cache", "--retries", "2"]) == 1
    records = by_pair(work / "results.jsonl")
    assert records[("a", "h03")].verdict == "pass"
    assert records[("a", "h03")].attempts[0].transport_retries == 1
    assert records[("b", "h03")].verdict == "pass"
    z = records[("c", "h03")]
    assert (z.verdict, z.cause) == ("error", "transport")
    assert "server_error" in z.reason and z.attempts[0].transport_retries == 2
    assert [len(b) for b in server.submitted] == [3, 2, 1]


async def test_validation_failure_resubmits_in_the_next_round(work: Path, batch_server, capsys) -> None:
    write_answers(work, [("a", "h03", "ans-x"), ("b", "h03", "ans-y")])
    server = await batch_server(scripted({"x": [PASS], "y": [FAIL]}), fates=["fail", "complete"])
    assert await run([*grade_argv(work, server.url), "--no-cache"]) == 0
    records = by_pair(work / "results.jsonl")
    assert (records[("a", "h03")].verdict, records[("b", "h03")].verdict) == ("pass", "fail")
    assert [len(b) for b in server.submitted] == [2, 2]
    assert "batch_1: failed" in capsys.readouterr().err
    # With no retries left, the validation failure is the answers' transport error, saying why.
    (work / "results.jsonl").unlink()
    (work / "results.batches.jsonl").unlink()  # else its completed batch would answer them
    server.fates, server.submitted = ["fail"], []
    assert await run([*grade_argv(work, server.url), "--no-cache", "--retries", "0"]) == 1
    reasons = {r.reason for r in iter_records(work / "results.jsonl")}
    (reason,) = reasons
    assert "ended failed" in reason and "the input file is not valid" in reason


async def test_replies_go_to_the_cache_and_a_rerun_asks_nothing(work: Path, batch_server) -> None:
    write_answers(work, MIXED)
    server = await batch_server(scripted(PLANS))
    assert await run(grade_argv(work, server.url)) == 0
    submitted = len(server.requests_submitted)
    assert await run([*grade_argv(work, server.url), "--out", "again.jsonl"]) == 0
    assert len(server.requests_submitted) == submitted  # every reply came from the reply cache
    again = by_pair(work / "again.jsonl")
    check_mixed(again)
    assert all(a.cache_hit for r in again.values() for a in r.attempts)


async def test_batch_with_builtin_or_replay_judge_or_workers_is_a_usage_error(work: Path, capsys) -> None:
    write_answers(work, [("a", "h03", "blue")])
    assert (
        await run(
            ["grade", str(work / "battery"), "--answers", "answers.jsonl", "--judge", "builtin", "--batch"]
        )
        == 2
    )
    assert "has no batch service" in capsys.readouterr().err
    assert not (work / "results.jsonl").exists()
    argv = [
        "grade",
        str(work / "battery"),
        "--answers",
        "answers.jsonl",
        "--judge",
        "builtin",
        "--batch",
        "--workers",
        "2",
    ]
    assert await run(argv) == 2
    assert "--batch grades in one process" in capsys.readouterr().err
    argv = ["grade", str(work / "battery"), "--answers", "answers.jsonl", "--batch-live-fallback"]
    assert await run(argv) == 2


async def test_calibrate_batch(work: Path, batch_server) -> None:
    (work / "battery" / "questions.rubric").write_text(
        'question h03 {\n  prompt "What colour is the sky?"\n  gold "blue"\n  t1 off\n'
        '  exemplar correct "ans-p azure" why "a shade of blue"\n}\n',
        encoding="utf-8",
    )
    server = await batch_server(scripted({"p": [PASS]}))
    argv = [
        "calibrate",
        str(work / "battery"),
        "--judge",
        server.url,
        "--model",
        "m",
        "--batch",
        "--no-cache",
        "--out",
        "cal.jsonl",
    ]
    assert await run(argv) == 0
    assert [len(b) for b in server.submitted] == [1]
    assert [r.verdict for r in iter_records(work / "cal.jsonl")] == ["pass"]
    assert (work / "cal.batches.jsonl").exists()


async def test_kill_during_polling_then_resume_submits_nothing_twice(work: Path, batch_server) -> None:
    count = 30
    write_answers(work, [(f"s{i:02d}", "h03", f"ans-n{i}") for i in range(count)])
    plans = {f"n{i}": [MALFORMED, PASS] if i % 3 == 0 else [PASS] for i in range(count)}
    server = await batch_server(scripted(plans), fates=["hold", "complete"])
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "TABENCH_CACHE")}
    env["TABENCH_BATCH_POLL"] = "0.02"
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tabench_dsl",
        *grade_argv(work, server.url),
        "--no-cache",
        cwd=work,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    ledger = work / "results.batches.jsonl"
    for _ in range(1000):
        if server.polls >= 3 or proc.returncode is not None:
            break
        await asyncio.sleep(0.02)
    assert proc.returncode is None, await proc.communicate()
    proc.send_signal(signal.SIGKILL)
    await proc.wait()
    assert ledger.exists() and [len(b) for b in server.submitted] == [count]
    server.release()
    assert await run([*grade_argv(work, server.url), "--no-cache", "--resume"]) == 0
    records = list(iter_records(work / "results.jsonl"))
    assert sorted(r.system for r in records) == [f"s{i:02d}" for i in range(count)]  # none lost, none twice
    assert all(r.verdict == "pass" for r in records)
    # The resumed run waited for the batch the killed one submitted, then sent only the re-asks.
    assert [len(b) for b in server.submitted] == [count, count // 3]
    assert len(set(server.requests_submitted)) == len(server.requests_submitted)


async def test_batches_command_lists_and_cancels(work: Path, batch_server, capsys) -> None:
    write_answers(work, [("a", "h03", "ans-x")])
    server = await batch_server(scripted({"x": [PASS]}), fates=["hold"])
    env_poll = os.environ["TABENCH_BATCH_POLL"]
    task = asyncio.create_task(run([*grade_argv(work, server.url), "--no-cache"]))
    for _ in range(500):
        if server.polls >= 2:
            break
        await asyncio.sleep(0.01)
    assert await run(["batches", "results.jsonl", "--judge", server.url]) == 0
    out = capsys.readouterr().out
    assert "batch_1" in out and "in_progress" in out
    assert await run(["batches", "results.jsonl", "--cancel", "--judge", server.url]) == 0
    assert "cancel" in capsys.readouterr().out
    # The grading sees its batch cancelled: its answer goes to the next round, which completes.
    server.fates = ["hold", "complete"]
    assert await asyncio.wait_for(task, 30) == 0
    assert env_poll
    assert [r.verdict for r in iter_records(work / "results.jsonl")] == ["pass"]


async def test_live_fallback_asks_a_failed_batch_s_answers_live(work: Path, batch_server) -> None:
    write_answers(work, [("a", "h03", "ans-x"), ("b", "h03", "ans-y")])
    server = await batch_server(scripted({"x": [PASS], "y": [FAIL]}), fates=["expire"])
    assert await run([*grade_argv(work, server.url), "--no-cache", "--batch-live-fallback"]) == 0
    records = by_pair(work / "results.jsonl")
    assert (records[("a", "h03")].verdict, records[("b", "h03")].verdict) == ("pass", "fail")
    assert [len(b) for b in server.submitted] == [2] and server.live_calls == 1


async def test_a_round_is_split_under_the_request_limit(work: Path, batch_server, monkeypatch) -> None:
    from tabench_dsl.grading.batch.openai_batches import OpenAIBatches

    monkeypatch.setattr(OpenAIBatches, "max_requests", 2)
    write_answers(work, [(f"s{i}", "h03", f"ans-p{i}") for i in range(5)])
    server = await batch_server(scripted({f"p{i}": [PASS] for i in range(5)}))
    assert await run([*grade_argv(work, server.url), "--no-cache"]) == 0
    assert [len(b) for b in server.submitted] == [2, 2, 1]
    assert len(by_pair(work / "results.jsonl")) == 5


async def test_keys_stay_out_of_records_ledger_and_messages(
    work: Path, batch_server, monkeypatch, capsys
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    write_answers(work, [("a", "h03", "ans-x"), ("b", "h03", "ans-y")])
    echo = json.dumps({"verdict": "pass", "reason": f"the key is {KEY}", "facets": {}})
    refusal = (400, {"type": "invalid_request_error", "message": f"bad request with {KEY}"})
    server = await batch_server(scripted({"x": [echo], "y": [refusal]}), api_key=KEY)
    assert await run([*grade_argv(work, server.url), "--no-cache"]) == 1
    records = by_pair(work / "results.jsonl")
    assert records[("a", "h03")].verdict == "pass" and records[("b", "h03")].verdict == "error"
    assert "HTTP 400" in records[("b", "h03")].reason
    captured = capsys.readouterr()
    for text in (
        (work / "results.jsonl").read_text(),
        (work / "results.batches.jsonl").read_text(),
        captured.out,
        captured.err,
    ):
        assert KEY not in text


async def test_ctrl_c_while_polling_leaves_the_batches_and_says_how_to_go_on(
    work: Path, batch_server
) -> None:
    write_answers(work, [("a", "h03", "ans-x")])
    server = await batch_server(scripted({"x": [PASS]}), fates=["hold"])
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "TABENCH_CACHE")}
    env["TABENCH_BATCH_POLL"] = "0.02"
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tabench_dsl",
        *grade_argv(work, server.url),
        "--no-cache",
        cwd=work,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    for _ in range(1000):
        if server.polls >= 2 or proc.returncode is not None:
            break
        await asyncio.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    _, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 130
    assert b"keep running at the provider" in err and b"--resume" in err and b"tabench batches" in err
    assert server.batches["batch_1"].state == "in_progress"  # not cancelled
    server.release()
    assert await run([*grade_argv(work, server.url), "--no-cache", "--resume"]) == 0
    assert [len(b) for b in server.submitted] == [1]


async def test_a_ledger_batch_the_provider_no_longer_has_is_asked_again(work: Path, batch_server) -> None:
    write_answers(work, [("a", "h03", "ans-x")])
    server = await batch_server(scripted({"x": [PASS]}))
    assert await run([*grade_argv(work, server.url), "--no-cache", "--out", "first.jsonl"]) == 0
    # The same requests graded into another results file whose ledger names a batch since deleted.
    (work / "again.batches.jsonl").write_bytes((work / "first.batches.jsonl").read_bytes())
    server.batches.clear()
    assert await run([*grade_argv(work, server.url), "--no-cache", "--out", "again.jsonl"]) == 0
    assert [r.verdict for r in iter_records(work / "again.jsonl")] == ["pass"]
    assert [len(b) for b in server.submitted] == [1, 1]


def test_polling_backs_off_from_seconds_to_a_minute_and_reads_the_env() -> None:
    import itertools

    from tabench_dsl.core.errors import UsageError
    from tabench_dsl.grading.batch import PollPlan

    delays = list(itertools.islice(PollPlan().delays(), 12))
    assert delays[0] == 5.0 and delays == sorted(delays) and delays[-1] == 60.0
    assert PollPlan.from_env({"TABENCH_BATCH_POLL": "0.5,2"}) == PollPlan(start=0.5, cap=2.0)
    assert PollPlan.from_env({"TABENCH_BATCH_POLL": "0.1"}) == PollPlan(start=0.1, cap=0.1)
    with pytest.raises(UsageError, match="TABENCH_BATCH_POLL"):
        PollPlan.from_env({"TABENCH_BATCH_POLL": "soon"})


def test_the_progress_bar_shows_the_batches() -> None:
    import io

    from tabench_dsl.cli.batch_log import BatchLog
    from tabench_dsl.cli.progress import Progress
    from tabench_dsl.grading.batch import BatchStatus

    stream = io.StringIO()
    progress = Progress(3, stream=stream, bar=True)
    log = BatchLog(progress.log, progress.status)
    log.status(BatchStatus(id="batch_1", state="in_progress", ended=False, total=3, done=1))
    progress.close()
    text = stream.getvalue()
    assert "batch batch_1: in_progress, 1/3 request(s) done" in text
    assert "batches: in_progress 1/3" in text


def test_ledger_beside_the_results_and_a_torn_last_line_cut(tmp_path: Path) -> None:
    from tabench_dsl.grading.batch import Ledger, ledger_path
    from tabench_dsl.grading.batch.rounds import custom_id

    assert ledger_path(tmp_path / "r.jsonl") == tmp_path / "r.batches.jsonl"
    assert ledger_path(tmp_path / "r.out") == tmp_path / "r.out.batches.jsonl"
    path = tmp_path / "r.batches.jsonl"
    entry = Submitted(
        id="b1",
        service="openai",
        endpoint="http://x/v1",
        model="m",
        round=1,
        time="t",
        requests=[("tb-first-0", "a", "h03", "first")],
    )
    with Ledger(path) as ledger:
        ledger.append(entry)
    with open(path, "ab") as f:
        f.write(b'{"type": "ended", "id": "b1", "sta')  # a kill in the middle of a line
    with Ledger(path) as ledger:
        ledger.append(Ended(id="b1", state="completed", time="t"))
    assert list(read_ledger(path)) == [entry, Ended(id="b1", state="completed", time="t")]
    name = custom_id("s" * 500, "q" * 500, "format", b"{}")
    assert re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", name)
    assert name != custom_id("s" * 500, "q" * 500, "first", b"{}") != custom_id("t", "q", "first", b"{}")


async def test_a_refusal_naming_max_completion_tokens_is_sent_again_in_that_form(
    work: Path, batch_server
) -> None:
    write_answers(work, [("a", "h03", "ans-x")])
    refusal = (400, {"type": "invalid_request_error", "message": "Use 'max_completion_tokens' instead."})
    bodies: list[dict] = []
    respond = scripted({"x": [refusal, PASS]})

    def recording(body: dict):
        bodies.append(body)
        return respond(body)

    server = await batch_server(recording)
    assert await run([*grade_argv(work, server.url), "--no-cache", "--retries", "0"]) == 0
    (record,) = iter_records(work / "results.jsonl")
    assert record.verdict == "pass" and record.attempts[0].transport_retries == 0
    assert "max_tokens" in bodies[0] and "max_completion_tokens" in bodies[1]


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
async def test_batched_requests_carry_the_prompt_cache_hint(
    work: Path, batch_server, monkeypatch, protocol: str
) -> None:
    # Two answers to one question: one SYSTEM prompt, so one cache hint, as live grading sends it.
    write_answers(work, [("a", "h03", "ans-p"), ("b", "h03", "ans-c")])
    bodies: list[dict] = []
    plan = scripted(PLANS)

    def respond(body: dict):
        bodies.append(body)
        return plan(body)

    server = await batch_server(respond, api_key=KEY)
    if protocol == "openai":
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        argv = [*grade_argv(work, server.url), "--no-cache"]
    else:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.anthropic_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        answers = str(work / "answers.jsonl")
        argv = ["grade", str(work / "battery"), "--answers", answers, "--judge", "anthropic:claude-test"]
        argv += ["--batch", "--no-cache"]
    assert await run(argv) == 0
    assert len(bodies) >= 2
    if protocol == "openai":
        keys = {body["prompt_cache_key"] for body in bodies}
        assert len(keys) == 1 and next(iter(keys)).startswith("tabench-")
    else:
        for body in bodies:
            assert isinstance(body["system"], list) and len(body["system"]) == 1
            assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
