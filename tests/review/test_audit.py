"""Blind audits: the draw, which audits apply, and the judge measured against them, by hand."""

from __future__ import annotations

import math
from collections import Counter

import msgspec
import pytest
from support.make_results import make_record, sha

from tabench_dsl.core.records import Decision, Record
from tabench_dsl.core.stats import Z95
from tabench_dsl.review.audit import (
    answer_sha256,
    audit_agreement,
    audit_agreements,
    draw_audit_sample,
    proportional_allocation,
)
from tabench_dsl.review.decisions import StaleDecision, apply_decisions, make_decision
from tabench_dsl.review.totals import compute_totals, totals_json


def audit(record: Record, verdict: str, **changes: str) -> Decision:
    made = make_decision(record, verdict, reviewer="ana", note="", audit=True)
    return msgspec.structs.replace(made, **changes)


def audited(record: Record, human: str) -> Record:
    return msgspec.structs.replace(record, human_audit=audit(record, human))


def decided_records() -> list[Record]:
    """Two systems: a with 6 passes and 2 fails; b with a T1 pass, 3 fails, an adjudicate and an error."""
    records = [make_record("a", f"q{i}", "pass") for i in range(6)]
    records += [make_record("a", f"q{i}", "fail") for i in range(6, 8)]
    records += [make_record("b", "q0", "t1")] + [make_record("b", f"q{i}", "fail") for i in range(1, 4)]
    records += [make_record("b", "q4", "adjudicate"), make_record("b", "q5", "error")]
    return records


def test_proportional_allocation_by_largest_remainder() -> None:
    # 6, 2, 1, 3 of 12 with 6 to give: quotas 3, 1, 0.5, 1.5; the two halves tie and go in order.
    sizes = {("a", "pass"): 6, ("a", "fail"): 2, ("b", "pass"): 1, ("b", "fail"): 3}
    assert proportional_allocation(sizes, 6) == {
        ("a", "pass"): 3,
        ("a", "fail"): 1,
        ("b", "pass"): 1,
        ("b", "fail"): 1,
    }
    # 4 to give: quotas 2, 0.667, 0.333, 1 -> floors 2, 0, 0, 1; the largest remainder (a fail) gets the last.
    assert proportional_allocation(sizes, 4) == {
        ("a", "pass"): 2,
        ("a", "fail"): 1,
        ("b", "pass"): 0,
        ("b", "fail"): 1,
    }
    assert sum(proportional_allocation(sizes, 99).values()) == 12
    assert proportional_allocation({}, 3) == {}


def test_the_draw_is_stratified_reproducible_and_skips_what_a_person_decided() -> None:
    records = decided_records()
    # 7 of 12: quotas 3.5, 1.17, 0.58 and 1.75; floors 3, 1, 0, 1 and the two largest remainders
    # (b's fails, b's pass) take the last two.
    drawn = draw_audit_sample(records, 7, seed=3)
    assert Counter((r.system, r.verdict) for r in drawn) == {
        ("a", "pass"): 3,
        ("a", "fail"): 1,
        ("b", "pass"): 1,
        ("b", "fail"): 2,
    }
    assert all(r.verdict in ("pass", "fail") for r in drawn)  # never the adjudicate or the error
    # The same seed draws the same answers in the same order, whatever order the file is in.
    assert [r.key for r in draw_audit_sample(list(reversed(records)), 7, seed=3)] == [r.key for r in drawn]
    assert {r.key for r in draw_audit_sample(records, 7, seed=4)} != {r.key for r in drawn}
    # Shown shuffled, not stratum by stratum.
    assert [r.system for r in drawn] != sorted(r.system for r in drawn)
    # An answer already audited is not drawn again.
    once = [audited(r, "pass") if r.key in {d.key for d in drawn} else r for r in records]
    again = draw_audit_sample(once, 100, seed=3)
    assert len(again) == 12 - 7 and not {r.key for r in again} & {r.key for r in drawn}


def test_audits_never_change_a_verdict_and_stale_ones_are_named() -> None:
    records = decided_records()
    judged_pass, judged_fail, adjudicated = records[0], records[6], records[12]
    settle = make_decision(adjudicated, "pass", reviewer="bo")
    later = make_record("a", "q1", "pass", answer="a different answer")  # re-graded on new text
    decisions = [
        audit(judged_pass, "fail"),
        audit(judged_fail, "fail", prompt_sha256=sha("another prompt")),
        audit(records[1], "pass"),
        audit(adjudicated, "fail"),
        settle,
        audit(judged_pass, "pass", note="second look"),
    ]
    stale: list[StaleDecision] = []
    applied = {r.key: r for r in apply_decisions([*records, later], decisions, stale=stale)}
    assert applied[judged_pass.key].verdict == "pass"
    assert applied[judged_pass.key].decision is None
    assert applied[judged_pass.key].audited_by_human == decisions[5]  # the last audit of a pair wins
    assert applied[adjudicated.key].decision == settle and applied[adjudicated.key].audited_by_human is None
    assert [(s.decision.question, s.reason) for s in stale] == [
        ("q6", "the prompt changed since the audit (sha256 differs)"),
        ("q1", "the answer changed since the audit (sha256 differs)"),
        ("q4", "the record is no longer decided by the judge (now adjudicate)"),
        ("q0", "replaced by a later audit"),
    ]
    assert decisions[0].answer_sha256 == answer_sha256(judged_pass)


