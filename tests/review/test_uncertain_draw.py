"""Audits drawn where the judge was unsure: the signs of doubt, the inclusion probabilities, the
systematic draw, the inverse-probability validated score, and `adjudicate --audit N --by
uncertainty` through main(argv)."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st
from support.make_results import make_record, write_results

from tabench_dsl.cli import main
from tabench_dsl.core.records import Attempt, JudgeInfo, PanelVote
from tabench_dsl.review.uncertain_draw import doubts, inclusion_probabilities, systematic_draw
from tabench_dsl.review.validated import active_ppi_mean, ppi_mean
from tabench_dsl.store.decisions import load_decisions

BUILTIN = JudgeInfo(backend="builtin", model="lexical", language_model=False)


def test_each_sign_of_doubt_is_read_from_the_record() -> None:
    judged = make_record("a", "q", "pass")
    assert doubts(judged, "Ingest") == []
    stern = msgspec.structs.replace(judged, attempts=[*judged.attempts, Attempt("stern", "{}", 1.0)])
    assert doubts(stern, None) == ["stern"]
    reask = msgspec.structs.replace(judged, attempts=[*judged.attempts, Attempt("format", "{}", 1.0)])
    assert doubts(reask, None) == ["re-ask"]
    votes = [PanelVote(judged.judge, verdict, "") for verdict in ("pass", "fail")]
    assert doubts(msgspec.structs.replace(judged, repeats=votes), None) == ["repeat split"]
    assert doubts(msgspec.structs.replace(judged, panel=votes), None) == ["panel split"]
    agreeing = [PanelVote(judged.judge, "pass", "")] * 2
    assert doubts(msgspec.structs.replace(judged, panel=agreeing, repeats=agreeing), None) == []
    t1 = make_record("a", "q", "t1", answer="Earley " + "and much more besides " * 3)
    assert doubts(t1, "Earley") == ["long T1 pass"]
    assert doubts(t1, t1.answer) == []
    near = msgspec.structs.replace(judged, judge=BUILTIN, reason="names 2 of 4 elements; scoring needs 3")
    far = msgspec.structs.replace(near, reason="names 0 of 4 elements; scoring needs 3")
    one_missing = msgspec.structs.replace(near, reason="missing 1 of 3 required: `a`")
    assert doubts(near, None) == ["low margin"] and doubts(far, None) == []
    assert doubts(one_missing, None) == ["low margin"]


@settings(derandomize=True, max_examples=200, deadline=None)
@given(st.lists(st.floats(min_value=0.1, max_value=50), min_size=1, max_size=60), st.integers(0, 70))
def test_probabilities_add_up_to_n_none_above_one_and_the_draw_takes_exactly_n(weights, n) -> None:
    probabilities = inclusion_probabilities(weights, n)
    n = min(n, len(weights))
    assert abs(sum(probabilities) - n) < 1e-9
    assert all(0 <= p <= 1 + 1e-12 for p in probabilities)
    below = [(w, p) for w, p in zip(weights, probabilities, strict=True) if p < 1]
    if len(below) > 1:  # proportional to the weight wherever not drawn for certain
        ratios = [p / w for w, p in below]
        assert max(ratios) - min(ratios) < 1e-9
    for start in (0.0, 0.37, 0.999):
        assert len(systematic_draw(probabilities, start)) == n


def test_with_equal_probabilities_the_weighted_estimate_is_the_classic_one() -> None:
    every = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0]
    labels, predicted = [1.0, 1.0, 0.0, 0.0], [1.0, 0.0, 1.0, 0.0]
    classic = ppi_mean(labels, predicted, every)
    weighted = active_ppi_mean(labels, predicted, [0.4] * 4, every)
    assert abs(classic.theta - weighted.theta) < 1e-12
    # By hand: mean f = 0.6; rectifiers 0, 1, -1, 0 weighted by 1/0.4 over N = 10: (0 + 2.5 - 2.5) / 10.
    assert abs(weighted.theta - 0.6) < 1e-12


def test_an_uncertainty_audit_records_its_probability_and_favours_doubt(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    records = [make_record("a", f"q{i:02}", "pass") for i in range(20)]
    records[3] = msgspec.structs.replace(
        records[3], attempts=[*records[3].attempts, Attempt("stern", "{}", 1.0)]
    )
    results = write_results(tmp_path / "run.jsonl", records)
    monkeypatch.setattr(sys, "stdin", io.StringIO("f\n\n" * 4))
    args = [
        "adjudicate",
        str(results),
        "--audit",
        "4",
        "--seed",
        "1",
        "--by",
        "uncertainty",
        "--reviewer",
        "ann",
    ]
    assert main(args) == 0
    assert "drawn by uncertainty: 1 with a sign the judge was unsure" in capsys.readouterr().out
    decisions = load_decisions(tmp_path / "run.decisions.jsonl")
    chances = {d.question: d.inclusion_probability for d in decisions}
    # Weights: 5 for q03, 1 for the 19 others (24 in all): q03 gets 4 * 5/24, the others 4/24.
    assert abs(chances["q03"] - 20 / 24) < 1e-12
    assert all(abs(p - 4 / 24) < 1e-12 for q, p in chances.items() if q != "q03")
    assert main(["totals", str(results), "--json"]) == 0
    validated = json.loads(capsys.readouterr().out)["all"]["validated_score"]
    assert validated["audits"] == 4 and validated["estimate"] < 1.0
