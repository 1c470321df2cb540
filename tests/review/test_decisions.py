"""Decisions: where they live, how they are read and appended, and which of them count."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import msgspec
import pytest
from support.make_results import make_record, sha, small_results

from tabench_dsl.core.errors import UsageError
from tabench_dsl.core.records import Decision
from tabench_dsl.review.decisions import apply_decisions, make_decision
from tabench_dsl.review.totals import compute_totals
from tabench_dsl.store.decisions import append_decision, decisions_path, load_decisions


def decision(system: str, question: str, verdict: str, prompt: str | None = None, note: str = "") -> Decision:
    return Decision(
        system=system,
        question=question,
        verdict=verdict,  # type: ignore[arg-type]
        prompt_sha256=prompt or sha(f"SYSTEM for {question}"),
        reviewer="ana",
        time="2026-11-29T13:00:00Z",
        note=note,
    )


def test_decisions_path_replaces_jsonl() -> None:
    assert decisions_path("runs/out.jsonl") == Path("runs/out.decisions.jsonl")
    assert decisions_path(Path("/a/b.c.jsonl")) == Path("/a/b.c.decisions.jsonl")
    assert decisions_path("results") == Path("results.decisions.jsonl")


def test_append_then_load_round_trips_in_order(tmp_path: Path) -> None:
    path = tmp_path / "r.decisions.jsonl"
    assert load_decisions(path) == []
    first = decision("agent-a", "h04", "pass", note='says "<b>fine</b>"')
    second = decision("agent-b", "h02", "fail")
    append_decision(path, first)
    append_decision(path, second)
    assert load_decisions(path) == [first, second]
    lines = path.read_bytes().split(b"\n")
    assert lines[2] == b"" and len(lines) == 3
    assert msgspec.json.decode(lines[0])["note"] == 'says "<b>fine</b>"'


def test_torn_last_line_is_skipped_then_cut_before_appending(tmp_path: Path) -> None:
    path = tmp_path / "r.decisions.jsonl"
    append_decision(path, decision("agent-a", "h04", "pass"))
    with open(path, "ab") as f:
        f.write(b'{"system": "agent-b", "quest')  # a crash mid-write
    assert [d.question for d in load_decisions(path)] == ["h04"]
    append_decision(path, decision("agent-b", "h02", "fail"))
    assert [d.question for d in load_decisions(path)] == ["h04", "h02"]
    assert b"quest\n" not in path.read_bytes() and path.read_bytes().count(b"\n") == 2


def test_a_last_line_that_is_not_json_is_cut_before_appending(tmp_path: Path) -> None:
    path = tmp_path / "r.decisions.jsonl"
    append_decision(path, decision("agent-a", "h04", "pass"))
    with open(path, "ab") as f:
        f.write(b"\x00\x00\x00\x00\n")  # what a crash leaves on some file systems
    append_decision(path, decision("agent-b", "h02", "fail"))
    assert [d.question for d in load_decisions(path)] == ["h04", "h02"]
    assert b"\x00" not in path.read_bytes()


def test_a_bad_line_in_the_middle_names_path_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "r.decisions.jsonl"
    append_decision(path, decision("agent-a", "h04", "pass"))
    with open(path, "ab") as f:
        f.write(b'{"system": 5}\n')
    append_decision(path, decision("agent-b", "h02", "fail"))
    with pytest.raises(UsageError) as info:
        load_decisions(path)
    assert str(info.value).startswith(f"{path}:2:1: bad decision: ")
    assert "$.system" in str(info.value)


def test_apply_sets_the_last_matching_decision_on_the_latest_record() -> None:
    records = small_results()
    stale: list = []
    applied = apply_decisions(
        records,
        [
            decision("agent-a", "h04", "fail", note="first look"),
            decision("agent-a", "h04", "pass", note="second look"),
            decision("agent-b", "h02", "fail"),
        ],
        stale=stale,
    )
    assert len(applied) == len(records)
    decided = {r.key: r.decision for r in applied if r.decision is not None}
    assert decided[("agent-a", "h04")].note == "second look"
    assert decided[("agent-b", "h02")].verdict == "fail"
    assert [(s.decision.note, s.reason) for s in stale] == [("first look", "replaced by a later decision")]
    assert records[4].decision is None  # the input is not changed
    totals = {s.system: s for s in compute_totals(applied).systems}
    assert (totals["agent-a"].human_pass, totals["agent-a"].adjudicate) == (1, 0)
    assert (totals["agent-b"].human_fail, totals["agent-b"].fail, totals["agent-b"].adjudicate) == (1, 2, 0)


def test_stale_decisions_are_ignored_and_reported() -> None:
    records = [*small_results(), make_record("agent-b", "h02", "adjudicate", prompt_sha256=sha("edited"))]
    stale: list = []
    applied = apply_decisions(
        records,
        [
            decision("agent-b", "h02", "pass"),  # made on the old prompt
            decision("agent-a", "h02", "fail"),  # the record is a pass, not adjudicate
            decision("agent-z", "h01", "pass"),  # no such pair
        ],
        stale=stale,
    )
    assert all(r.decision is None for r in applied)
    assert [s.reason for s in stale] == [
        "the prompt changed since the decision (sha256 differs)",
        "the record is no longer adjudicate (now pass)",
        "no such record in the results",
    ]


def test_decision_on_an_earlier_record_of_a_regraded_pair_does_not_count() -> None:
    # agent-a/h03 was error, then re-graded to fail: only the latest record can carry a decision.
    records = [*small_results(), make_record("agent-a", "h04", "adjudicate")]
    applied = apply_decisions(records, [decision("agent-a", "h04", "pass")])
    assert applied[4].decision is None and applied[-1].decision is not None


def test_make_decision_stamps_utc_time_hash_and_reviewer() -> None:
    record = make_record("agent-a", "h04", "adjudicate")
    when = datetime(2026, 11, 29, 14, 5, 9, 123, tzinfo=UTC)
    made = make_decision(record, "pass", reviewer="ana", note="  ok  ", now=when)
    assert made == Decision(
        system="agent-a",
        question="h04",
        verdict="pass",
        prompt_sha256=record.prompt_sha256,
        reviewer="ana",
        time="2026-11-29T14:05:09Z",
        note="ok",
    )
    assert make_decision(record, "fail").reviewer  # the login name when none is given
    with pytest.raises(UsageError):
        make_decision(record, "maybe")


def test_a_key_pasted_into_a_decision_note_is_not_written(monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "plainsecretvalue12345")
    record = make_record("agent-a", "h04", "adjudicate")
    note = "judge was wrong; my key is plainsecretvalue12345 and the old one sk-proj-abcdef123456"
    made = make_decision(record, "pass", reviewer="ana", note=note)
    assert made.note == "judge was wrong; my key is [redacted] and the old one [redacted]"
