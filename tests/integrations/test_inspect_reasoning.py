"""Inspect logs of a reasoning model: tabench grades the completion text, never its reasoning.

A real Inspect run against a scripted model that reasons the way servers send it: vLLM's
`reasoning_content` beside the text, a `<think>` block in the text (which Inspect parses out), a
reply that is reasoning only (cut off while thinking) and a text cut off inside `<think>`. Every
reasoning names the gold, every final answer the trap: graded on the reasoning, they would pass
T1. Skipped where the `inspect` extra is absent.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("inspect_ai", reason="the inspect extra is not installed (pip install -e '.[inspect]')")
pytest.importorskip(
    "openai", reason="openai is not installed (the test extra brings it: pip install -e '.[test]')"
)  # Inspect's provider for the scripted model under test

from inspect_ai import Task
from inspect_ai.dataset import Sample
from inspect_ai.log import read_eval_log
from inspect_ai.solver import generate
from support.helpers_grading import FAIL, PASS, user_content
from support.inspect_run import run_task, servers_in_thread
from support.judge_server import Raw

from tabench_dsl.cli import main
from tabench_dsl.inspect import battery_scorer
from tabench_dsl.store.results import iter_records

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

RUBRIC = "".join(
    f'question {qid} {{\n  prompt "{qid}: dataclass to dict?"\n  gold "dataclasses asdict"\n'
    '  trap "dataclasses.todict() does not exist"\n}\n'
    for qid in ("d01", "d02", "d03", "d04")
)
THOUGHT = "the gold is dataclasses with asdict, but I recall a todict() function"
FINAL = "Use dataclasses.todict()."
CUT_OFF = "<think>dataclasses asdict, I was about to"
#: Sample id -> (content, reasoning_content, finish_reason) of the model's reply.
REPLIES: dict[str, tuple[str, str | None, str]] = {
    "d01": (FINAL, THOUGHT, "stop"),  # vLLM's reasoning parser: the thought in reasoning_content
    "d02": (f"<think>{THOUGHT}</think>{FINAL}", None, "stop"),  # llama.cpp/Ollama: in the text
    "d03": ("", THOUGHT, "length"),  # the budget spent thinking: no text at all
    "d04": (CUT_OFF, None, "length"),  # cut off inside <think>: Inspect leaves it in the text
}
USER_OPENING = "-- CANDIDATE ANSWER --\n"


def sut(body: dict[str, Any]) -> Raw:
    qid = body["messages"][-1]["content"].split(":")[0]
    content, reasoning, finish = REPLIES[qid]
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if reasoning is not None:
        message["reasoning_content"] = reasoning
    return Raw(
        body={
            "id": f"chatcmpl-{qid}",
            "object": "chat.completion",
            "created": 1700000000,
            "model": body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12},
        }
    )


def judge(body: dict[str, Any]) -> str:
    return FAIL if "todict" in user_content(body) or user_content(body) == USER_OPENING else PASS


def write_battery(root: Path) -> Path:
    folder = root / "battery"
    folder.mkdir()
    (folder / "battery.yaml").write_text(
        "name: dc\nscorer: tabench-1.1\nrubrics: [q.rubric]\n", encoding="utf-8"
    )
    (folder / "q.rubric").write_text(RUBRIC, encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def reasoning_run(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("inspect-reasoning")
    battery = write_battery(root)
    with servers_in_thread(sut, judge) as (sut_server, judge_server), pytest.MonkeyPatch.context() as mp:
        mp.setenv("OPENAI_API_KEY", "dummy-key")
        mp.setenv("OPENAI_BASE_URL", sut_server.url)
        mp.delenv("TABENCH_CACHE", raising=False)
        scored = root / "scored.jsonl"
        task = Task(
            dataset=[Sample(id=qid, input=f"{qid}: dataclass to dict?", target="-") for qid in REPLIES],
            solver=generate(),
            scorer=battery_scorer(str(battery), judge=judge_server.url, model="judge-m", out=str(scored)),
            name="reasoning",
        )
        log = run_task(task, sut_url=sut_server.url, log_dir=str(root / "logs"))
        yield root, battery, Path(log.location), judge_server, scored


def test_the_log_holds_the_reasoning_apart(reasoning_run) -> None:
    # What Inspect made of the replies: the premise of the tests below.
    _, _, log_path, _, _ = reasoning_run
    samples = {s.id: s for s in read_eval_log(str(log_path)).samples or []}
    for qid in ("d01", "d02", "d03"):
        content = samples[qid].output.message.content
        assert not isinstance(content, str) and content[0].type == "reasoning"
    assert samples["d01"].output.completion == FINAL and samples["d02"].output.completion == FINAL
    assert samples["d03"].output.completion == "" and samples["d04"].output.completion == CUT_OFF


def test_grade_reads_the_completion_text_never_the_reasoning(reasoning_run, tmp_path: Path, capsys) -> None:
    _, battery, log_path, judge_server, _ = reasoning_run
    before = len(judge_server.requests)
    out = tmp_path / "results.jsonl"
    argv = [
        "grade",
        str(battery),
        "--answers",
        str(log_path),
        "--judge",
        judge_server.url,
        "--model",
        "judge-m",
    ]
    assert main([*argv, "--out", str(out), "--no-cache"]) == 1  # d03 has no answer: named, exit 1
    err = capsys.readouterr().err
    assert "sample 'd03' (epoch 1): the completion holds reasoning only, no text; not graded" in err
    records = {r.question: r for r in iter_records(out)}
    assert set(records) == {"d01", "d02", "d04"}
    assert {q: (r.tier, r.verdict) for q, r in records.items()} == {q: ("t2", "fail") for q in records}
    assert records["d01"].answer == FINAL and records["d01"].reasoning_cut is None
    assert records["d02"].answer == FINAL and records["d02"].reasoning_cut is None
    # The text cut off inside <think>: kept as given, graded as the empty answer it leaves.
    cut = records["d04"].reasoning_cut
    assert records["d04"].answer == CUT_OFF and cut is not None and cut.unclosed and cut.final == ""
    sent = sorted(user_content(r) for r in judge_server.requests[before:])
    assert sent == sorted([USER_OPENING + FINAL, USER_OPENING + FINAL, USER_OPENING])
    assert not any("asdict" in text for text in sent)


def test_the_scorer_inside_inspect_grades_the_final_answer(reasoning_run) -> None:
    _, _, log_path, _, scored = reasoning_run
    samples = {s.id: s for s in read_eval_log(str(log_path)).samples or []}
    scores = {qid: sample.scores["battery_scorer"] for qid, sample in samples.items()}
    assert {qid: score.value for qid, score in scores.items() if qid != "d03"} == {
        "d01": "I",
        "d02": "I",
        "d04": "I",
    }
    assert scores["d03"].metadata is None or scores["d03"].metadata.get("verdict") is None
    assert scores["d04"].answer == ""  # the final answer it was graded on
    lines = [json.loads(line) for line in scored.read_text(encoding="utf-8").splitlines()]
    assert {line["question"]: line["verdict"] for line in lines} == {
        "d01": "fail",
        "d02": "fail",
        "d04": "fail",
    }
    assert next(line for line in lines if line["question"] == "d04")["reasoning"]["unclosed"] is True
