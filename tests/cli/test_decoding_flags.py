"""`--temperature`, `--max-tokens`, `--reasoning-effort` and `--thinking-budget` through `main(argv)`:
what reaches the judge, and the flags' own errors (exit 2)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from support.helpers_grading import PASS, write_battery

from tabench_dsl.cli import main


async def _run(argv: list[str]) -> int:
    return await asyncio.to_thread(main, argv)


@pytest.fixture
def answers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TABENCH_CACHE", raising=False)
    path = tmp_path / "answers.jsonl"
    path.write_text(
        json.dumps({"system": "a", "question": "h03", "answer": "azure"}) + "\n", encoding="utf-8"
    )
    return path


async def test_the_flags_win_over_the_manifest_and_reach_the_judge(
    tmp_path: Path, answers: Path, judge_server
) -> None:
    server = await judge_server([PASS])
    battery = write_battery(tmp_path)
    manifest = battery / "battery.yaml"
    manifest.write_text(
        manifest.read_text() + "judge: {temperature: 0.3, max_tokens: 200, reasoning: {effort: high}}\n"
    )
    argv = [
        "grade",
        str(battery),
        "--answers",
        str(answers),
        "--judge",
        server.url,
        "--model",
        "m",
        "--no-cache",
    ]
    argv += ["--temperature", "0.9", "--max-tokens", "777", "--reasoning-effort", "minimal"]
    assert await _run(argv) == 0
    (request,) = server.requests
    assert (request["temperature"], request["max_tokens"], request["reasoning_effort"]) == (
        0.9,
        777,
        "minimal",
    )


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--max-tokens", "0"], "tabench: error: --max-tokens must be at least 1"),
        (["--temperature", "3"], "tabench: error: --temperature must be a number from 0 to 2"),
        (["--thinking-budget", "100"], "tabench: error: --thinking-budget must be at least 1024 tokens"),
        (
            ["--thinking-budget", "2000", "--temperature", "0"],
            "tabench: error: --temperature cannot go with --thinking-budget: Anthropic's extended thinking "
            "takes no temperature",
        ),
        (
            ["--thinking-budget", "2000", "--max-tokens", "1000"],
            "tabench: error: --max-tokens 1000 must be above the thinking budget 2000 (the budget is part of "
            "max_tokens): raise it, e.g. to 2300, or leave it out",
        ),
    ],
)
async def test_bad_decoding_flags_exit_2(
    tmp_path: Path, answers: Path, capsys, flags: list[str], message: str
) -> None:
    argv = ["grade", str(write_battery(tmp_path)), "--answers", str(answers), "--judge", "builtin", *flags]
    assert await _run(argv) == 2
    assert capsys.readouterr().err.strip() == message
