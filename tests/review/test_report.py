"""The static report: totals, charts, answers in reading order, escaping, the cap, the command line."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

import msgspec
import pytest
from support.make_results import make_record, sha, small_results, write_battery, write_results

from tabench_dsl.cli import main
from tabench_dsl.core.records import Decision
from tabench_dsl.review.report import render_report
from tabench_dsl.review.templating import csp_source
from tabench_dsl.review.viewer.charts import COLOURS
from tabench_dsl.review.viewer.run import compile_battery_at, load_run
from tabench_dsl.store.decisions import append_decision


@pytest.fixture
def results(tmp_path: Path) -> Path:
    return write_results(tmp_path / "run.jsonl", small_results())


def answers_in(html: str) -> list[tuple[str, str, str]]:
    """(verdict, system, question) of each answer block, in page order."""
    found = re.findall(
        r'<details class="answer" data-verdict="(\w+)" data-system="([^"]+)">'
        r"<summary>.*?</b> · ([\w.-]+) ",
        html,
    )
    return [(v, s, q) for v, s, q in found]


def test_report_has_totals_charts_and_answers_needing_a_reader_first(results: Path) -> None:
    html = render_report(load_run(results))
    assert html.startswith("<!doctype html>") and html.rstrip().endswith("</html>")
    assert (
        '<tr><td class="l">agent-a</td><td>4</td><td>2</td><td>1</td><td>1</td><td>0</td><td>–</td>'
        "<td>50.0%</td>"
    ) in html
    assert html.count("<svg") == 2 and 'data-question="h03"' in html
    assert answers_in(html) == [
        ("adjudicate", "agent-a", "h04"),
        ("adjudicate", "agent-b", "h02"),
        ("error", "agent-b", "h03"),
        ("fail", "agent-a", "h03"),
        ("fail", "agent-b", "h04"),
        ("pass", "agent-a", "h01"),
        ("pass", "agent-a", "h02"),
        ("pass", "agent-b", "h01"),
    ]
    assert "All 8 answers" in html and "No battery given" in html
    assert "Facets observed: erroneous_assertion 2 · missing_minor 1</p>" in html
    assert "contradiction: the judge said fail" in html
    assert "T1 token-subset pass: no judge call." in html


def test_report_escapes_every_piece_of_record_text(tmp_path: Path) -> None:
    evil_system = '"><script>alert(1)</script>'
    path = write_results(
        tmp_path / "run.jsonl",
        [*small_results(), make_record(evil_system, "h01", "fail", answer="</pre></details><b>bold</b>")],
    )
    html = render_report(load_run(path))
    assert "<img" not in html and "window.__pwned=2</script>" not in html and "alert(1)</script>" not in html
    assert "&lt;img src=x onerror=&#34;window.__pwned=1&#34;&gt;" in html
    assert "&lt;/pre&gt;&lt;/details&gt;&lt;b&gt;bold&lt;/b&gt;" in html
    assert html.count("<script>") == 1  # the report's own filter script
    assert not re.search(r'(src|href)="(https?:)?//', html)  # nothing fetched from anywhere


def test_report_policy_allows_exactly_the_style_and_script_it_carries(results: Path) -> None:
    page = render_report(load_run(results))
    policy = unescape(re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">', page)[1])
    sources = dict(part.strip().split(" ", 1) for part in policy.split(";"))
    style = re.search(r"<style>(.*?)</style>", page, re.S)[1]
    script = re.search(r"<script>(.*?)</script>", page, re.S)[1]
    assert sources == {
        "default-src": "'none'",
        "img-src": "data:",
        "style-src": csp_source(style),
        "script-src": csp_source(script),
    }
    # The outcome colours are the charts' own, not a copy in the style sheet.
    assert all(f".{name}{{background:{colour}}}" in style for name, colour in COLOURS.items())


def test_report_shows_control_and_bidi_characters_as_escapes(tmp_path: Path) -> None:
    bidi, esc = "agent\u202etxt.exe", "agent\x1b[2J"
    path = write_results(
        tmp_path / "run\u202e.jsonl",
        [
            make_record(bidi, "h01", "adjudicate", answer="ok \u202eevil\u2066 bell\x07 \x9b\nline two"),
            make_record(esc, "h02", "fail"),
        ],
    )
    html = render_report(load_run(path))
    assert "<b>agent&lt;U+202E&gt;txt.exe</b> · h01" in html and "<b>agent\\x1b[2J</b> · h02" in html
    assert "<pre>ok &lt;U+202E&gt;evil&lt;U+2066&gt; bell\\x07 \\x9b\nline two</pre>" in html
    assert "<title>tabench report: run&lt;U+202E&gt;.jsonl</title>" in html
    assert '<tr><td class="l">agent&lt;U+202E&gt;txt.exe</td>' in html
    # Filter values keep the name as it is, so the filter still matches its answers.
    assert f'<option value="{bidi}">agent&lt;U+202E&gt;txt.exe</option>' in html
    assert f'data-system="{bidi}"' in html
    shown_text = re.sub(r'(value|data-system)="[^"]*"', "", html)
    assert not re.search(
        "[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u200b-\u200f\u202a-\u202e\u2066-\u2069]", shown_text
    )


def test_a_large_run_is_cut_and_says_so(results: Path) -> None:
    html = render_report(load_run(results), max_answers=3)
    assert answers_in(html) == [
        ("adjudicate", "agent-a", "h04"),
        ("adjudicate", "agent-b", "h02"),
        ("error", "agent-b", "h03"),
    ]
    assert (
        "Showing 3 of 8 answers: adjudicate, error and fail first, then pass, taken evenly from every system."
    ) in html
    # Within a verdict, the cut takes from every system in turn, then shows them grouped by system.
    html = render_report(load_run(results), max_answers=5)
    assert answers_in(html)[3:] == [("fail", "agent-a", "h03"), ("fail", "agent-b", "h04")]
    many = [make_record(f"s{s}", f"q{q:02d}", "fail") for s in range(3) for q in range(10)]
    html = render_report(load_run(write_results(results.with_name("many.jsonl"), many)), max_answers=6)
    assert answers_in(html) == [("fail", f"s{s}", f"q{q:02d}") for s in range(3) for q in range(2)]


def test_decisions_and_prompts_appear_with_a_battery(tmp_path: Path) -> None:
    battery = write_battery(tmp_path / "battery")
    compiled = compile_battery_at(battery)
    stamped = [
        msgspec.structs.replace(r, prompt_sha256=compiled.questions[r.question].sha256)
        for r in small_results()
    ]
    path = write_results(tmp_path / "run.jsonl", stamped)
    append_decision(
        path.with_name("run.decisions.jsonl"),
        Decision(
            system="agent-a",
            question="h04",
            verdict="pass",
            prompt_sha256=compiled.questions["h04"].sha256,
            reviewer="ana",
            time="2026-11-29T14:00:00Z",
            note="same <meaning>",
        ),
    )
    append_decision(
        path.with_name("run.decisions.jsonl"),
        Decision(
            system="agent-b",
            question="h02",
            verdict="fail",
            prompt_sha256=sha("old"),
            reviewer="bo",
            time="2026-11-29T14:01:00Z",
        ),
    )
    html = render_report(load_run(path, battery=battery))
    assert '<span class="badge pass human">human pass</span>' in html
    assert "Decided pass by ana at 2026-11-29T14:00:00Z – same &lt;meaning&gt;" in html
    assert "Decision ignored: agent-b / h02: the prompt changed since the decision (sha256 differs)." in html
    assert '<details id="prompt-h04"><summary>h04 SYSTEM' in html
    assert "&#34;answer_gold&#34;: &#34;No &lt;b&gt;Summarize&lt;/b&gt; stage exists&#34;" in html
    assert '<a href="#prompt-h04">SYSTEM prompt</a>' in html
    assert "No battery given" not in html and "sha256 mismatch" not in html


def test_report_command_writes_the_page(results: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "report.html"
    assert main(["report", str(results), "--html", str(out), "--max-answers", "5"]) == 0
    assert capsys.readouterr().out == f"wrote {out}: 8 answers (5 of 8 answers in full)\n"
    assert "Showing 5 of 8 answers" in out.read_text(encoding="utf-8")


def test_report_command_usage_errors(results: Path, tmp_path: Path, capsys) -> None:
    assert main(["report", str(tmp_path / "nope.jsonl"), "--html", str(tmp_path / "r.html")]) == 2
    assert capsys.readouterr().err == f"tabench: error: {tmp_path / 'nope.jsonl'}: no such results file\n"
    assert main(["report", str(results), "--html", str(tmp_path / "r.html"), "--max-answers", "-1"]) == 2
    assert "--max-answers -1: must be 0 or more" in capsys.readouterr().err
    assert main(["report", str(results), "--html", str(tmp_path / "no" / "r.html")]) == 2
    assert "its folder does not exist" in capsys.readouterr().err
    bad = write_battery(tmp_path / "bad")
    (bad / "memos.rubric").write_text('question h01 {\n  prompt "p"\n  gloden "g"\n}\n', encoding="utf-8")
    assert main(["report", str(results), "--html", str(tmp_path / "r.html"), "--battery", str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad / 'memos.rubric'}:3:3: " in err and "Traceback" not in err
    assert not (tmp_path / "r.html").exists()


def test_report_shows_the_judge_against_the_audits(results: Path) -> None:
    from tabench_dsl.review.decisions import make_decision

    records = {r.key: r for r in small_results()}
    path = results.with_name("run.decisions.jsonl")
    for key, verdict in ((("agent-a", "h02"), "fail"), (("agent-b", "h01"), "pass")):
        append_decision(
            path, make_decision(records[key], verdict, reviewer="ana", note="<b>odd</b>", audit=True)
        )
    html = render_report(load_run(results))
    assert "<h2>Judge against blind human audits</h2>" in html
    table = html[
        html.index('<table id="audits">') : html.index("</table>", html.index('<table id="audits">'))
    ]
    assert '<td class="l">all</td><td>2</td><td>50.0%' in table
    assert '<td class="l">tier t2</td>' in table
    misses = html[html.index('<table id="audit-disagreements">') :]
    assert '<td class="l">agent-a</td><td class="l">h02</td><td class="l">pass</td>' in misses
    assert "&lt;b&gt;odd&lt;/b&gt;" in misses and "<b>odd</b>" not in html
    assert "<h2>Judge against blind human audits</h2>" not in render_report(
        load_run(write_results(results.with_name("b.jsonl"), small_results()))
    )
