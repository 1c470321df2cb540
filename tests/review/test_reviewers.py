"""Several reviewers: each person's audit kept, people measured against each other (the human
ceiling) beside the judge, and the validated score on their consensus. Decisions are written as
the decisions file's documented lines; figures read through `tabench totals --json`."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

from support.make_results import make_record, write_results

from tabench_dsl.cli import main
from tabench_dsl.core.records import record_encoder
from tabench_dsl.review.audit import answer_sha256
from tabench_dsl.review.reviewers import kappa_figures
from tabench_dsl.store.decisions import load_decisions

#: Ten answers the judge decided: (judge, ann, bob). ann and bob agree on 7 of 10: both pass 4,
#: both fail 3, ann pass / bob fail 2, ann fail / bob pass 1.
VERDICTS = [
    ("pass", "pass", "pass"),
    ("pass", "pass", "pass"),
    ("pass", "pass", "pass"),
    ("fail", "pass", "pass"),
    ("fail", "fail", "fail"),
    ("fail", "fail", "fail"),
    ("pass", "fail", "fail"),
    ("pass", "pass", "fail"),
    ("fail", "pass", "fail"),
    ("fail", "fail", "pass"),
]


def write_run(tmp_path: Path) -> Path:
    records = [make_record("agent-a", f"q{i:02}", judge) for i, (judge, _, _) in enumerate(VERDICTS)]
    results = write_results(tmp_path / "run.jsonl", records)
    lines = []
    for record, (_, ann, bob) in zip(records, VERDICTS, strict=True):
        for reviewer, verdict in (("ann", ann), ("bob", bob)):
            decision = {
                "system": record.system,
                "question": record.question,
                "verdict": verdict,
                "prompt_sha256": record.prompt_sha256,
                "reviewer": reviewer,
                "time": "2026-12-01T00:00:00Z",
                "kind": "audit",
                "answer_sha256": answer_sha256(record),
            }
            lines.append(json.dumps(decision))
    (tmp_path / "run.decisions.jsonl").write_text("\n".join(lines) + "\n")
    return results


def totals_json(results: Path, capsys) -> dict:
    assert main(["totals", str(results), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_reviewers_kappa_is_the_hand_computed_one(tmp_path: Path, capsys) -> None:
    document = totals_json(write_run(tmp_path), capsys)
    (pair,) = document["reviewers"]["pairs"]
    assert (pair["first"], pair["second"]) == ("ann", "bob")
    # By hand: observed 7/10; ann passes 6/10, bob 5/10: chance 0.6*0.5 + 0.4*0.5 = 0.5;
    # kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4.
    assert pair["people"]["n"] == 10
    assert pair["people"]["agreement"]["hits"] == 7
    assert abs(pair["people"]["kappa"] - 0.4) < 1e-12
    assert pair["people"]["kappa_low"] <= 0.4 <= pair["people"]["kappa_high"]
    # The judge against bob: agrees on 6 of 10 (not on rows 4, 7, 8, 10); judge passes 5/10, bob
    # 5/10: chance 0.5; kappa = (0.6 - 0.5) / 0.5 = 0.2.
    assert pair["judge_vs_second"]["agreement"]["hits"] == 6
    assert abs(pair["judge_vs_second"]["kappa"] - 0.2) < 1e-12
    # Their consensus is the 7 answers they agree on; the judge agrees with it on 5 of them.
    assert pair["judge_vs_consensus"]["n"] == 7
    assert pair["judge_vs_consensus"]["agreement"]["hits"] == 5
    assert document["reviewers"]["disagreed"] == 3


def test_the_validated_score_leaves_out_the_answers_people_disagree_on(tmp_path: Path, capsys) -> None:
    document = totals_json(write_run(tmp_path), capsys)
    validated = document["all"]["validated_score"]
    assert validated["audits"] == 7 and validated["reviewers_disagreed"] == 3
    assert document["all"]["audit"]["n"] == 7  # the judge against the consensus only
    # The consensus names both people: the judge missed rows 4 and 7, where both overturned it.
    misses = document["all"]["audit"]["disagreements"]
    assert [(m["question"], m["reviewer"]) for m in misses] == [("q03", "ann, bob"), ("q06", "ann, bob")]


def test_one_reviewer_never_replaces_another(tmp_path: Path, capsys) -> None:
    results = write_run(tmp_path)
    decisions = load_decisions(tmp_path / "run.decisions.jsonl")
    assert {d.reviewer for d in decisions} == {"ann", "bob"}
    document = totals_json(results, capsys)
    judge = {row["reviewer"]: row["figures"]["n"] for row in document["reviewers"]["judge"]}
    assert judge == {"ann": 10, "bob": 10, "consensus": 7}


def test_two_reviewers_with_one_seed_draw_the_same_answers(tmp_path: Path, monkeypatch, capsys) -> None:
    records = [make_record(s, f"q{i:02}", v) for s in ("a", "b") for i, v in enumerate(["pass", "fail"] * 6)]
    results = tmp_path / "run.jsonl"
    results.write_bytes(b"".join(record_encoder.encode(r) + b"\n" for r in records))
    for reviewer in ("ann", "bob"):
        monkeypatch.setattr(sys, "stdin", io.StringIO("p\n\n" * 8))
        assert main(["adjudicate", str(results), "--audit", "8", "--seed", "4", "--reviewer", reviewer]) == 0
    capsys.readouterr()
    decisions = load_decisions(tmp_path / "run.decisions.jsonl")
    drawn = {
        name: [(d.system, d.question) for d in decisions if d.reviewer == name] for name in ("ann", "bob")
    }
    assert len(drawn["ann"]) == 8 and drawn["ann"] == drawn["bob"]
    assert all(d.reviewer in ("ann", "bob") for d in decisions)


def test_kappa_figures_of_identical_ratings_have_no_kappa_but_full_agreement() -> None:
    figures = kappa_figures([("pass", "pass")] * 4)
    assert figures.kappa is None and figures.agreement.hits == 4
