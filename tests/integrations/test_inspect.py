"""Inspect AI both ways, with a real Inspect run: its log graded by `tabench grade --answers LOG`,
and the same task scored by `tabench_dsl.inspect.battery_scorer` against a scripted judge server;
the figures in the log checked against tabench's totals. Skipped where the `inspect` extra is
absent (tests/integrations/test_extras.py checks the message then)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("inspect_ai", reason="the inspect extra is not installed (pip install -e '.[inspect]')")
# Inspect's provider for the scripted model under test
pytest.importorskip(
    "openai", reason="openai is not installed (the inspect extra brings it: pip install -e '.[inspect]')"
)

from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.log import read_eval_log, write_eval_log
from inspect_ai.solver import generate
from support.helpers_grading import CONTRADICTION, FAIL, PASS, write_battery
from support.inspect_run import SUT_MODEL, run_task, servers_in_thread

from tabench_dsl.cli import main
from tabench_dsl.inspect import battery_scorer
from tabench_dsl.store.results import iter_records

# The first test pays for the Inspect run (tens of seconds on a loaded machine); `inspect score`
# starts Inspect again in a process of its own.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

RUBRIC = """\
question h01 {
  prompt "Which stages make up the memory pipeline?"
  gold "Four stages: Ingest, Index, Recall, Compact"
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
question h04 {
  prompt "How many stages are there?"
  gold "four"
  t1 off
}
"""
#: Question prompt -> what the model under test answers (h99 is not a question of the battery).
SUT_ANSWERS = {
    "Which stages make up the memory pipeline?": "Ingest and Index",  # judge: contradiction twice
    "Which port does the daemon listen on?": "It listens on 7311",  # T1 pass, no judge call
    "What colour is the sky?": "blue",  # judge: pass
    "How many stages are there?": "five",  # judge: fail
    "What is the meaning of life?": "42",  # h99: no such question
}
SAMPLES = [
    ("h01", "Which stages make up the memory pipeline?"),
    ("h02", "Which port does the daemon listen on?"),
    ("h03", "What colour is the sky?"),
    ("h04", "How many stages are there?"),
    ("h99", "What is the meaning of life?"),
]
#: The verdict tabench gives each answer of the model under test.
EXPECTED = {"h01": "adjudicate", "h02": "pass", "h03": "pass", "h04": "fail"}


def sut(body: dict[str, Any]) -> str:
    question = body["messages"][-1]["content"]
    return SUT_ANSWERS.get(question, "no idea")


def judge(body: dict[str, Any]) -> str:
    user = body["messages"][-1]["content"]
    if "Ingest and Index" in user:
        return CONTRADICTION
    return PASS if "blue" in user else FAIL


@task
def demo(variant: str = "v1") -> Task:
    """The task under test: one sample per question, its id the question id, the id again in the
    metadata (`qid`) and the variant as a task argument (for --question-from / --system-from)."""
    return Task(
        dataset=[Sample(id=qid, input=prompt, target="-", metadata={"qid": qid}) for qid, prompt in SAMPLES],
        solver=generate(),
        name="demo",
    )


class Run:
    """One Inspect run of `demo` over two epochs, scored by `battery_scorer`."""

    def __init__(self, root: Path, judge_url: str, log: Any) -> None:
        self.root, self.judge_url, self.log = root, judge_url, log
        self.battery = root / "battery"
        self.log_path = Path(log.location)
        self.scored = root / "scored.jsonl"


@pytest.fixture(scope="module")
def inspect_run(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("inspect")
    battery = write_battery(root, rubric=RUBRIC)
    with servers_in_thread(sut, judge) as (sut_server, judge_server), pytest.MonkeyPatch.context() as mp:
        mp.setenv("OPENAI_API_KEY", "dummy-key")
        mp.setenv("OPENAI_BASE_URL", sut_server.url)
        mp.delenv("TABENCH_CACHE", raising=False)
        task_ = demo(variant="sysA")
        task_.scorer = [
            battery_scorer(
                str(battery), judge=judge_server.url, model="judge-m", out=str(root / "scored.jsonl")
            )
        ]
        log = run_task(task_, sut_url=sut_server.url, log_dir=str(root / "logs"), epochs=2)
        run = Run(root, judge_server.url, log)
        run.judge_server = judge_server  # type: ignore[attr-defined]
        yield run


def grade(run: Run, *answers: Path | str, out: Path, extra: tuple[str, ...] = ()) -> int:
    argv = ["grade", str(run.battery), "--judge", run.judge_url, "--model", "judge-m", "--out", str(out)]
    for path in answers:
        argv += ["--answers", str(path)]
    return main([*argv, *extra])


def verdicts(path: Path) -> dict[tuple[str, str], str]:
    return {r.key: r.verdict for r in iter_records(path)}


def totals(path: Path, capsys) -> dict[str, Any]:
    capsys.readouterr()
    assert main(["totals", str(path), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_grade_reads_the_log_each_epoch_a_system_unknown_ids_named(
    inspect_run: Run, tmp_path: Path, capsys
) -> None:
    out = tmp_path / "results.jsonl"
    # One sample per epoch names no question of the battery: named, skipped, exit 1 as for JSONL.
    assert grade(inspect_run, inspect_run.log_path, out=out) == 1
    err = capsys.readouterr().err
    assert err.count("unknown question 'h99'") == 2 and f"{inspect_run.log_path}:" in err
    systems = {SUT_MODEL: 1, f"{SUT_MODEL}#epoch2": 2}
    expected = {(system, q): v for system in systems for q, v in EXPECTED.items()}
    assert verdicts(out) == expected
    record = next(r for r in iter_records(out) if r.question == "h03")
    assert record.answer == "blue"


def test_scorer_figures_in_the_log_match_tabench_totals(inspect_run: Run, capsys) -> None:
    log = read_eval_log(str(inspect_run.log_path))
    samples = log.samples or []
    assert len(samples) == 10  # five samples, two epochs
    values: Counter[str] = Counter()
    for sample in samples:
        score = sample.scores["battery_scorer"]
        value = score.value
        if isinstance(value, float) and math.isnan(value):
            values[score.reason or ""] += 1
        else:
            values[str(value)] += 1
        if sample.id in EXPECTED:
            assert score.metadata["verdict"] == EXPECTED[str(sample.id)]
    # pass -> C, fail -> I, adjudicate and the unknown question unscored (NaN), with their reasons.
    assert values == {"C": 4, "I": 2, "adjudicate": 2, "scoring_failed": 2}
    adjudicated = next(s for s in samples if s.id == "h01").scores["battery_scorer"]
    assert adjudicated.metadata["cause"] == "contradiction"
    assert "adjudicate (contradiction)" in (adjudicated.explanation or "")
    assert "h99" in (next(s for s in samples if s.id == "h99").scores["battery_scorer"].explanation or "")

    # The scorer's records are the same verdicts, under the systems `grade --answers LOG` names.
    scored = totals(inspect_run.scored, capsys)
    by_system = {s["system"]: s for s in scored["systems"]}
    assert set(by_system) == {SUT_MODEL, f"{SUT_MODEL}#epoch2"}
    passed = sum(s["pass"] for s in by_system.values())
    failed = sum(s["fail"] for s in by_system.values())
    adjudicate = sum(s["adjudicate"] for s in by_system.values())
    assert (passed, failed, adjudicate) == (values["C"], values["I"], values["adjudicate"])
    # Inspect's accuracy leaves adjudicate out: pass / (pass + fail) over the samples it scored;
    # tabench's score counts it against the system until a person decides.
    result = log.results.scores[0]
    assert result.metrics["accuracy"].value == pytest.approx(passed / (passed + failed))
    assert result.scored_samples == 3 and result.unscored_samples == 2  # h01 and h99, epochs reduced
    assert by_system[SUT_MODEL]["score"] == pytest.approx(2 / 4)


def test_the_log_graded_by_tabench_equals_the_scorer(inspect_run: Run, tmp_path: Path) -> None:
    out = tmp_path / "results.jsonl"
    grade(inspect_run, inspect_run.log_path, out=out)
    assert verdicts(out) == verdicts(inspect_run.scored)


def test_json_logs_folders_and_several_files(inspect_run: Run, tmp_path: Path, capsys) -> None:
    log = read_eval_log(str(inspect_run.log_path))
    as_json = tmp_path / "copy" / "run.json"
    as_json.parent.mkdir()
    write_eval_log(log, str(as_json), format="json")
    out = tmp_path / "from-json.jsonl"
    assert grade(inspect_run, as_json, out=out) == 1
    assert len(verdicts(out)) == 8
    # A folder stands for the logs in it; a second file giving the same pairs names the first.
    out2 = tmp_path / "twice.jsonl"
    capsys.readouterr()
    assert grade(inspect_run, inspect_run.log_path.parent, as_json, out=out2) == 1
    err = capsys.readouterr().err
    assert f"{as_json}:1: duplicate answer of system '{SUT_MODEL}' to question 'h01' (first at " in err
    assert verdicts(out2) == verdicts(out)


def test_system_and_question_from_metadata_and_task_args(inspect_run: Run, tmp_path: Path, capsys) -> None:
    out = tmp_path / "results.jsonl"
    extra = ("--system-from", "variant", "--question-from", "qid")
    assert grade(inspect_run, inspect_run.log_path, out=out, extra=extra) == 1
    assert {system for system, _ in verdicts(out)} == {"sysA", "sysA#epoch2"}
    capsys.readouterr()
    assert (
        grade(inspect_run, inspect_run.log_path, out=tmp_path / "x.jsonl", extra=("--system-from", "nope"))
        == 1
    )
    err = capsys.readouterr().err
    assert "sample 'h01' (epoch 1): no metadata field or task argument 'nope' (--system-from)" in err


def test_the_dry_run_names_systems_as_the_grading_does(inspect_run: Run, tmp_path: Path, capsys) -> None:
    # --resume's skips are counted by (system, question): a dry run that named the systems
    # otherwise than the grading would promise to grade again what is already graded.
    out = tmp_path / "results.jsonl"
    extra = ("--system-from", "variant", "--question-from", "qid")
    assert grade(inspect_run, inspect_run.log_path, out=out, extra=extra) == 1
    capsys.readouterr()
    assert (
        grade(inspect_run, inspect_run.log_path, out=out, extra=(*extra, "--resume", "--dry-run", "--json"))
        == 1
    )
    dry = json.loads(capsys.readouterr().out)["dry_run"]
    assert (dry["answers"], dry["skipped"]) == (8, 8)


def test_system_from_on_jsonl_alone_is_a_usage_error(inspect_run: Run, tmp_path: Path, capsys) -> None:
    answers = tmp_path / "answers.jsonl"
    answers.write_text(
        json.dumps({"system": "s", "question": "h02", "answer": "7311"}) + "\n", encoding="utf-8"
    )
    assert grade(inspect_run, answers, out=tmp_path / "r.jsonl", extra=("--question-from", "qid")) == 2
    assert "--question-from applies to Inspect AI logs" in capsys.readouterr().err


def test_inspect_score_rescores_the_log_with_the_battery(inspect_run: Run, tmp_path: Path) -> None:
    """`inspect score LOG --scorer tabench_dsl/battery_scorer`, Inspect's own command line, finds
    the scorer through the package's entry point (an installed tabench)."""
    inspect_cli = Path(sys.executable).with_name("inspect")
    if not inspect_cli.exists():
        pytest.skip(
            f"no inspect command at {inspect_cli} "
            "(the inspect extra installs it: pip install -e '.[inspect]')"
        )
    copy = tmp_path / "rescore.eval"
    copy.write_bytes(inspect_run.log_path.read_bytes())
    env = {**os.environ, "OPENAI_API_KEY": "dummy-key", "INSPECT_DISPLAY": "none"}
    argv = [str(inspect_cli), "score", str(copy), "--overwrite", "--action", "append"]
    argv += ["--scorer", "tabench_dsl/battery_scorer"]
    for arg in (f"battery={inspect_run.battery}", f"judge={inspect_run.judge_url}", "model=judge-m"):
        argv += ["-S", arg]
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=100, env=env, cwd=tmp_path, stdin=subprocess.DEVNULL
    )
    assert done.returncode == 0, done.stderr[-2000:]
    rescored = read_eval_log(str(copy))
    scores = [s for s in rescored.results.scores if s.scorer == "battery_scorer"]
    assert scores and scores[-1].metrics["accuracy"].value == pytest.approx(
        inspect_run.log.results.scores[0].metrics["accuracy"].value
    )


