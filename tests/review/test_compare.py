"""Is system A better than system B? The pairwise comparison in totals, checked by hand.

The table of systems `alpha` and `beta` is the published paired example in tests/review/test_stats.py
(a = 59, b = 6, c = 16, d = 80: Newcombe interval -0.1186 to -0.0046, McNemar exact p = 0.05248),
so the figures totals print can be read off a book.
"""

from __future__ import annotations

import json

import pytest

from tabench_dsl.cli import main
from tabench_dsl.core.records import Decision, JudgeInfo, Record
from tabench_dsl.review.compare import ALPHA, MAX_SYSTEMS, compare_systems
from tabench_dsl.review.totals import compute_totals

JUDGE = JudgeInfo(backend="openai", model="m")


def rec(system: str, question: str, verdict: str, **extra) -> Record:
    return Record(system, question, "t2", verdict, "r", "h", JUDGE, **extra)


def book_records() -> list[Record]:
    """alpha and beta paired as (59 both pass, 6 alpha only, 16 beta only, 80 neither) on q000-q160;
    gamma passes all 161. beta's "not pass" are half fail, half adjudicate (both count as not pass).
    Then q161: alpha error, beta and gamma pass (left out of every pair with alpha)."""
    records = []
    plan = [("pass", "pass")] * 59 + [("pass", "fail")] * 6
    plan += [("fail", "pass")] * 16 + [("fail", "fail")] * 80
    for i, (alpha, beta) in enumerate(plan):
        q = f"q{i:03d}"
        records.append(rec("alpha", q, alpha))
        records.append(rec("beta", q, "adjudicate" if beta == "fail" and i % 2 else beta))
        records.append(rec("gamma", q, "pass"))
    records += [rec("alpha", "q161", "error", cause="transport"), rec("beta", "q161", "pass")]
    records.append(rec("gamma", "q161", "pass"))
    return records


def test_pair_figures_match_the_published_example() -> None:
    comparisons = compare_systems(book_records())
    ab, ac, bc = comparisons.pairs
    assert (ab.a, ab.b) == ("alpha", "beta")
    # q161 is left out (alpha has an error there): 161 paired questions.
    assert (ab.questions, ab.both_pass, ab.a_only, ab.b_only, ab.neither) == (161, 59, 6, 16, 80)
    assert ab.score_a == round(65 / 161, 6) and ab.score_b == round(75 / 161, 6)
    assert ab.diff == pytest.approx(-0.0621, abs=5e-5)
    assert (ab.ci_low, ab.ci_high) == pytest.approx((-0.1186, -0.0046), abs=5e-5)
    assert ab.p_value == 2 * 110056 / 2**22
    # beta and gamma share q161 as well: 162 questions, gamma passes 96 + ... all of them.
    assert (bc.a, bc.b, bc.questions, bc.a_only, bc.b_only) == ("beta", "gamma", 162, 0, 86)
    assert (ac.questions, ac.a_only, ac.b_only) == (161, 0, 96)
    # Holm over 3 pairs: the two tiny p-values take factors 3 and 2; alpha-beta's comes last with
    # factor 1, so its adjusted p is its own, 0.0525 > 0.05: not significant. The others are.
    assert ac.p_holm == pytest.approx(3 * 2 / 2**96) and bc.p_holm == pytest.approx(2 * 2 / 2**86)
    assert ab.p_holm == ab.p_value
    assert [p.significant for p in (ab, ac, bc)] == [False, True, True]
    assert ALPHA == 0.05


def test_a_human_decision_counts_as_its_verdict() -> None:
    # alpha's q065 (a discordant "beta only" question: alpha failed) is made adjudicate and decided pass.
    records = [r for r in book_records() if not (r.system == "alpha" and r.question == "q065")]
    decision = Decision("alpha", "q065", "pass", "h", "ann", "2026-12-01T00:00:00Z")
    records.append(rec("alpha", "q065", "adjudicate", decision=decision))
    ab = compare_systems(records).pairs[0]
    assert (ab.both_pass, ab.a_only, ab.b_only) == (60, 6, 15)


def test_too_many_systems_are_not_compared() -> None:
    records = [rec(f"s{i:02d}", "q", "pass") for i in range(MAX_SYSTEMS + 1)]
    comparisons = compare_systems(records)
    assert comparisons.pairs == []
    assert comparisons.skipped == f"{MAX_SYSTEMS + 1} systems: pairwise comparison is made for at most 30"


def test_one_system_has_no_pair() -> None:
    assert compare_systems([rec("solo", "q", "pass")]).pairs == []


def write(path, records) -> None:
    from tabench_dsl.core.records import record_encoder

    path.write_bytes(b"".join(record_encoder.encode(r) + b"\n" for r in records))


def test_totals_cli_marks_the_significant_pairs(tmp_path, capsys) -> None:
    results = tmp_path / "run.jsonl"
    write(results, book_records())
    assert main(["totals", str(results)]) == 0
    out = capsys.readouterr().out
    assert "Systems compared pairwise" in out
    ab = next(line for line in out.splitlines() if "alpha" in line and "beta" in line)
    assert "-6.2" in ab and "-11.9 to -0.5" in ab and "0.05248" in ab and "*" not in ab
    ac = next(line for line in out.splitlines() if "alpha" in line and "gamma" in line)
    assert "*" in ac


def test_totals_json_carries_the_comparisons(tmp_path, capsys) -> None:
    results = tmp_path / "run.jsonl"
    write(results, book_records())
    assert main(["totals", str(results), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    pairs = data["comparisons"]["pairs"]
    assert [(p["a"], p["b"], p["significant"]) for p in pairs] == [
        ("alpha", "beta", False),
        ("alpha", "gamma", True),
        ("beta", "gamma", True),
    ]
    assert pairs[0]["ci_low"] == pytest.approx(-0.1186, abs=5e-5)
    assert "Newcombe" in data["comparisons"]["method"] and "Holm" in data["comparisons"]["method"]


def test_totals_agree_with_compute_totals() -> None:
    totals = compute_totals(book_records())
    assert len(totals.comparisons.pairs) == 3


def test_report_marks_the_significant_pairs(tmp_path, capsys) -> None:
    results = tmp_path / "run.jsonl"
    write(results, book_records())
    out = tmp_path / "report.html"
    assert main(["report", str(results), "--html", str(out)]) == 0
    table = out.read_text(encoding="utf-8").split('<table id="pairs">', 1)[1].split("</table>", 1)[0]
    rows = table.split("</tr>")[1:4]
    assert "<td>-6.2</td><td>-11.9 to -0.5</td><td>0.05248</td><td>0.05248</td><td>no</td>" in rows[0]
    assert 'class="significant"' not in rows[0]
    assert all('class="significant"' in row and "yes *" in row for row in rows[1:])
