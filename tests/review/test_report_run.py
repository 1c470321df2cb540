"""`report --html` reads every record light and whole only the answers shown (`review.report_run`):
the page is the one the whole read gives (`viewer.run.load_run`), byte for byte."""

from __future__ import annotations

import hashlib
import itertools
from datetime import UTC, datetime
from pathlib import Path

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.make_results import decision_on, many_results, small_results, write_battery, write_results

from tabench_dsl.cli import main
from tabench_dsl.core.records import Decision, Record, record_decoder, record_encoder
from tabench_dsl.review.audit import answer_sha256
from tabench_dsl.review.report import render_report
from tabench_dsl.review.report_run import report_run
from tabench_dsl.review.streamed_listing import listing_beside, streamed_listing
from tabench_dsl.review.totals_of import totals_of
from tabench_dsl.review.viewer.run import load_run
from tabench_dsl.store.decisions import decisions_path, load_decisions
from tabench_dsl.store.results import iter_records

NOW = datetime(2026, 12, 1, tzinfo=UTC)


def decide(record, verdict: str, **extra) -> Decision:
    return decision_on(record, verdict, note="n", **extra)


def pages(path: Path, max_answers: int, **options) -> tuple[str, str]:
    """The page from the whole read and from `report_run`, with the same options."""
    whole = render_report(load_run(path, **options), max_answers=max_answers, now=NOW)
    run, listed, totals = report_run(path, max_answers=max_answers, **options)
    return whole, render_report(run, max_answers=max_answers, now=NOW, listed=listed, totals=totals)


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
    run, listed, totals = report_run(small, max_answers=1000, battery=battery)
    assert render_report(run, now=NOW, listed=listed, totals=totals) == whole


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


@pytest.mark.parametrize("processes", ["1", "3"])
@pytest.mark.parametrize("max_answers", [25, 1000])
def test_a_page_streams_its_records_and_holds_none(
    big: Path, max_answers: int, processes: str, monkeypatch
) -> None:
    """The streamed read (`streamed_totals`, `streamed_listing`, in one process or shared out over
    three) gives the page: no record is held but the answers shown, and the whole read is never
    asked for."""
    from tabench_dsl.review import report_run as report_run_module

    monkeypatch.setenv("TABENCH_READ_PROCESSES", processes)

    def never(*args, **kwargs):
        raise AssertionError("read whole")

    monkeypatch.setattr(report_run_module, "load_run", never)
    monkeypatch.setattr(report_run_module, "_light_run", never)
    run, listed, totals = report_run(big, max_answers=max_answers)
    assert run.records == [] and totals is not None and totals.records == 600
    assert len(listed) == min(max_answers, 600)
    monkeypatch.undo()
    whole = render_report(load_run(big), max_answers=max_answers, now=NOW)
    assert render_report(run, max_answers=max_answers, now=NOW, listed=listed, totals=totals) == whole
    assert [d.decision.verdict for d in run.stale] == ["fail"]  # the decision on another prompt


ORDER = {"adjudicate": 0, "error": 1, "fail": 2, "pass": 3}


def reference_listed(records, limit: int):
    """The answers a page lists, worked out by hand from the rule: sorted by pair, each (verdict,
    system) queue its first `limit`, then verdict by verdict, one of each system's queue in turn,
    until `limit`; in reading order (verdict, system, question)."""

    def reading(r):
        verdict = r.decision.verdict if r.decision else r.verdict
        return (ORDER.get(verdict, 9), r.system, r.question)

    if len(records) <= limit:
        return sorted(records, key=reading)
    queues: dict = {}
    for r in sorted(records, key=lambda r: r.key):
        queue = queues.setdefault(reading(r)[:2], [])
        if len(queue) < limit:
            queue.append(r)
    chosen = []
    for rank in sorted({key[0] for key in queues}):
        rows = [queues[key] for key in sorted(queues) if key[0] == rank]
        for i in range(max(map(len, rows))):
            for queue in rows:
                if i < len(queue) and len(chosen) < limit:
                    chosen.append(queue[i])
    return sorted(chosen, key=reading)