def test_the_scorer_can_ask_through_inspects_model_api(tmp_path: Path, capsys) -> None:
    """`judge="inspect"`: tabench's loop (T1, the stern retry, adjudicate) with the exchange made by
    Inspect's `get_model`, here the model bound to the `grader` role, at the scripted judge."""
    from inspect_ai.model import get_model

    battery = write_battery(tmp_path, rubric=RUBRIC)
    out = tmp_path / "scored.jsonl"
    with servers_in_thread(sut, judge) as (sut_server, judge_server), pytest.MonkeyPatch.context() as mp:
        mp.setenv("OPENAI_API_KEY", "dummy-key")
        mp.setenv("OPENAI_BASE_URL", sut_server.url)
        task_ = demo()
        task_.scorer = [battery_scorer(str(battery), judge="inspect", out=str(out))]
        grader = get_model("openai/judge-m", base_url=judge_server.url, responses_api=False, memoize=False)
        log = run_task(
            task_, sut_url=sut_server.url, log_dir=str(tmp_path / "logs"), model_roles={"grader": grader}
        )
        asked = [r for r in judge_server.requests if r["_path"].endswith("/chat/completions")]
    assert {s.id: (s.scores["battery_scorer"].metadata or {}).get("verdict") for s in log.samples or []} == {
        **EXPECTED,
        "h99": None,
    }
    # h01 asked twice (the stern retry), h03 and h04 once, h02 passed by T1 without a call.
    assert len(asked) == 4 and all(r["model"] == "judge-m" for r in asked)
    assert {r.judge.backend for r in iter_records(out)} == {"inspect"}
    assert verdicts(out) == {(SUT_MODEL, q): v for q, v in EXPECTED.items()}
