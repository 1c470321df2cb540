"""`DiskIndex` (records left in the file, filters over integer columns kept in the index) answers
every query with the very bytes `Index(load_run(...))` answers it with: built, loaded back, after
decisions, and over a stale, foreign or truncated index."""

from __future__ import annotations

import os
import re
import sqlite3
from pathlib import Path

import msgspec
import pytest
from support.make_results import (
    HOSTILE_ANSWER,
    make_record,
    many_results,
    small_results,
    write_battery,
    write_results,
)

from tabench_dsl.core.errors import UsageError
from tabench_dsl.core.records import record_encoder
from tabench_dsl.review.decisions import make_decision
from tabench_dsl.review.viewer.column_store import PARTS, standing_columns
from tabench_dsl.review.viewer.disk_index import DiskIndex, load_disk_index
from tabench_dsl.review.viewer.queries import Filters, Index
from tabench_dsl.review.viewer.run import load_run
from tabench_dsl.store.decisions import append_decision
from tabench_dsl.store.results_index import index_path

ENCODE = msgspec.json.Encoder().encode
QUERIES = [
    Filters(),
    *(Filters(verdict=v) for v in ("pass", "fail", "adjudicate", "error", "nothing")),
    *(Filters(tier=t) for t in ("t1", "t2")),
    Filters(cause="malformed"),
    Filters(system="agent-b"),
    Filters(question="h03"),
    Filters(facet="missing_minor"),
    *(Filters(human=h) for h in ("decided", "undecided")),
    *(Filters(audit=a) for a in ("audited", "agree", "disagree")),
    Filters(q="INGEST"),
    Filters(q="<script"),
    Filters(q="answer 1/"),
    Filters(tag="hard"),
    *(Filters(compared=c) for c in ("missing", "flipped")),
    Filters(verdict="adjudicate", system="agent-a", q="ingest"),
]


def mixed_results(path: Path) -> Path:
    """Every outcome, a tag, facets, re-graded pairs, a BOM, a blank line and two bad lines."""
    records = small_results()
    records[1] = msgspec.structs.replace(records[1], tags=["hard", "memory"])
    records[5] = msgspec.structs.replace(records[5], tags=["hard"])
    records += many_results(60, systems=3)
    lines = [record_encoder.encode(r) for r in records]
    lines[0] = b"\xef\xbb\xbf" + lines[0]
    lines[3:3] = [b"", b"{not json", b'{"system": "x"}']
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def decide_some(path: Path) -> None:
    """A decision that holds, one that is stale and a blind audit, as the viewer would append."""
    run = load_run(path)
    adjudicate = [r for r in run.records if r.verdict == "adjudicate"]
    decided = [r for r in run.records if r.verdict == "pass"]
    dfile = run.decisions_path
    append_decision(dfile, make_decision(adjudicate[0], "pass", reviewer="ana"))
    append_decision(dfile, make_decision(decided[0], "fail", reviewer="ana"))  # stale: not adjudicate
    append_decision(dfile, make_decision(decided[1], "fail", reviewer="bo", audit=True))


def answers(index: Index, keys: list[tuple[str, str]]) -> list[bytes]:
    """Everything the page can ask, each as the JSON bytes the API sends."""
    out = [ENCODE(index.meta()), ENCODE(index.totals_payload()), ENCODE(index.systems_page("", 0, 50))]
    for f in QUERIES:
        for offset, limit in ((0, 50), (3, 2), (40, 500)):
            out.append(ENCODE(index.page(f, offset, limit)))
    out += [ENCODE(index.detail(*key)) for key in keys]
    out += [ENCODE(index.audit_sample(n, seed)) for n, seed in ((1, 0), (5, 3), (200, 1))]
    return out


def untimed(answers: list[bytes]) -> list[bytes]:
    return [re.sub(rb'"time":"[^"]*"', b'"time":""', answer) for answer in answers]


def both(path: Path, **options) -> tuple[Index, DiskIndex]:
    price = options.pop("price", None)
    memory = Index(load_run(path, **options), reviewer="ana")
    memory.run.price = price
    return memory, load_disk_index(path, reviewer="ana", price=price, **options)


def assert_same(path: Path, **options) -> DiskIndex:
    memory, disk = both(path, **options)
    keys = [r.key for r in memory.records]
    assert len(disk.records) == len(keys)
    assert answers(disk, keys) == answers(memory, keys)
    assert disk.run.problems == memory.run.problems and disk.run.stale == memory.run.stale
    return disk


