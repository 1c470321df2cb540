"""The human-validated score: the prediction-powered mean (Angelopoulos et al., Science 2023) by hand."""

from __future__ import annotations

import math

import msgspec
import pytest
from support.make_results import make_record

from tabench_dsl.core.records import Record
from tabench_dsl.core.stats import Z95
from tabench_dsl.review.decisions import make_decision
from tabench_dsl.review.totals import compute_totals, totals_json
from tabench_dsl.review.validated import audits_to_halve, ppi_mean, validated_score


def audited(record: Record, human: str) -> Record:
    return msgspec.structs.replace(
        record, human_audit=make_decision(record, human, reviewer="ana", audit=True)
    )


def judged(system: str, passes: int, fails: int) -> list[Record]:
    return [make_record(system, f"p{i}", "pass") for i in range(passes)] + [
        make_record(system, f"f{i}", "fail") for i in range(fails)
    ]


def test_ppi_mean_by_the_papers_formulas() -> None:
    # N = 20 verdicts, 12 pass: mean(f) = 0.6, var(f) = 0.6 * 0.4 = 0.24, so var/N = 0.012.
    # n = 10 audits: 6 of the judge's passes (one a person failed), 4 of its fails (all failed):
    # rectifier Y - f = five 0s, one -1, four 0s: mean -0.1, var 0.1 - 0.01 = 0.09, so var/n = 0.009.
    # theta = 0.6 - 0.1 = 0.5; se = sqrt(0.012 + 0.009) = sqrt(0.021): 95% interval 0.215974-0.784026,
    # which ppi_py.ppi_mean_ci(Y, Yhat, Yhat_unlabeled, alpha=0.05, lam=1) gives too (ppi-python 0.2.3).
    labels = [1.0] * 5 + [0.0] + [0.0] * 4
    predicted = [1.0] * 6 + [0.0] * 4
    every = [1.0] * 12 + [0.0] * 8
    mean = ppi_mean(labels, predicted, every)
    assert mean.theta == pytest.approx(0.5)
    assert mean.se == pytest.approx(math.sqrt(0.021))
    assert mean.judge_term == pytest.approx(0.012) and mean.rectifier_variance == pytest.approx(0.09)
    assert (mean.n, mean.big_n) == (10, 20)
    assert audits_to_halve(mean) is None  # var(f)/N = 0.012 alone is over a quarter of 0.021


def test_audits_to_halve_by_hand() -> None:
    # N = 1000 at 0.6: a = 0.24 / 1000 = 0.00024; b = 0.09 from n = 10, so the variance is 0.00924;
    # a quarter is 0.00231, b / n' = 0.00207, n' = 0.09 / 0.00207 = 43.48 -> 44 audits, 34 more.
    mean = ppi_mean([1.0] * 5 + [0.0] * 5, [1.0] * 6 + [0.0] * 4, [1.0] * 600 + [0.0] * 400)
    assert audits_to_halve(mean) == 34
    # Every audit agreeing with the judge: no spread for audits to shrink.
    assert audits_to_halve(ppi_mean([1.0, 0.0], [1.0, 0.0], [1.0] * 600 + [0.0] * 400)) is None


def test_validated_score_of_a_system_by_hand() -> None:
    records = judged("s", 12, 8)
    for i in range(6):  # audit six passes (the person fails p5) and four fails
        records[i] = audited(records[i], "fail" if i == 5 else "pass")
    for i in range(12, 16):
        records[i] = audited(records[i], "fail")
    found = validated_score(records)
    assert found is not None
    half = Z95 * math.sqrt(0.021)
    assert found.estimate == pytest.approx(0.5)
    assert found.ci_low == pytest.approx(0.5 - half, abs=1e-6)
    assert found.ci_high == pytest.approx(0.5 + half, abs=1e-6)
    assert found.audits == 10 and found.more_audits_to_halve is None


def test_answers_the_judge_did_not_decide_count_as_in_the_raw_score() -> None:
    # The 20 decided answers above plus a settled adjudicate (a person passed it), an undecided one,
    # and an error (left out): (1 + 20 * 0.5) / 22, the standard error 20/22 of sqrt(0.021).
    records = judged("s", 12, 8)
    for i in range(6):
        records[i] = audited(records[i], "fail" if i == 5 else "pass")
    for i in range(12, 16):
        records[i] = audited(records[i], "fail")
    settled = make_record("s", "a0", "adjudicate")
    settled = msgspec.structs.replace(settled, decision=make_decision(settled, "pass", reviewer="bo"))
    records += [settled, make_record("s", "a1", "adjudicate"), make_record("s", "e0", "error")]
    found = validated_score(records)
    assert found is not None
    half = Z95 * math.sqrt(0.021) * 20 / 22
    assert found.estimate == pytest.approx(11 / 22, abs=1e-6)
    assert (found.ci_low, found.ci_high) == pytest.approx((11 / 22 - half, 11 / 22 + half), abs=1e-6)


def test_too_few_audits_give_no_validated_score_and_bounds_stay_in_0_1() -> None:
    records = judged("s", 3, 1)
    assert validated_score(records) is None
    records[0] = audited(records[0], "pass")
    assert validated_score(records) is None  # one audit: the rectifier's spread is unknown
    records[1] = audited(records[1], "fail")
    found = validated_score(records)
    assert found is not None and 0.0 <= found.ci_low <= found.estimate <= found.ci_high <= 1.0


def test_totals_json_carries_the_validated_score_beside_the_raw_one() -> None:
    records = judged("s", 12, 8) + judged("t", 2, 2)
    for i in range(6):
        records[i] = audited(records[i], "fail" if i == 5 else "pass")
    for i in range(12, 16):
        records[i] = audited(records[i], "fail")
    totals = msgspec.json.decode(totals_json(compute_totals(records)))
    s, t = totals["systems"]
    assert s["score"] == 0.6
    assert s["validated_score"] == {
        "estimate": 0.5,
        "ci_low": round(0.5 - Z95 * math.sqrt(0.021), 6),
        "ci_high": round(0.5 + Z95 * math.sqrt(0.021), 6),
        "audits": 10,
        "more_audits_to_halve": None,
    }
    assert "validated_score" not in t  # too few audits: no such key, as before audits existed
    assert totals["all"]["validated_score"]["audits"] == 10
