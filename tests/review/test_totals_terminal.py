"""The terminal totals table as a person reads it: `tabench totals` through `main(argv)`, its rows
parsed from what it prints. A human decision is counted, and named, in its own verdict's column."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from support.helpers_grading import MALFORMED, PASS, write_battery

from tabench_dsl.cli import main
from tabench_dsl.store.results import iter_records


@pytest.fixture
def work(work: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("COLUMNS", "200")
    return work


def system_rows(out: str) -> dict[str, list[str]]:
    """The cells of the per-system table, by system (the header row's names as keys too)."""
    lines = out[out.index("Totals per system") : out.index("Per question")].splitlines()
    rows = {}
    for line in lines:
        if line.startswith(("│", "┃")):
            cells = [cell.strip() for cell in line.strip("│┃").replace("┃", "│").split("│")]
            rows[cells[0]] = cells
    return rows


def decision(record, verdict: str) -> str:
    return json.dumps(
        {
            "system": record.system,
            "question": record.question,
            "verdict": verdict,
            "prompt_sha256": record.prompt_sha256,
            "reviewer": "rita",
            "time": "2026-01-01T00:00:00+00:00",
        }
    )


async def test_a_human_fail_is_in_the_fail_column_and_a_human_pass_in_the_pass_column(
    work: Path, capsys, judge_server
) -> None:
    # Each system: a T1 pass (h02) and two answers the judge cannot settle (malformed twice).
    def reply(body: dict) -> str:
        return MALFORMED if "ADJ" in body["messages"][1]["content"] else PASS

    server = await judge_server(reply)
    battery = write_battery(work)
    rows = [("a", "h02", "7311"), ("a", "h01", "ADJ one"), ("a", "h03", "ADJ two")]
    rows += [("b", "h02", "7311"), ("b", "h01", "ADJ three"), ("b", "h03", "azure")]
    answers = work / "answers.jsonl"
    answers.write_text(
        "".join(json.dumps({"system": s, "question": q, "answer": t}) + "\n" for s, q, t in rows),
        encoding="utf-8",
    )
    argv = ["grade", str(battery), "--answers", str(answers), "--judge", server.url, "--model", "m"]
    assert await asyncio.to_thread(main, argv) == 0
    held = {(r.system, r.question): r for r in iter_records(work / "results.jsonl")}
    assert sorted(key for key, r in held.items() if r.verdict == "adjudicate") == [
        ("a", "h01"),
        ("a", "h03"),
        ("b", "h01"),
    ]
    (work / "results.decisions.jsonl").write_text(
        "\n".join(
            [
                decision(held[("a", "h01")], "fail"),
                decision(held[("a", "h03")], "pass"),
                decision(held[("b", "h01")], "fail"),
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    capsys.readouterr()
    assert main(["totals", "results.jsonl"]) == 0
    table = system_rows(capsys.readouterr().out)
    header = table["system"]
    a = dict(zip(header, table["a"], strict=True))
    b = dict(zip(header, table["b"], strict=True))
    assert (a["pass"], a["fail"], a["adjud."], a["score"]) == ("2 (1 human)", "1 (1 human)", "0", "66.7%")
    assert (b["pass"], b["fail"], b["adjud."], b["score"]) == ("2", "1 (1 human)", "0", "66.7%")
