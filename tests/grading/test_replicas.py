"""`grade --replica URL`: one judge over several scripted judge servers, each question's answers on
one replica, a replica that fails handing its questions to the others."""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path

import pytest
from support.helpers_grading import PASS

from tabench_dsl.cli import main
from tabench_dsl.grading.judges.base import Message
from tabench_dsl.grading.replicas import Replica, prompt_key, rendezvous
from tabench_dsl.store.results import iter_records

QUESTIONS = 12


def rubric() -> str:
    return "".join(
        f'question q{n:02} {{\n  prompt "Question {n}?"\n  gold "gold {n}"\n  t1 off\n}}\n'
        for n in range(QUESTIONS)
    )


@pytest.fixture
def work(work: Path) -> Path:
    from support.helpers_grading import write_battery

    write_battery(work, rubric=rubric())
    lines = [
        {"system": f"s{s}", "question": f"q{q:02}", "answer": f"answer {s}"}
        for s in range(5)
        for q in range(QUESTIONS)
    ]
    (work / "answers.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return work


def grade(work: Path, judge: str, *extra: str) -> list[str]:
    return [
        "grade",
        str(work / "battery"),
        "--answers",
        "answers.jsonl",
        "--judge",
        judge,
        "--model",
        "m",
        "--no-cache",
        *extra,
    ]


def systems_seen(server) -> set[str]:
    return {r["messages"][0]["content"] for r in server.requests}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_each_question_goes_to_one_replica(work: Path, judge_server) -> None:
    servers = [await judge_server([PASS]) for _ in range(3)]
    argv = grade(
        work, servers[0].url, "--replica", servers[1].url, "--replica", servers[2].url, "--concurrency", "4"
    )
    assert await asyncio.to_thread(main, argv) == 0
    records = list(iter_records(work / "results.jsonl"))
    assert len(records) == 5 * QUESTIONS and {r.verdict for r in records} == {"pass"}
    seen = [systems_seen(s) for s in servers]
    # Every SYSTEM prompt (one per question) reached exactly one replica, all five answers of it.
    assert sum(len(x) for x in seen) == QUESTIONS and len(set().union(*seen)) == QUESTIONS
    assert all(seen)  # with 12 questions each of 3 replicas gets some
    assert sum(len(s.requests) for s in servers) == 5 * QUESTIONS
    assert {r.judge.endpoint for r in records} == {records[0].judge.endpoint}  # one judge


async def test_a_dead_replica_hands_its_questions_to_the_others(work: Path, judge_server) -> None:
    servers = [await judge_server([PASS]) for _ in range(2)]
    dead = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    argv = grade(work, servers[0].url, "--replica", dead, "--replica", servers[1].url, "--retries", "0")
    assert await asyncio.to_thread(main, argv) == 0
    records = list(iter_records(work / "results.jsonl"))
    assert len(records) == 5 * QUESTIONS and {r.verdict for r in records} == {"pass"}
    assert sum(len(s.requests) for s in servers) == 5 * QUESTIONS


def test_rendezvous_moves_only_the_lost_replicas_prompts() -> None:
    class Named:
        def __init__(self, name: str) -> None:
            self.replica = Replica(judge=None, name=name)  # type: ignore[arg-type]

    three = [Named(f"http://r{n}/v1").replica for n in range(3)]
    keys = [prompt_key([Message("system", f"SYSTEM {n}"), Message("user", "x")]) for n in range(600)]
    before = {k: rendezvous(three, k)[0].name for k in keys}
    after = {k: rendezvous(three[:2], k)[0].name for k in keys}
    moved = {k for k in keys if before[k] != after[k]}
    assert moved == {k for k in keys if before[k] == "http://r2/v1"}
    shares = [sum(v == r.name for v in before.values()) / len(keys) for r in three]
    assert all(0.25 < s < 0.42 for s in shares)
    # The user message does not route: every answer of a question goes where its SYSTEM does.
    assert prompt_key([Message("system", "S"), Message("user", "a")]) == prompt_key(
        [Message("system", "S"), Message("user", "b")]
    )


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--replica", "openai:m"], "a replica is the URL of a Chat Completions server"),
        (["--replica", "http://127.0.0.1:9/v1", "--batch"], "--replica sends live calls"),
        (["--judge", "builtin", "--replica", "http://127.0.0.1:9/v1"], "judge panel takes none"),
    ],
)
async def test_replica_usage_errors(work: Path, judge_server, capsys, extra: list[str], message: str) -> None:
    server = await judge_server([PASS])
    assert await asyncio.to_thread(main, grade(work, server.url, *extra)) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_no_replica_is_given_far_more_than_its_share_of_questions() -> None:
    from tabench_dsl.core.records import JudgeInfo
    from tabench_dsl.grading.judges.base import Completion, Judge, JudgeParams
    from tabench_dsl.grading.replicas import BALANCE, ReplicaJudge

    class Still(Judge):
        info = JudgeInfo(backend="x", model="m")
        params = JudgeParams(model="m")

        async def complete(self, messages: list[Message]) -> Completion:
            raise AssertionError("not asked")

    judge = ReplicaJudge([Still() for _ in range(4)], [f"http://r{n}/v1" for n in range(4)])
    firsts = [judge.route([Message("system", f"SYSTEM {n}")])[0] for n in range(400)]
    assert all(judge.route([Message("system", f"SYSTEM {n}")])[0] is firsts[n] for n in range(400))  # sticky
    counts = [r.prompts for r in judge.replicas]
    assert sum(counts) == 400 and max(counts) <= BALANCE * 100 + 1


async def test_the_key_goes_to_every_replica_named_and_nowhere_else(
    work: Path, judge_server, monkeypatch
) -> None:
    key = "sk-replica-0123456789abcdef"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    servers = [await judge_server([PASS], api_key=key) for _ in range(2)]  # each refuses a call without it
    assert await asyncio.to_thread(main, grade(work, servers[0].url, "--replica", servers[1].url)) == 0
    assert all(s.requests for s in servers)
    assert key not in (work / "results.jsonl").read_text()


async def test_a_rate_limited_replica_slows_alone_and_keeps_its_questions(work: Path, judge_server) -> None:
    from support.judge_server import Fault

    limited = await judge_server([Fault.RATE_LIMIT, Fault.RATE_LIMIT, PASS], retry_after="0.2")
    other = await judge_server([PASS])
    assert (
        await asyncio.to_thread(main, grade(work, limited.url, "--replica", other.url, "--retries", "0")) == 0
    )
    records = list(iter_records(work / "results.jsonl"))
    assert len(records) == 5 * QUESTIONS and {r.verdict for r in records} == {"pass"}
    # The 429s were waited out on that replica: its questions never moved to the other one.
    assert not systems_seen(limited) & systems_seen(other)
    assert len(limited.requests) == sum(1 for r in records if r.judge) - len(other.requests) + 2
