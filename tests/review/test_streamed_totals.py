"""Totals counted as the records stream by (`streamed_totals`) are the totals of the records held
in a list (`compute_totals` after `apply_decisions`), figure for figure, on real files; and a first
read shared out over processes (`processes=N`: the file's ranges of whole lines, each counted in a
process of its own, the counts merged in file order) gives the totals one read gives, whatever the
file holds: pairs graded again within a range and across ranges, questions met in another order,
tags, decisions, panels, a bad line."""

from __future__ import annotations

import itertools
import random
from datetime import UTC, datetime
from pathlib import Path

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.make_results import make_record, many_results, write_results

from tabench_dsl.core.errors import UsageError
from tabench_dsl.core.records import PanelVote, Record, Served
from tabench_dsl.review.decisions import apply_decisions, make_decision
from tabench_dsl.review.last_records import LastRecords, ResultsChanged
from tabench_dsl.review.streamed_totals import streamed_totals
from tabench_dsl.review.totals import compute_totals, totals_json
from tabench_dsl.store.light_records import iter_light_records
from tabench_dsl.store.line_ranges import line_ranges, map_ranges
from tabench_dsl.store.results_index import measure

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def held_totals(path: Path, decisions=()) -> bytes:
    """What totals counted before: every record in a list, decisions applied, then counted."""
    records = list(iter_light_records(path))
    return totals_json(compute_totals(apply_decisions(records, list(decisions)) if decisions else records))


def streamed(path: Path, decisions=(), problems: list[str] | None = None) -> bytes:
    sink = problems if problems is not None else []
    found = streamed_totals(path, list(decisions), price=None, extent=measure(path), on_problem=sink.append)
    return totals_json(found)


def varied(records: list[Record]) -> list[Record]:
    """Tags, served models, a panel and repeats on some of the records."""
    out = []
    for i, record in enumerate(records):
        if i % 3 == 0:
            record = msgspec.structs.replace(record, tags=["alpha"] if i % 2 else ["alpha", "beta"])
        if i % 4 == 0 and record.attempts:
            served = [msgspec.structs.replace(a, served=Served(model=f"m-{i % 3}")) for a in record.attempts]
            record = msgspec.structs.replace(record, attempts=served)
        if i % 50 == 7:
            votes = [PanelVote(record.judge, v, "") for v in ("pass", "fail" if i % 100 == 7 else "pass")]
            record = msgspec.structs.replace(record, panel=votes)
        if i % 70 == 3:
            record = msgspec.structs.replace(record, repeats=[PanelVote(record.judge, "pass", "")] * 2)
        out.append(record)
    return out


def test_one_record_a_pair_is_counted_in_one_read(tmp_path):
    path = write_results(tmp_path / "r.jsonl", many_results(3000, systems=6))
    assert streamed(path) == held_totals(path)


def test_regraded_pairs_count_their_last_record(tmp_path):
    records = varied(many_results(3000, systems=6, seed=3))
    rng = random.Random(1)
    again = [
        msgspec.structs.replace(rng.choice(records), verdict=rng.choice(["pass", "fail", "error"]))
        for _ in range(400)
    ]
    path = write_results(tmp_path / "r.jsonl", records + again)
    assert streamed(path) == held_totals(path)


def test_tags_panels_repeats_and_served_models_are_counted_alike(tmp_path):
    path = write_results(tmp_path / "r.jsonl", varied(many_results(3000, systems=6, seed=4)))
    assert streamed(path) == held_totals(path)
    assert b'"tags":[{"tag":"alpha"' in streamed(path)


def test_decisions_apply_to_the_standing_record_only(tmp_path):
    first = make_record("a", "q1", "adjudicate", cause="malformed")
    later = make_record("a", "q2", "adjudicate", cause="malformed")
    records = [
        first,
        later,
        make_record("a", "q1", "adjudicate", cause="malformed"),
        make_record("b", "q1", "pass"),
    ]
    decisions = [
        make_decision(first, "pass", reviewer="r", now=NOW),
        make_decision(later, "fail", reviewer="r", now=NOW),
        make_decision(later, "pass", reviewer="r", now=NOW),  # the last decision of a pair wins
        make_decision(records[3], "fail", reviewer="r", now=NOW),  # stale: not an adjudicate
    ]
    path = write_results(tmp_path / "r.jsonl", records)
    assert streamed(path, decisions) == held_totals(path, decisions)
    assert b'"human_pass":2,"human_fail":0' in streamed(path, decisions)


def test_bad_lines_are_named_once(tmp_path):
    path = write_results(tmp_path / "r.jsonl", many_results(40, systems=2))
    with open(path, "ab") as f:
        f.write(b"not json\n")
        f.write(msgspec.json.encode(make_record("sys-00", "q00001", "fail")) + b"\n")  # a pair again
    problems: list[str] = []
    assert streamed(path, problems=problems) == held_totals(path)
    assert problems == [f"{path}:41: not a result record: JSON is malformed: invalid character (byte 4)"]


