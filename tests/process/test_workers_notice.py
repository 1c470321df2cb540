"""`tabench grade --workers 2` against a judge that refuses `temperature`: every worker drops it,
and the parent says so once."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from support.helpers_grading import PASS, write_battery

from tabench_dsl.cli import main
from tabench_dsl.store.results import iter_records

pytestmark = pytest.mark.slow


async def test_a_refused_temperature_is_said_once_across_workers(
    tmp_path: Path, judge_server, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    server = await judge_server([PASS], refuse_temperature=True)
    answers = tmp_path / "answers.jsonl"
    lines = [json.dumps({"system": f"s{i}", "question": "h03", "answer": "azure"}) for i in range(12)]
    answers.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    argv = ["grade", str(write_battery(tmp_path)), "--answers", str(answers), "--judge", server.url]
    argv += ["--model", "m", "--no-cache", "--workers", "2", "--concurrency", "2"]
    assert await asyncio.to_thread(main, argv) == 0
    err = capsys.readouterr().err
    said = [line for line in err.splitlines() if "refused temperature 0" in line]
    assert len(said) == 1 and said[0].startswith("tabench: notice: ")
    assert len(server.rejections) >= 2  # each worker's judge was refused once
    assert server.calls == 12 and {r.verdict for r in iter_records(tmp_path / "results.jsonl")} == {"pass"}
