"""`tabench grade` when the judge's account has no credit: exit 2 at once with the provider's
message, the records written kept, and `--resume` continuing once there is credit again."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from support.helpers_grading import PASS, write_battery
from support.provider_replies import OPENAI_NO_QUOTA

from tabench_dsl.cli import main
from tabench_dsl.store.results import iter_records


async def _run(argv: list[str]) -> int:
    return await asyncio.to_thread(main, argv)


async def test_no_quota_stops_the_grading_and_resume_continues(
    tmp_path: Path, capsys, judge_server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TABENCH_CACHE", raising=False)
    server = await judge_server([PASS, OPENAI_NO_QUOTA])
    battery = write_battery(tmp_path)
    answers = tmp_path / "answers.jsonl"
    lines = [json.dumps({"system": f"s{i}", "question": "h03", "answer": "azure"}) for i in range(4)]
    answers.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    argv = ["grade", str(battery), "--answers", str(answers), "--judge", server.url, "--model", "m"]
    argv += ["--concurrency", "1", "--no-cache"]
    assert await _run(argv) == 2
    err = capsys.readouterr().err
    assert "tabench: error: the judge refused the request: " in err
    said = "for want of credit or quota (HTTP 429): insufficient_quota: You exceeded your current quota"
    assert said in err
    assert "Traceback" not in err
    assert server.calls == 2  # no wait, no retry: the refusal ended the run
    assert [r.system for r in iter_records(tmp_path / "results.jsonl")] == ["s0"]

    server.responder = [PASS]
    assert await _run([*argv, "--resume"]) == 0
    assert server.calls == 5
    assert sorted(r.system for r in iter_records(tmp_path / "results.jsonl")) == ["s0", "s1", "s2", "s3"]