def test_records_arriving_in_any_order_are_chosen_by_the_rule() -> None:
    from tabench_dsl.review.report import _ORDER, FairCut

    assert {k: v for k, v in _ORDER.items() if k in ORDER} == ORDER  # the page's verdict order
    records = many_results(900, systems=4, seed=11)
    shuffled = sorted(records, key=lambda r: hashlib.sha256(r.question.encode()).digest())
    for limit in (1, 7, 100, 900, 901):
        cut = FairCut(limit)
        for record in shuffled:
            cut.add(record)
        assert cut.chosen() == reference_listed(records, limit)
        assert all(len(queue) <= limit for queue in cut.queues.values())


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    limit=st.sampled_from([1, 2, 7, 40, 100, 899, 900, 901]),
    cuts=st.lists(st.integers(0, 900), max_size=4),
    seed=st.integers(0, 3),
)
def test_cuts_of_parts_trimmed_then_merged_choose_what_one_cut_chooses(limit, cuts, seed) -> None:
    """A range's cut is trimmed before it is sent back (`FairCut.trim`): whatever the parts, the
    order the records come in within each, and the limit, the merge of the trimmed cuts chooses
    what one cut of every record chooses, and a trimmed cut holds at most `limit` records."""
    from tabench_dsl.review.report import FairCut

    records = many_results(900, systems=4, seed=11 + seed)
    shuffled = sorted(records, key=lambda r: hashlib.sha256(f"{seed}{r.key}".encode()).digest())
    bounds = [0, *sorted(cuts), len(shuffled)]
    parts = []
    for start, stop in itertools.pairwise(bounds):
        cut = FairCut(limit)
        for at, record in enumerate(shuffled[start:stop], start):
            cut.add(record, at)
        cut.trim()
        assert sum(map(len, cut.queues.values())) <= limit
        parts.append(cut)
    first, *later = parts
    for part in later:
        first.merge(part)
    assert first.chosen() == reference_listed(records, limit)
    assert all(shuffled[at] is record for record, at in first.chosen_at())


def test_a_file_growing_while_it_streams_is_read_again(big: Path, monkeypatch) -> None:
    """A grading appending between the totals' read and the answers' read: the page is never the
    totals of one file and the answers of another, but the grown file's, read again."""
    from tabench_dsl.review import report_run as report_run_module

    real = report_run_module.streamed_listing
    later = many_results(30, systems=2, seed=99)
    grown: list[int] = []

    def appended_meanwhile(*args, **kwargs):
        if not grown:
            with open(big, "ab") as f:
                f.write(b"".join(record_encoder.encode(r) + b"\n" for r in later))
            grown.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(report_run_module, "streamed_listing", appended_meanwhile)
    run, listed, totals = report_run(big, max_answers=40)
    assert grown and totals is not None and run.records == []
    monkeypatch.undo()
    whole = load_run(big)
    assert totals.records == len(whole.records)
    assert render_report(run, max_answers=40, now=NOW, listed=listed, totals=totals) == render_report(
        whole, max_answers=40, now=NOW
    )


@pytest.mark.parametrize("max_answers", [25, 1000])
def test_a_file_read_over_three_processes_gives_the_page_one_read_gives(
    tmp_path: Path, max_answers: int, monkeypatch
) -> None:
    """Every record standing (no pair graded twice, no bad line): each range's cut and totals are
    merged, and the page is the whole read's."""
    records = many_results(600, systems=6, seed=7)
    records = [
        msgspec.structs.replace(r, tags=["hard"] if i % 3 else ["easy"]) for i, r in enumerate(records)
    ]
    path = write_results(tmp_path / "run.jsonl", records)
    undecided = [r for r in records if r.verdict == "adjudicate"]
    decisions_path(path).write_bytes(
        b"".join(record_encoder.encode(decide(r, "pass")) + b"\n" for r in undecided[:4])
    )
    monkeypatch.setenv("TABENCH_READ_PROCESSES", "3")
    run, listed, totals = report_run(path, max_answers=max_answers)
    assert run.records == [] and totals is not None
    page = render_report(run, max_answers=max_answers, now=NOW, listed=listed, totals=totals)
    assert page == render_report(load_run(path), max_answers=max_answers, now=NOW)


@pytest.fixture
def streamed_big(big: Path) -> Path:
    """`big` without its audit: its totals are counted as the records stream by (a blind audit
    is counted from the records held), the read that carries the listing."""
    kept = [d for d in load_decisions(decisions_path(big)) if d.kind != "audit"]
    decisions_path(big).write_bytes(b"".join(record_encoder.encode(d) + b"\n" for d in kept))
    return big


def chose(listed: list[tuple[Record, int]]) -> list[tuple]:
    """What the cut chose of each record: the page reads only these of them (and the line whole,
    at the offset given with it)."""
    return [(r.key, r.verdict, r.decision, r.human_audit, r.reviewer_audits, at) for r, at in listed]


