"""`totals --json` lists the models that actually answered, as their replies named them."""

from __future__ import annotations

import json
from pathlib import Path

from support.helpers_grading import FAIL, PASS, compiled_battery, grade
from support.provider_replies import openai_reply

from tabench_dsl.cli import main
from tabench_dsl.core.records import Answer


async def test_totals_json_lists_the_models_that_answered(tmp_path: Path, judge_server, capsys) -> None:
    replies = [
        openai_reply(PASS, model="gpt-x-2026-01-01"),
        openai_reply(FAIL, model="gpt-x-2026-01-01"),
        openai_reply(PASS, model="gpt-x-2026-03-01"),
        openai_reply(PASS, model=""),  # a reply naming no model is not counted
    ]
    server = await judge_server(replies)
    answers = [Answer(f"s{i}", "h03", "azure") for i in range(4)]
    out = tmp_path / "r.jsonl"
    await grade(compiled_battery(tmp_path), server.url, answers, out, concurrency=1)
    assert main(["totals", "--json", str(out)]) == 0
    totals = json.loads(capsys.readouterr().out)
    judge = f"{server.url.split('/')[2]}:judge-m"
    assert totals["served"] == [
        {"judge": judge, "model": "gpt-x-2026-01-01", "calls": 2},
        {"judge": judge, "model": "gpt-x-2026-03-01", "calls": 1},
    ]
