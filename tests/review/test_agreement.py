"""Fleiss' kappa against a published worked example, and the T1 audit's figures, by hand."""

from __future__ import annotations

import pytest

from tabench_dsl.core.records import Audit, JudgeInfo, PanelVote, Record
from tabench_dsl.review.agreement import fleiss_kappa, panel_agreement, t1_audit

#: The worked example of the Wikipedia article "Fleiss' kappa": 14 raters put 10 subjects in 5
#: categories. The article gives P = 0.378, Pe = 0.213 and kappa = 0.210.
WIKIPEDIA = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]


def test_fleiss_kappa_of_the_published_example() -> None:
    # The article's column shares p_j = 0.143 0.200 0.279 0.150 0.229 are these column sums over 140.
    assert [sum(row[j] for row in WIKIPEDIA) for j in range(5)] == [20, 28, 39, 21, 32]
    assert round(fleiss_kappa(WIKIPEDIA), 3) == 0.210  # type: ignore[arg-type]


def test_fleiss_kappa_by_hand_and_its_edges() -> None:
    # Rows (3,0) (2,1) (0,3): P = (1 + 1/3 + 1) / 3 = 7/9; p = (5/9, 4/9); Pe = 41/81;
    # kappa = (63/81 - 41/81) / (40/81) = 0.55.
    assert fleiss_kappa([[3, 0], [2, 1], [0, 3]]) == pytest.approx(0.55)
    assert fleiss_kappa([[2, 0], [0, 2]]) == pytest.approx(1.0)
    assert fleiss_kappa([[1, 1], [1, 1]]) == pytest.approx(-1.0)
    assert fleiss_kappa([]) is None
    assert fleiss_kappa([[3, 0], [3, 0]]) is None  # one category only: chance agreement is certain
    with pytest.raises(ValueError):
        fleiss_kappa([[2, 0], [1, 0]])


def t1_record(system: str, audit: str | None, reason: str = "") -> Record:
    judge = JudgeInfo("openai", "m")
    record = Record(system, "q", "t1", "pass", "T1", "0" * 64, judge)
    if audit is not None:
        record.audit = Audit(audit, reason, judge)  # type: ignore[arg-type]
    return record


def test_t1_precision_with_its_wilson_interval_and_the_disagreements() -> None:
    records = [t1_record(f"s{i}", "pass") for i in range(8)]
    records += [t1_record("s8", "fail", "says NOT"), t1_record("s9", "adjudicate"), t1_record("s10", None)]
    found = t1_audit(records)
    assert found is not None
    assert (found.audited, found.n, found.agreed, found.undecided) == (10, 9, 8, 1)
    assert found.precision == pytest.approx(8 / 9)
    # Wilson, z = 1.96: centre (8/9 + 1.9208/9) / (1 + 3.8415/9) = 0.7727; half 0.2153 -> 0.5650-0.9802
    assert (found.ci_low, found.ci_high) == (pytest.approx(0.5650, abs=1e-4), pytest.approx(0.9802, abs=1e-4))
    assert [(d.system, d.reason) for d in found.disagreements] == [("s8", "says NOT")]
    assert t1_audit([t1_record("s", None)]) is None


def panel_record(question: str, verdicts: list[str]) -> Record:
    judge = JudgeInfo("panel", "m")
    record = Record("s", question, "t2", "pass", "r", "0" * 64, judge)
    record.panel = [PanelVote(JudgeInfo("x", f"j{i}"), v, "r") for i, v in enumerate(verdicts)]  # type: ignore[arg-type]
    return record


def test_fleiss_counts_only_answers_every_judge_of_the_largest_panel_decided() -> None:
    # Three judges on h1 (one errored) and h2 (all decided), two judges on h3 and h4.
    records = [
        panel_record("h1", ["pass", "pass", "error"]),
        panel_record("h2", ["pass", "pass", "fail"]),
        panel_record("h3", ["pass", "pass"]),
        panel_record("h4", ["fail", "fail"]),
    ]
    found = panel_agreement(records)
    assert found is not None and found.answers == 4
    # Only h2 counts: h1 has an error vote, h3 and h4 a smaller panel than the file's largest (3).
    assert (found.rated, found.kappa) == (1, fleiss_kappa([[2, 1]]))
    # With h2 undecided too, no answer of the largest panel counts: the smaller panel's answers
    # do not stand in for it.
    records[1] = panel_record("h2", ["pass", "adjudicate", "fail"])
    found = panel_agreement(records)
    assert found is not None and (found.rated, found.kappa) == (0, None)