@pytest.mark.parametrize("processes", ["1", "3"])
@pytest.mark.parametrize("tags", [None, ["hard"]])
@pytest.mark.parametrize("bad_line", [True, False])
def test_a_file_with_no_index_is_read_once_for_its_totals_and_its_answers_shown(
    streamed_big: Path, processes: str, tags: list[str] | None, bad_line: bool, monkeypatch
) -> None:
    """The totals' reads carry the listing's taker (`Beside`): once the totals are counted, it
    holds the first read's numbering of the pairs' last records and the taker the totals' second
    read of the standing records handed them to (pairs come twice here), and the listing finished
    from it chooses what reads of its own choose. A bad line is named once (a range holding one is
    read again in one process; without it, the ranges' takers are merged). With the totals kept in
    the index there is no such read: nothing is carried, and the listing reads the file itself,
    choosing the same."""
    monkeypatch.setenv("TABENCH_READ_PROCESSES", processes)
    path = streamed_big
    if not bad_line:
        path.write_bytes(path.read_bytes().removesuffix(b"{not json\n"))
    decisions = load_decisions(decisions_path(path))
    alone, stale_alone = streamed_listing(path, decisions, tags=tags, limit=25)
    carried = []
    for _ in range(2):  # the first counts (no index yet), the second reads the totals kept
        beside = listing_beside(decisions, tags=tags, limit=25)
        problems: list[str] = []
        totals_of(path, decisions_path(path), tags=tags, on_problem=problems.append, beside=beside)
        assert len(problems) == bad_line and all("not a result record" in p for p in problems)
        carried.append((beside.last is not None, beside.taker is not None))
        listed, stale = streamed_listing(path, decisions, tags=tags, limit=25, beside=beside)
        assert chose(listed) == chose(alone) and stale == stale_alone
        assert len(listed) == 25 and len(stale) == 1
    lines = path.read_bytes().split(b"\n")
    starts = dict(
        zip(itertools.accumulate((len(line) + 1 for line in lines), initial=0), lines, strict=False)
    )
    last_of = {r.key: r for r in iter_records(path)}
    for record, at in alone:  # each at its pair's last line, the one the page shows
        assert record_decoder.decode(starts[at]) == last_of[record.key]
    assert carried == [(True, True), (False, False)]


@pytest.mark.parametrize("processes", ["1", "3"])
@pytest.mark.parametrize("max_answers", [25, 1000])
def test_the_page_of_one_read_is_the_whole_read_one(
    streamed_big: Path, processes: str, max_answers: int, monkeypatch
) -> None:
    """Totals and answers shown from the one read (pairs graded twice, tags, decisions, one stale,
    a bad line): the page is the whole read's, and again from the totals then kept."""
    monkeypatch.setenv("TABENCH_READ_PROCESSES", processes)
    for options in ({}, {"tags": ["hard"]}, {}):
        whole, light = pages(streamed_big, max_answers, **options)
        assert light == whole
        assert "Decision ignored" in whole and "not a result record" in whole


@pytest.mark.parametrize("processes", ["1", "2"])
def test_an_answer_shown_whose_line_only_the_light_decoder_takes_gives_the_whole_read_page(
    streamed_big: Path, processes: str, monkeypatch
) -> None:
    """The answers shown are read again at their lines' offsets: one whose line the light read took
    but a whole read does not (an answer that is no text) is a bad line to the whole read, so the
    page is the whole read's (that line named, the pair's earlier record standing), not the one
    the light read chose from."""
    monkeypatch.setenv("TABENCH_READ_PROCESSES", processes)
    _, listed, _ = report_run(streamed_big, max_answers=25)
    shown = listed[3]
    lines = streamed_big.read_bytes().split(b"\n")
    at = _last_of(lines, shown.key)
    lines[at] = lines[at].replace(b'"answer":"', b'"answer":7,"was":"', 1)
    streamed_big.write_bytes(b"\n".join(lines))
    whole, light = pages(streamed_big, 25)
    assert light == whole
    assert f"{streamed_big}:{at + 1}: not a result record" in whole
    assert report_run(streamed_big, max_answers=25)[0].records  # read whole, as the page needs


def _key(raw: bytes) -> tuple[str, str] | None:
    try:
        found = msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return None
    return (found.get("system"), found.get("question")) if isinstance(found, dict) else None


def _last_of(lines: list[bytes], key: tuple[str, str]) -> int:
    return max(i for i, raw in enumerate(lines) if _key(raw) == key)


def test_an_answer_shown_on_a_line_with_a_byte_order_mark_is_read_whole(tmp_path: Path) -> None:
    """The first line's byte order mark: the first read drops it to decode the line, and so does
    the read of the answers shown at their lines' offsets (the first line is one of them)."""
    records = many_results(40, systems=2, seed=3)
    path = write_results(tmp_path / "run.jsonl", records)
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    whole, light = pages(path, 10)
    assert light == whole
    run, listed, _ = report_run(path, max_answers=40)
    assert run.records == []  # streamed: not the whole read a shown line no record would force
    assert records[0].answer and records[0].answer in [record.answer for record in listed]