def test_systems_with_questions_of_their_own_move_to_a_dict(tmp_path, monkeypatch):
    import tabench_dsl.review.last_records as last_records

    monkeypatch.setattr(last_records, "SPARSE_FLOOR", 16)
    records = [
        make_record(f"s{s}", f"q{s}-{q}", "pass" if q % 3 else "fail") for s in range(30) for q in range(5)
    ]
    records.append(make_record("s3", "q3-1", "fail"))
    path = write_results(tmp_path / "r.jsonl", records)
    assert streamed(path) == held_totals(path)
    pairs = LastRecords()
    for record in records:
        pairs.note(record.system, record.question)
    assert pairs.keyed is not None


def test_pairs_noted_once_each_and_their_last_record():
    pairs = LastRecords()
    assert [pairs.note(s, q) for s, q in [("a", "1"), ("b", "1"), ("a", "1"), ("a", "2")]] == [
        False,
        False,
        True,
        False,
    ]
    assert [
        pairs.is_last(n, s, q) for n, (s, q) in enumerate([("a", "1"), ("b", "1"), ("a", "1"), ("a", "2")])
    ] == [
        False,
        True,
        True,
        True,
    ]
    for number, system, question in [(0, "c", "1"), (4, "a", "1"), (1, "b", "2"), (3, "a", "1")]:
        with pytest.raises(ResultsChanged):  # a pair or a record the first read never saw
            pairs.is_last(number, system, question)


def test_a_file_rewritten_between_its_reads_is_not_counted(tmp_path):
    path = write_results(tmp_path / "r.jsonl", many_results(60, systems=2) * 2)
    extent = measure(path)
    write_results(path, many_results(30, systems=2))  # shorter, as if truncated after the first read
    with pytest.raises(ResultsChanged):
        streamed_totals(path, [], price=None, extent=extent, on_problem=lambda _: None)


def test_a_tag_slice_counts_the_standing_records_of_its_tags(tmp_path):
    from tabench_dsl.review.outcomes import latest
    from tabench_dsl.review.slices import select_tagged

    records = varied(many_results(900, systems=3, seed=8))
    again = [msgspec.structs.replace(r, tags=[], verdict="fail") for r in records[:90:3]]  # untagged now
    for extra in ([], again):
        path = write_results(tmp_path / "r.jsonl", records + extra)
        held = compute_totals(select_tagged(latest(iter_light_records(path)).values(), ["beta"]))
        found = streamed_totals(path, [], price=None, extent=measure(path), on_problem=print, tags=["beta"])
        assert totals_json(found) == totals_json(held)
        with pytest.raises(
            UsageError, match=r"^--tag: no record has tag nope \(tags in the results: alpha, beta\)$"
        ):
            streamed_totals(path, [], price=None, extent=None, on_problem=print, tags=["beta", "nope"])


def counted(path: Path, processes: int, decisions=(), tags=None, problems=None) -> bytes:
    sink = problems if problems is not None else []
    found = streamed_totals(
        path,
        list(decisions),
        price=None,
        extent=measure(path),
        on_problem=sink.append,
        tags=tags,
        processes=processes,
    )
    return totals_json(found)


def assert_shared_alike(path: Path, decisions=(), tags=None) -> bytes:
    alone = counted(path, 1, decisions, tags)
    for processes in (2, 3):
        assert counted(path, processes, decisions, tags) == alone
    return alone


def test_one_record_a_pair(tmp_path):
    path = write_results(tmp_path / "r.jsonl", varied(many_results(3000, systems=6)))
    assert assert_shared_alike(path) == held_totals(path)


def test_pairs_graded_again_within_and_across_ranges(tmp_path):
    records = varied(many_results(3000, systems=6, seed=3))
    rng = random.Random(2)
    near = [msgspec.structs.replace(records[i], verdict="fail") for i in range(100, 110)]  # first range
    far = [msgspec.structs.replace(rng.choice(records), verdict="error") for _ in range(50)]
    path = write_results(tmp_path / "r.jsonl", records[:1000] + near + records[1000:] + far)
    assert assert_shared_alike(path) == held_totals(path)


def test_questions_met_in_another_order_in_each_range(tmp_path):
    records = many_results(2000, systems=4, seed=5)
    random.Random(3).shuffle(records)
    path = write_results(tmp_path / "r.jsonl", records)
    assert assert_shared_alike(path) == held_totals(path)


def test_a_tag_slice_and_decisions(tmp_path):
    records = varied(many_results(1200, systems=3, seed=8))
    adjudicated = [r for r in records if r.verdict == "adjudicate"][:6]
    decisions = [
        make_decision(r, "pass" if i % 2 else "fail", reviewer="r", now=NOW)
        for i, r in enumerate(adjudicated)
    ]
    path = write_results(tmp_path / "r.jsonl", records)
    assert assert_shared_alike(path, decisions) == held_totals(path, decisions)
    assert_shared_alike(path, tags=["beta"])


def test_a_bad_line_is_named_as_one_read_names_it(tmp_path):
    records = many_results(2000, systems=4)
    path = write_results(tmp_path / "r.jsonl", records)
    with open(path, "ab") as f:
        f.write(b"not json\n")
        f.write(msgspec.json.encode(make_record("sys-00", "q00001", "fail")) + b"\n")
    alone: list[str] = []
    shared: list[str] = []
    assert counted(path, 2, problems=shared) == counted(path, 1, problems=alone)
    assert (
        shared
        == alone
        == [f"{path}:2001: not a result record: JSON is malformed: invalid character (byte 4)"]
    )


