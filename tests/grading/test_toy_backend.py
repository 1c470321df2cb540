"""A new judge backend touches only what docs/architecture.md's "A judge backend" lists: a module
with a `base.Judge` subclass, its builder (`@register_judge`) and its identity for the dry run
(`@register_identity`). This one lives in the test, registers the kind `toy`, and is chosen with
`--judge toy:MODEL`: the dry run names it, a grading grades with it, its cache entries carry it, and
--batch says plainly that it has no batch service."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from support.helpers_grading import PASS, write_battery

from tabench_dsl.cli import main
from tabench_dsl.core.records import JudgeInfo
from tabench_dsl.grading.judges.base import Completion, Judge, JudgeIdentity, JudgeParams, Message
from tabench_dsl.grading.judges.registry import JudgeSetup, register_identity, register_judge
from tabench_dsl.store.results import iter_records

ASKED: list[list[Message]] = []


class ToyJudge(Judge):
    """Passes every answer, remembering what it was asked."""

    def __init__(self, params: JudgeParams) -> None:
        self.params = params
        self.info = JudgeInfo(backend="toy", model=params.model, label="toy box")

    async def complete(self, messages: list[Message]) -> Completion:
        ASKED.append(messages)
        return Completion(PASS)


@register_judge("toy")
def toy_judge(setup: JudgeSetup) -> ToyJudge:
    return ToyJudge(setup.params("toy:MODEL", model=setup.argument or None))


@register_identity("toy", carries_request_shape=False)  # ToyJudge keeps the default shape_requests
def toy_identity(setup: JudgeSetup) -> JudgeIdentity:
    params = setup.params("toy:MODEL", model=setup.argument or None)
    return JudgeIdentity(JudgeInfo(backend="toy", model=params.model, label="toy box"), params)


@pytest.fixture
def work(work: Path) -> Path:
    ASKED.clear()
    return work


def answers(work: Path) -> Path:
    path = work / "answers.jsonl"
    rows = [{"system": "s", "question": "h03", "answer": "azure blue"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_the_dry_run_names_the_toy_judge_and_asks_it_nothing(work: Path, capsys) -> None:
    argv = ["grade", str(write_battery(work)), "--answers", str(answers(work)), "--judge", "toy:m1"]
    assert main([*argv, "--dry-run", "--json"]) == 0
    (judge,) = json.loads(capsys.readouterr().out)["dry_run"]["judges"]
    assert (judge["judge"], judge["judge_calls"]) == ("toy:m1", 1)
    assert ASKED == []


def test_a_grading_grades_with_the_toy_judge_and_caches_under_its_name(work: Path) -> None:
    argv = ["grade", str(write_battery(work)), "--answers", str(answers(work)), "--judge", "toy:m1"]
    assert asyncio.run(asyncio.to_thread(main, [*argv, "--cache", "c.sqlite"])) == 0
    (record,) = iter_records(work / "results.jsonl")
    assert (record.verdict, record.judge.backend, record.judge.model) == ("pass", "toy", "m1")
    assert len(ASKED) == 1
    # Graded again from the cache: the toy judge's entry, not asked a second time.
    again = [*argv, "--cache", "c.sqlite", "--out", "again.jsonl"]
    assert asyncio.run(asyncio.to_thread(main, again)) == 0
    (cached,) = iter_records(work / "again.jsonl")
    assert cached.attempts[0].cache_hit and len(ASKED) == 1


def test_batch_says_the_toy_judge_has_no_batch_service(work: Path, capsys) -> None:
    argv = ["grade", str(write_battery(work)), "--answers", str(answers(work)), "--judge", "toy:m1"]
    assert main([*argv, "--batch"]) == 2
    assert "has no batch service" in capsys.readouterr().err
