"""The score's range over its errors, by hand."""

from __future__ import annotations

import msgspec
from support.make_results import make_record

from tabench_dsl.review.totals import compute_totals, totals_json
from tabench_dsl.review.totals_tables import render_table


def test_the_range_if_every_error_were_a_fail_or_a_pass() -> None:
    # 2 pass, 1 fail, 1 adjudicate and 2 errors: score 2/4; all fail 2/6, all pass 4/6.
    outcomes = ["pass", "pass", "fail", "adjudicate", "error", "error"]
    records = [make_record("s", f"q{i}", o) for i, o in enumerate(outcomes)]
    records.append(make_record("clean", "q0", "pass"))
    totals = compute_totals(records)
    document = msgspec.json.decode(totals_json(totals))
    clean, s = document["systems"]
    assert s["score"] == 0.5
    assert s["if_errors"] == {"errors": 2, "all_fail": round(2 / 6, 6), "all_pass": round(4 / 6, 6)}
    assert "if_errors" not in clean  # no errors: the key is absent, as before

    from rich.console import Console

    console = Console(width=200, record=True)
    console.print(render_table(totals))
    text = console.export_text()
    assert "Scores if the errors were graded" in text
    assert "50.0%" in text and "33.3%" in text and "66.7%" in text