def test_ranges_are_whole_lines_covering_the_file(tmp_path):
    path = tmp_path / "f.jsonl"
    lines = [b"x" * random.Random(n).randrange(0, 300) for n in range(500)]
    path.write_bytes(b"\n".join(lines) + b"\n")
    data = path.read_bytes()
    for parts in (1, 2, 3, 7, 600):
        ranges = line_ranges(path, parts)
        assert ranges[0][0] == 0 and ranges[-1][1] == len(data)
        assert all(stop == start for (_, stop), (start, _) in itertools.pairwise(ranges))
        assert all(data[start - 1 : start] == b"\n" for start, _ in ranges[1:])
        assert len(ranges) <= parts


def noted_and_merged(noted: list[tuple[str, str]], cut: int) -> tuple[LastRecords, LastRecords]:
    """`noted` numbered in one go, and in two ranges cut at `cut` then merged (the merge checked
    to say whether a pair came in both)."""
    whole, first, later = LastRecords(), LastRecords(), LastRecords()
    for s, q in noted:
        whole.note(s, q)
    for s, q in noted[:cut]:
        first.note(s, q)
    for s, q in noted[cut:]:
        later.note(s, q)
    assert first.merge(later) == bool({*noted[:cut]} & {*noted[cut:]})
    return whole, first


pairs = st.lists(st.tuples(st.sampled_from("abc"), st.sampled_from("1234")), max_size=30)


@settings(derandomize=True, max_examples=200)
@given(pairs, st.integers(min_value=0, max_value=30))
def test_merged_pairs_are_the_pairs_noted_in_one_go(noted, cut):
    cut = min(cut, len(noted))
    whole, first = noted_and_merged(noted, cut)
    assert first.count == whole.count
    for number, (s, q) in enumerate(noted):
        assert first.is_last(number, s, q) == whole.is_last(number, s, q)


@pytest.mark.parametrize("cut", [0, 1, 299, 300, 450, 899, 900])
@pytest.mark.parametrize("again", [False, True])
def test_merged_rows_of_systems_answering_the_same_questions(cut, again):
    """Three systems' rows of 300 questions each, written system by system and cut anywhere (the
    later range numbers the questions from where it starts, so its rows map onto these in two
    runs, laid over whole), with or without a pair of the first range graded again in the later."""
    noted = [(f"s{s}", f"q{q:03d}") for s in range(3) for q in range(300)]
    if again:
        noted.append(("s0", "q007"))
    whole, first = noted_and_merged(noted, cut)
    assert first.count == whole.count and first.slots >= len(set(noted))
    assert [(first_s, q, n) for first_s, q, n in first.by_system()] == list(whole.by_system())
    for number, (s, q) in enumerate(noted):
        assert first.is_last(number, s, q) == whole.is_last(number, s, q)


@pytest.mark.parametrize("sparse", [False, True])
def test_merged_pairs_of_systems_with_questions_of_their_own(monkeypatch, sparse):
    import tabench_dsl.review.last_records as last_records

    if sparse:
        monkeypatch.setattr(last_records, "SPARSE_FLOOR", 4)
    noted = [(f"s{s}", f"q{s}-{q}") for s in range(12) for q in range(4)] + [("s1", "q1-2")]
    whole, first, later = LastRecords(), LastRecords(), LastRecords()
    for s, q in noted:
        whole.note(s, q)
    for s, q in noted[:20]:
        first.note(s, q)
    for s, q in noted[20:]:
        later.note(s, q)
    assert first.merge(later)  # s1's q1-2 came in the first range
    for number, (s, q) in enumerate(noted):
        assert first.is_last(number, s, q) == whole.is_last(number, s, q)


def test_what_only_the_last_range_has_is_counted(tmp_path):
    records = many_results(2000, systems=4, seed=6)
    last = records[-1]
    votes = [PanelVote(last.judge, verdict, "") for verdict in ("pass", "fail")]
    records[-1] = msgspec.structs.replace(last, panel=votes, repeats=[PanelVote(last.judge, "pass", "")] * 2)
    path = write_results(tmp_path / "r.jsonl", records)
    assert assert_shared_alike(path) == held_totals(path)
    assert b'"panel":null' not in held_totals(path)


def test_ranges_are_worked_on_by_processes_of_their_own_and_their_errors_raised_here():
    import os

    def work(start: int, stop: int) -> tuple[int, int, int]:
        if start == 5:
            raise ValueError("no range starts at 5")
        return start, stop, os.getpid()

    got = map_ranges(work, [(0, 1), (1, 3), (3, 4)])
    assert [(start, stop) for start, stop, _ in got] == [(0, 1), (1, 3), (3, 4)]
    assert got[0][2] == os.getpid() and len({pid for *_, pid in got}) == 3
    with pytest.raises(ValueError, match=r"^no range starts at 5$"):
        map_ranges(work, [(0, 5), (5, 6)])