@pytest.mark.parametrize("processes", ["1", "3"])
@pytest.mark.parametrize("decided", [False, True])
def test_every_answer_is_the_in_memory_index_s_built_and_loaded(
    tmp_path: Path, monkeypatch, decided: bool, processes: str
) -> None:
    """Built (its totals counted in one process or shared out over three) and loaded back."""
    monkeypatch.setenv("TABENCH_READ_PROCESSES", processes)
    path = mixed_results(tmp_path / "run.jsonl")
    if decided:
        decide_some(path)
    assert_same(path)  # builds the columns and the totals, and keeps them
    assert index_path(path).exists()
    assert_same(path)  # loaded back from the index
    assert_same(path, tags=["hard"])
    assert_same(path, battery=write_battery(tmp_path / "battery"))


def test_decisions_in_the_viewer_are_the_in_memory_index_s(tmp_path: Path) -> None:
    """The same decisions made in each kind of index (on two copies of one file) leave every
    answer the same; a decision on a record that is not adjudicate is refused by both."""
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    first, second = (mixed_results(tmp_path / name / "run.jsonl") for name in ("a", "b"))
    memory = Index(load_run(first), reviewer="ana")
    disk = load_disk_index(second, reviewer="ana")
    keys = [r.key for r in memory.records]
    waiting = [r.key for r in memory.records if r.verdict == "adjudicate"]
    passed = next(r for r in memory.records if r.verdict == "pass")
    for index in (memory, disk):
        index.page(Filters(human="undecided"))  # a kept filtered list must not outlive a decision
        index.totals()
        index.decide(*waiting[1], "fail", note="n")
        index.decide(*waiting[2], "pass")
        index.record_audit(passed.system, passed.question, "fail")
        with pytest.raises(UsageError, match="not adjudicate"):
            index.decide(passed.system, passed.question, "fail")
    assert disk.awaiting() == memory.awaiting() == len(waiting) - 2
    # meta names each its own file; a decision's time is the second it was made in
    assert untimed(answers(disk, keys)[1:]) == untimed(answers(memory, keys)[1:])
    assert_same(second)  # and a fresh view of the file decided through the disk index


def test_a_blind_audit_of_an_answer_since_changed_counts_in_neither_index(tmp_path: Path) -> None:
    """The totals the viewer counts from the records' lines read them whole when an audit names
    its answer: an answer graded again (same prompt, still passed) makes the audit stale."""
    path = mixed_results(tmp_path / "run.jsonl")
    run = load_run(path)
    passed = next(r for r in run.records if r.verdict == "pass" and r.answer)
    append_decision(run.decisions_path, make_decision(passed, "fail", reviewer="bo", audit=True))
    again = msgspec.structs.replace(passed, answer=passed.answer + " (graded again)")
    with open(path, "ab") as f:
        f.write(record_encoder.encode(again) + b"\n")
    disk = assert_same(path)
    row = next(s for s in disk.totals().systems if s.system == passed.system)
    assert row.audit is msgspec.UNSET or row.audit.n == 0


def test_the_standing_record_of_each_pair_in_order_from_full_and_sparse_systems(tmp_path: Path) -> None:
    """Records in no order, pairs graded two or three times: the viewer lists each pair's last
    record in (system, question) order, for a system that answered every question (its
    questions put in order by a table) and for one that answered a few (by a sort)."""
    import random

    shuffle = random.Random(7).shuffle
    questions = [f"q{n:02d}" for n in range(40)]
    graded = [("zeta-full", q) for q in questions] + [("alpha-few", q) for q in ("q31", "q02", "q17")]
    records = []
    for round_ in range(3):
        chosen = graded if round_ == 0 else graded[round_::3]
        outcomes = ("pass", "fail", "adjudicate")
        records += [
            make_record(s, q, outcomes[(round_ + n) % 3], answer=f"round {round_}")
            for n, (s, q) in enumerate(chosen)
        ]
    shuffle(records)
    records.sort(key=lambda r: r.answer)  # each pair's rounds in file order, pairs shuffled within a round
    path = write_results(tmp_path / "run.jsonl", records)
    disk = assert_same(path)
    listed = [disk.records[position] for position in range(len(disk.records))]
    assert [r.key for r in listed] == sorted({r.key for r in records})
    last = {r.key: r.answer for r in records}
    assert [r.answer for r in listed] == [last[r.key] for r in listed]
    assert {r.answer for r in listed} == {"round 0", "round 1", "round 2"}