def test_an_old_decisions_line_still_reads_and_a_settling_one_is_written_as_before() -> None:
    old = (
        b'{"system":"a","question":"q","verdict":"pass","prompt_sha256":"h","reviewer":"r","time":"t",'
        b'"note":""}'
    )
    decision = msgspec.json.decode(old, type=Decision)
    assert not decision.is_audit
    assert msgspec.json.encode(decision) == old
    assert b'"kind":"audit"' in msgspec.json.encode(audit(make_record("a", "q", "pass"), "fail"))


def test_agreement_against_the_wikipedia_kappa_example() -> None:
    # Wikipedia, "Cohen's kappa": both yes 20, A yes B no 5, A no B yes 10, both no 15; kappa 0.4.
    # Judge = A, person = B: tp 20, fp 5, fn 10, tn 15.
    cells = (
        [("pass", "pass")] * 20 + [("pass", "fail")] * 5 + [("fail", "pass")] * 10 + [("fail", "fail")] * 15
    )
    records = [audited(make_record("s", f"q{i}", judge), human) for i, (judge, human) in enumerate(cells)]
    found = audit_agreement(records)
    assert found is not None
    assert found.n == 50 and found.kappa == pytest.approx(0.4)
    assert msgspec.structs.asdict(found.confusion) == {
        "judge_pass_human_pass": 20,
        "judge_pass_human_fail": 5,
        "judge_fail_human_pass": 10,
        "judge_fail_human_fail": 15,
    }
    assert (found.agreement.hits, found.agreement.n, found.agreement.value) == (35, 50, 0.7)
    assert (found.sensitivity.hits, found.sensitivity.n) == (20, 30)
    assert (found.specificity.hits, found.specificity.n) == (15, 20)
    assert (found.precision.hits, found.precision.n) == (20, 25)
    # Wilson by hand for 35 of 50: centre (0.7 + z^2/100) / (1 + z^2/50), half-width over the same.
    z = Z95
    centre = (0.7 + z * z / 100) / (1 + z * z / 50)
    half = z * math.sqrt(0.7 * 0.3 / 50 + z * z / 10000) / (1 + z * z / 50)
    assert found.agreement.ci_low == pytest.approx(centre - half, abs=1e-6)
    assert found.agreement.ci_high == pytest.approx(centre + half, abs=1e-6)
    assert found.agreement.ci_low == pytest.approx(0.5625, abs=1e-4)  # 56.25%-80.9% as published tables give


def test_degenerate_kappa_is_none_and_empty_rates_have_no_value() -> None:
    records = [audited(make_record("s", f"q{i}", "pass"), "pass") for i in range(3)]
    found = audit_agreement(records)
    assert found is not None and found.kappa is None  # one verdict from both: undefined
    assert found.specificity.value is None and found.specificity.ci_low is None
    assert audit_agreement([make_record("s", "q", "pass")]) is None


def test_totals_report_the_audit_per_system_per_tier_and_overall() -> None:
    records = decided_records()
    records[0] = audited(records[0], "pass")
    records[6] = audited(records[6], "pass")  # the judge failed what the person passed
    records[8] = audited(records[8], "fail")  # b's T1 pass, failed by the person
    totals = msgspec.json.decode(totals_json(compute_totals(records)))
    a, b = totals["systems"]
    assert a["audit"]["n"] == 2 and a["audit"]["confusion"]["judge_fail_human_pass"] == 1
    assert b["audit"]["precision"]["value"] == 0.0
    overall = totals["all"]["audit"]
    assert overall["n"] == 3 and set(overall["tiers"]) == {"t1", "t2"}
    assert overall["tiers"]["t1"]["precision"] == {
        "hits": 0,
        "n": 1,
        "value": 0.0,
        "ci_low": 0.0,
        "ci_high": 0.793451,
    }
    assert [
        (d["system"], d["question"], d["judge_verdict"], d["human_verdict"]) for d in overall["disagreements"]
    ] == [
        ("a", "q6", "fail", "pass"),
        ("b", "q0", "pass", "fail"),
    ]
    assert a["pass"] == 6 and a["fail"] == 2  # audits count nothing
    unaudited = msgspec.json.decode(totals_json(compute_totals(decided_records())))
    assert "audit" not in unaudited["all"] and "audit" not in unaudited["systems"][0]  # as before audits
    assert audit_agreements(decided_records()) == ({}, msgspec.UNSET)
