"""Ctrl-C stops a grading by the builtin judge when it comes, not when the run ends.

The builtin judge, T1 and `match` decide an answer without awaiting anything that waits, so
without a turn given to the event loop now and then (`runner.ANSWERS_PER_TURN`) the cancel an
interrupt schedules (`core.interrupts`) ran only once every answer was graded: the shipped
example's answers, many times over, are such a grading."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path

import pytest
from support.interrupted_grading import finish, wait_for_lines

pytestmark = pytest.mark.slow  # a grading in a subprocess, interrupted

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "lark-internals"
#: Copies of the example's answers, each under other system names: far more answers than the
#: builtin judge grades in the time a signal takes to act.
COPIES = 3000


def many_answers(path: Path) -> int:
    answers = [
        json.loads(line) for line in (EXAMPLE / "answers.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    with open(path, "w", encoding="utf-8") as f:
        for copy in range(COPIES):
            for answer in answers:
                f.write(json.dumps({**answer, "system": f"{answer['system']}-{copy}"}) + "\n")
    return COPIES * len(answers)


async def test_ctrl_c_stops_a_builtin_grading_where_it_is(tmp_path: Path) -> None:
    count = many_answers(tmp_path / "answers.jsonl")
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "TABENCH_CACHE")}
    argv = ["grade", str(EXAMPLE), "--answers", "answers.jsonl", "--out", "results.jsonl"]
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tabench_dsl", *argv, cwd=tmp_path, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    results = tmp_path / "results.jsonl"
    await wait_for_lines(results, 3000, proc)  # in full swing, past the first answers
    proc.send_signal(signal.SIGINT)
    _, err = await finish(proc)
    assert proc.returncode == 130, err.decode()
    assert err.decode().endswith(
        "tabench: to continue this grading, run the same command with --resume: the answers already "
        "graded are skipped\ntabench: interrupted; results written so far are kept\n"
    )
    graded = results.read_bytes().count(b"\n")
    assert 3000 <= graded < count // 2, graded