def test_a_part_of_the_kept_columns_missing_is_read_again(tmp_path: Path) -> None:
    path = mixed_results(tmp_path / "run.jsonl")
    assert_same(path)
    with sqlite3.connect(index_path(path)) as db:
        db.execute("DELETE FROM value_of WHERE variant LIKE 'viewer-columns-verdict-0:%'")
    db.close()
    assert_same(path)  # the columns read again from the file when the page is asked for, kept again
    with sqlite3.connect(index_path(path)) as db:
        kept = {row[0].split(":")[0] for row in db.execute("SELECT variant FROM value_of")}
    db.close()
    assert {f"viewer-columns-{part}-0" for part in PARTS} | {"viewer-columns"} <= kept


def test_a_stale_truncated_or_foreign_index_changes_nothing(tmp_path: Path) -> None:
    path = mixed_results(tmp_path / "run.jsonl")
    assert_same(path)
    with open(path, "ab") as f:  # appended: the kept columns no longer cover the file
        f.write(record_encoder.encode(make_record("agent-c", "h09", "adjudicate", answer="new")) + b"\n")
    assert assert_same(path).find("agent-c", "h09").answer == "new"
    text = path.read_bytes()
    path.write_bytes(text[: len(text) // 2].rsplit(b"\n", 1)[0] + b"\n")  # truncated
    assert_same(path)
    other = write_results(tmp_path / "other.jsonl", small_results())
    assert_same(other)
    os.replace(index_path(other), index_path(path))  # an index of another file beside this one
    assert_same(path)
    other.write_bytes(path.read_bytes().replace(b"Ingest", b"Ingeso"))  # same size, other bytes
    os.utime(other, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns))
    assert_same(other)


def test_the_columns_hold_no_text_of_a_record(tmp_path: Path) -> None:
    path = write_results(tmp_path / "run.jsonl", small_results())
    assert len(standing_columns(path)) == len({record.key for record in small_results()})
    kept = index_path(path).read_bytes()  # every part the index keeps of the columns
    assert b"viewer-columns-offsets-0:" in kept
    assert HOSTILE_ANSWER.encode() not in kept and b"Ingest" not in kept


def test_a_file_without_records_is_refused_as_load_run_refuses_it(tmp_path: Path) -> None:
    path = tmp_path / "notes.jsonl"
    path.write_text("hello\n")
    with pytest.raises(UsageError) as memory:
        load_run(path)
    with pytest.raises(UsageError) as disk:
        load_disk_index(path)
    assert str(disk.value) == str(memory.value)
    with pytest.raises(UsageError) as unknown:
        load_disk_index(write_results(tmp_path / "r.jsonl", small_results()), tags=["nope"])
    with pytest.raises(UsageError) as expected:
        load_run(tmp_path / "r.jsonl", tags=["nope"])
    assert str(unknown.value) == str(expected.value)


def test_a_file_rewritten_under_the_viewer_is_named_never_shown_as_another(tmp_path: Path) -> None:
    path = write_results(tmp_path / "run.jsonl", small_results())
    disk = load_disk_index(path, reviewer="ana")
    write_results(path, small_results()[::-1])  # rewritten in place: the lines moved
    with pytest.raises(UsageError, match=r"run\.jsonl: the line of 'agent-a'/'h02' changed"):
        disk.detail("agent-a", "h02")
    disk = load_disk_index(path, reviewer="ana")
    replaced = tmp_path / "new.jsonl"
    write_results(replaced, small_results()[:2])
    os.replace(replaced, path)  # replaced by another file: the viewer still reads the one it indexed
    assert disk.detail("agent-a", "h02")["record"]["verdict"] == "pass"


def decidable_results(path: Path) -> Path:
    """Adjudicated answers of several systems, some tagged, one of T1 (a trap deferred), beside
    passes, fails and errors, so a decision moves every kind of count the totals hold."""
    records = many_results(300, systems=4, seed=5)
    replace = msgspec.structs.replace
    waiting = [i for i, r in enumerate(records) if r.verdict == "adjudicate"]
    for n, i in enumerate(waiting):
        if n % 3 == 0:
            records[i] = replace(records[i], tags=["hard", "memory"] if n % 2 else ["hard"])
    records[waiting[3]] = replace(records[waiting[3]], tier="t1")
    write_results(path, records)
    return path


@pytest.mark.parametrize("processes", ["1", "2"])
@pytest.mark.parametrize("tags", [None, ["hard"]])
def test_totals_after_each_decision_are_the_ones_counted_again(
    tmp_path: Path, monkeypatch, tags, processes: str
) -> None:
    """The disk index counts a decision onto the count its totals were finished from (the record
    taken back and added decided, `StandingCounter.subtract`); the in-memory index counts every
    record again. After each decision (a pass, a fail, a decision
    changed, one on a T1 record, tagged ones) both give the same bytes, and so does a fresh view
    (its totals counted in one process or two)."""
    monkeypatch.setenv("TABENCH_READ_PROCESSES", processes)
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    first, second = (decidable_results(tmp_path / name / "run.jsonl") for name in ("a", "b"))
    memory = Index(load_run(first, tags=tags), reviewer="ana")
    disk = load_disk_index(second, reviewer="ana", tags=tags)
    waiting = [r for r in memory.records if r.verdict == "adjudicate"]
    assert len(waiting) > 12 and any(r.tier == "t1" for r in waiting) and any(r.tags for r in waiting)
    before = ENCODE(disk.totals_payload())
    assert before == ENCODE(memory.totals_payload())
    decisions = [(r, "pass" if i % 2 else "fail") for i, r in enumerate(waiting)]
    decisions += [(waiting[0], "pass"), (waiting[3], "fail"), (waiting[0], "fail")]  # minds changed
    for record, verdict in decisions:
        for index in (memory, disk):
            index.decide(record.system, record.question, verdict)
        assert ENCODE(disk.totals_payload()) == ENCODE(memory.totals_payload()), (record.key, verdict)
    assert ENCODE(disk.totals_payload()) != before
    assert disk._counter is not None  # counted onto the count they were finished from, not read again
    fresh = load_disk_index(second, tags=tags)
    assert ENCODE(fresh.totals_payload()) == ENCODE(disk.totals_payload())


@pytest.mark.parametrize("tags", [None, ["hard"]])
def test_a_later_view_counts_its_decisions_onto_the_count_kept_with_its_totals(tmp_path: Path, tags) -> None:
    """A later view reads its totals from the index, and the count they were finished from beside
    them (nothing of the file is read at a decision); every decision's totals are those counted
    again."""
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    first, second = (decidable_results(tmp_path / name / "run.jsonl") for name in ("a", "b"))
    load_disk_index(second, tags=tags).totals()  # the first view: columns and totals kept
    memory = Index(load_run(first, tags=tags), reviewer="ana")
    disk = load_disk_index(second, reviewer="ana", tags=tags)
    assert ENCODE(disk.totals_payload()) == ENCODE(memory.totals_payload())
    from tabench_dsl.review.totals_of import kept_counter
    from tabench_dsl.store.decisions import decisions_path

    assert kept_counter(second, decisions_path(second), None, tags) is not None  # kept with the totals
    waiting = [r for r in memory.records if r.verdict == "adjudicate"][:6]
    for i, record in enumerate(waiting):
        for index in (memory, disk):
            index.decide(record.system, record.question, "pass" if i % 2 else "fail")
        assert ENCODE(disk.totals_payload()) == ENCODE(memory.totals_payload())
    assert disk._counter is not None


def test_a_decision_on_a_file_appended_to_counts_the_totals_again(tmp_path: Path) -> None:
    """The count a decision is counted onto stands on the file the viewer read: once a grading has
    appended to it, a decision's totals are counted again from the file, as a fresh count gives."""
    path = decidable_results(tmp_path / "run.jsonl")
    disk = load_disk_index(path, reviewer="ana")
    disk.totals()
    with open(path, "ab") as f:
        f.write(record_encoder.encode(make_record("late-system", "q00001", "pass")) + b"\n")
    waiting = next(r for r in load_run(path).records if r.verdict == "adjudicate")
    disk.decide(waiting.system, waiting.question, "pass")
    fresh = Index(load_run(path), reviewer="ana")
    assert "late-system" in ENCODE(fresh.totals_payload()).decode()
    assert ENCODE(disk.totals_payload()) == ENCODE(fresh.totals_payload())


def test_a_decision_after_another_viewer_decided_counts_the_totals_again(tmp_path: Path) -> None:
    """The count a decision is counted onto stands on the decisions file the viewer read too: once
    someone else (another viewer, on the same run) has appended a decision to it, this viewer's
    next decision counts the totals again, as a fresh view counts them, with both decisions (the
    count of answers awaiting a person is this index's own, which knows only its decisions)."""
    path = decidable_results(tmp_path / "run.jsonl")
    disk = load_disk_index(path, reviewer="ana")
    disk.totals()
    waiting = [r for r in load_run(path).records if r.verdict == "adjudicate"]
    other = load_disk_index(path, reviewer="bo")  # a second viewer of the same run
    other.decide(waiting[0].system, waiting[0].question, "pass")
    disk.decide(waiting[1].system, waiting[1].question, "fail")
    fresh = load_disk_index(path, reviewer="ana")
    assert ENCODE(disk.totals()) == ENCODE(fresh.totals())


def test_a_decision_on_a_record_naming_a_tag_twice_moves_the_tag_as_a_count_does(tmp_path: Path) -> None:
    """A results file is data from elsewhere: a record may name one tag twice, which a count of
    the file counts twice under that tag. The totals after a decision on it are those counted
    again."""
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    for name in ("a", "b"):
        path = decidable_results(tmp_path / name / "run.jsonl")
        records = list(load_run(path).records)
        i = next(i for i, r in enumerate(records) if r.verdict == "adjudicate")
        records[i] = msgspec.structs.replace(records[i], tags=["hard", "hard"])
        write_results(path, records)
    memory = Index(load_run(tmp_path / "a" / "run.jsonl"), reviewer="ana")
    disk = load_disk_index(tmp_path / "b" / "run.jsonl", reviewer="ana")
    assert ENCODE(disk.totals_payload()) == ENCODE(memory.totals_payload())
    twice = next(r for r in memory.records if r.tags == ["hard", "hard"])
    for index in (memory, disk):
        index.decide(twice.system, twice.question, "pass")
    assert disk._counter is not None  # counted onto the count, not read again
    assert ENCODE(disk.totals_payload()) == ENCODE(memory.totals_payload())


def test_the_columns_read_over_three_processes_are_the_columns_one_reads(tmp_path: Path, monkeypatch) -> None:
    """A file cut into three ranges of lines, each read by a process of its own (pairs graded again
    across them, questions met in another order in each): every part kept is the same bytes."""
    from tabench_dsl.review.viewer.column_read import read_columns

    records = many_results(900, systems=5, seed=9)
    again = [msgspec.structs.replace(r, verdict="fail", tags=["late"]) for r in records[::7]]
    path = write_results(tmp_path / "run.jsonl", records[450:] + again + records[:450])
    parts = []
    for processes in ("1", "3"):
        monkeypatch.setenv("TABENCH_READ_PROCESSES", processes)
        table = read_columns(path)
        parts.append((table.names, table.columns, table.offsets, table.lengths, table.problems))
    assert parts[0] == parts[1] and len(parts[0][2]) == 900


@pytest.mark.parametrize("processes", ["1", "3"])
@pytest.mark.parametrize("broken_at", ["last", "earlier"])
def test_a_line_naming_a_pair_but_no_record_is_named_as_a_whole_read_names_it(
    tmp_path: Path, monkeypatch, processes: str, broken_at: str
) -> None:
    """The first pass decodes a line only as far as its pair: a line with a pair that is no whole
    record (a field of the wrong type), re-graded by a good line after it or itself the last line of
    its pair, is named and never stands, as `load_run` reads the file; the totals counted as the
    columns were read (priced) are those counted from the records."""
    from tabench_dsl.core.price import Price

    monkeypatch.setenv("TABENCH_READ_PROCESSES", processes)
    records = many_results(90, systems=3, seed=4)
    lines = [record_encoder.encode(r) for r in records]
    broken = lines[10].replace(b'"tier":"', b'"tier":7,"was":"', 1)
    if broken_at == "last":
        lines.insert(40, broken)  # the pair of line 10 again, broken: line 10 stands
    else:
        lines.insert(40, broken)  # the pair of line 10 again, broken ...
        lines.append(lines[10])  # ... and again, whole: this one stands
    path = tmp_path / "run.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    disk = assert_same(path, price=Price(input=1.0, output=2.0))
    assert [problem.split(":")[1] for problem in disk.run.problems] == ["41"]
    assert_same(path)  # the columns loaded back, the totals counted at their places
