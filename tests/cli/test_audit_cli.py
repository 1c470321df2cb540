"""`tabench adjudicate --audit N`: a blind audit through main(argv), keys piped through stdin."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest
from support.make_results import small_results, write_battery, write_results

from tabench_dsl.cli import main
from tabench_dsl.store.decisions import load_decisions


@pytest.fixture
def results(tmp_path: Path) -> Path:
    return write_results(tmp_path / "run.jsonl", small_results())


def run(monkeypatch, capsys, args: list[str], keys: str = "") -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "stdin", io.StringIO(keys))
    status = main(args)
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_an_audit_is_blind_until_decided_and_kept_apart(
    monkeypatch, capsys, results: Path, tmp_path: Path
) -> None:
    battery = write_battery(tmp_path / "battery")
    args = [
        "adjudicate",
        str(results),
        "--audit",
        "2",
        "--seed",
        "5",
        "--reviewer",
        "ana",
        "--battery",
        str(battery),
    ]
    status, out, _ = run(monkeypatch, capsys, args, "f wrong stage\np\n")
    assert status == 0
    decisions_file = results.with_name("run.decisions.jsonl")
    head = "2 answer(s) to audit (seed 5, stratified by system and verdict); audits go to"
    assert out.startswith(f"{head} {decisions_file} as ana.")
    first, _ = out.split("=== audit [2/2]")
    shown_before, revealed = first.split("recorded: ")
    # Before the verdict: the question and its gold and the answer, never the system nor the judge's word.
    assert "=== audit [1/2] · question " in shown_before and "Gold:\n    " in shown_before
    for hidden in ("agent-a", "agent-b", "said", "reason", "Names all four", "Claims a Summarize", "T1"):
        assert hidden not in shown_before
    assert revealed.startswith("fail. System agent-")
    decisions = load_decisions(decisions_file)
    assert [(d.verdict, d.reviewer, d.note, d.kind) for d in decisions] == [
        ("fail", "ana", "wrong stage", "audit"),
        ("pass", "ana", "", "audit"),
    ]
    assert out.endswith("2 audited, 0 skipped, 0 not shown.\n")

    # The standing verdicts are unchanged; totals measure the judge against the two audits.
    before = {(r.system, r.question): r.verdict for r in small_results()}
    status, out, _ = run(monkeypatch, capsys, ["totals", str(results), "--json"])
    totals = json.loads(out)
    assert status == 0 and totals["all"]["audit"]["n"] == 2
    judged = {(d.system, d.question): (before[(d.system, d.question)], d.verdict) for d in decisions}
    agreed = sum(judge == human for judge, human in judged.values())
    assert totals["all"]["audit"]["agreement"]["hits"] == agreed
    assert sum(s["pass"] for s in totals["systems"]) == 3  # as before any audit
    # The settling walk still offers the same two adjudicate answers.
    status, out, _ = run(monkeypatch, capsys, ["adjudicate", str(results)], "q\n")
    assert out.startswith("2 answer(s) to decide")
    # The same reviewer's second session draws answers they have not audited yet; another reviewer
    # may audit every decided answer, those ana audited too.
    again = ["adjudicate", str(results), "--audit", "9", "--reviewer"]
    status, out, _ = run(monkeypatch, capsys, [*again, "ana"], "q\n")
    assert out.startswith("3 answer(s) to audit")
    status, out, _ = run(monkeypatch, capsys, [*again, "bo"], "q\n")
    assert out.startswith("5 answer(s) to audit")


def test_the_terminal_table_shows_the_audits(monkeypatch, capsys, results: Path) -> None:
    run(monkeypatch, capsys, ["adjudicate", str(results), "--audit", "5", "--reviewer", "bo"], "p\n" * 5)
    status, out, _ = run(monkeypatch, capsys, ["totals", str(results)])
    assert status == 0
    assert "Judge against blind human audits" in out
    assert "tier t1" in out and "tier t2" in out


def test_audit_needs_a_positive_count_and_stops_when_nothing_is_left(
    monkeypatch, capsys, results: Path
) -> None:
    status, _, err = run(monkeypatch, capsys, ["adjudicate", str(results), "--audit", "0"])
    assert status == 2 and "--audit must be at least 1" in err
    run(monkeypatch, capsys, ["adjudicate", str(results), "--audit", "9"], "p\n" * 9)
    status, out, _ = run(monkeypatch, capsys, ["adjudicate", str(results), "--audit", "1"])
    assert status == 0
    assert out == f"Nothing to audit: no answer decided by the judge or T1 is left unaudited in {results}.\n"
