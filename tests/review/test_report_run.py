"""`report --html` reads every record light and whole only the answers shown (`review.report_run`):
the page is the one the whole read gives (`viewer.run.load_run`), byte for byte."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import msgspec
import pytest
from support.make_results import decision_on, many_results, small_results, write_battery, write_results

from tabench_dsl.cli import main
from tabench_dsl.core.records import Decision, record_encoder
from tabench_dsl.review.audit import answer_sha256
from tabench_dsl.review.decisions import decisions_path
from tabench_dsl.review.report import render_report
from tabench_dsl.review.report_run import report_run
from tabench_dsl.review.viewer.run import load_run

NOW = datetime(2026, 12, 1, tzinfo=UTC)


def decide(record, verdict: str, **extra) -> Decision:
    return decision_on(record, verdict, note="n", **extra)


def pages(path: Path, max_answers: int, **options) -> tuple[str, str]:
    """The page from the whole read and from `report_run`, with the same options."""
    whole = render_report(load_run(path, **options), max_answers=max_answers, now=NOW)
    run, listed = report_run(path, max_answers=max_answers, **options)
    return whole, render_report(run, max_answers=max_answers, now=NOW, listed=listed)


@pytest.fixture
def big(tmp_path: Path) -> Path:
    """600 answers over six systems, re-graded pairs, tags, a bad line, decisions (one stale) and
    an audit that does not check its answer."""
    records = many_results(600, systems=6, seed=5)
    records = [
        msgspec.structs.replace(r, tags=["hard"] if i % 3 == 0 else ["easy"]) for i, r in enumerate(records)
    ]
    regraded = [msgspec.structs.replace(r, verdict="fail", reason="re-graded") for r in records[:40:4]]
    path = write_results(tmp_path / "run.jsonl", records + regraded)
    with open(path, "ab") as f:
        f.write(b"{not json\n")
    undecided = [r for r in records[40:] if r.verdict == "adjudicate"]
    judged = [r for r in records[40:] if r.verdict == "pass" and r.tier == "t2"]
    decisions = [decide(r, "pass") for r in undecided[:5]]
    decisions += [msgspec.structs.replace(decide(undecided[6], "fail"), prompt_sha256="other")]
    decisions += [decide(judged[0], "fail", kind="audit")]
    decisions_path(path).write_bytes(b"".join(record_encoder.encode(d) + b"\n" for d in decisions))
    return path


@pytest.mark.parametrize("max_answers", [0, 25, 1000])
def test_the_page_is_the_whole_read_one(big: Path, max_answers: int) -> None:
    whole, light = pages(big, max_answers)
    assert light == whole
    assert "Decision ignored" in whole and "not a result record" in whole


def test_with_tags_and_a_battery(big: Path, tmp_path: Path) -> None:
    whole, light = pages(big, 30, tags=["hard"])
    assert light == whole
    small = write_results(tmp_path / "small.jsonl", small_results())
    battery = write_battery(tmp_path / "battery")
    whole = render_report(load_run(small, battery=battery), now=NOW)
    run, listed = report_run(small, max_answers=1000, battery=battery)
    assert render_report(run, now=NOW, listed=listed) == whole


def test_an_audit_of_a_changed_answer_reads_the_file_whole(tmp_path: Path) -> None:
    records = small_results()
    path = write_results(tmp_path / "run.jsonl", records)
    pass_ = next(r for r in records if r.verdict == "pass" and r.tier == "t2")
    audits = [
        decide(pass_, "fail", kind="audit", answer_sha256="not the answer's"),
        decide(records[0], "pass", kind="audit", answer_sha256=answer_sha256(records[0])),
    ]
    decisions_path(path).write_bytes(b"".join(record_encoder.encode(d) + b"\n" for d in audits))
    whole, light = pages(path, 1000)
    assert light == whole and "the answer changed since the audit" in whole


def test_a_shown_line_only_the_light_decoder_takes_reads_the_file_whole(tmp_path: Path) -> None:
    records = small_results()
    path = write_results(tmp_path / "run.jsonl", records)
    with open(path, "ab") as f:  # a later record of a pair with an answer that is no text
        f.write(record_encoder.encode(records[1])[:-1] + b', "answer": 5}\n')
    whole, light = pages(path, 1000)
    assert light == whole


def test_the_command_writes_the_same_page(big: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "page.html"
    assert main(["report", str(big), "--html", str(out), "--max-answers", "50"]) == 0
    assert "wrote" in capsys.readouterr().out and "600 answers (50 of 600 answers in full)"
    whole = render_report(load_run(big), max_answers=50, now=NOW)
    stamp = "generated " + NOW.strftime("%Y-%m-%d %H:%M UTC")
    page = out.read_text(encoding="utf-8")
    start = page.index("generated ")
    assert page[:start] + stamp + page[start + len(stamp) :] == whole
