"""The index beside a results file (store/results_index.py): figures read through it are the
figures the results file gives, whatever state the index is in.

Every test compares `totals --json` (and `--resume`'s done pairs) with the same figures computed
straight from the records (`iter_records`, whole records, no index involved), after doing to the
index or to the results what a user, a crash or someone hostile could.
"""

from __future__ import annotations

import os
import shutil
import sqlite3

import msgspec
import pytest
from support.done_pairs import read_done_pairs as streamed_done_pairs
from support.make_results import make_record, many_results, small_results, write_results

from tabench_dsl.cli import main
from tabench_dsl.core.display import json_for_terminal
from tabench_dsl.core.records import Decision, record_encoder
from tabench_dsl.review.decisions import apply_decisions
from tabench_dsl.review.totals import compute_totals, totals_json
from tabench_dsl.store.decisions import decisions_path, load_decisions
from tabench_dsl.store.results import iter_records
from tabench_dsl.store.results_index import index_path, measure, open_index
from tabench_dsl.store.standing_verdicts import VARIANT, done_pairs


def streamed_totals(path) -> bytes:
    """`totals --json`'s output for `path`, computed from whole records without any index."""
    records = list(iter_records(path))
    decisions = load_decisions(decisions_path(path))
    if decisions:
        records = apply_decisions(records, decisions)
    return json_for_terminal(totals_json(compute_totals(records))) + b"\n"


def totals_output(path, capsysbinary) -> tuple[int, bytes, bytes]:
    status = main(["totals", str(path), "--json"])
    captured = capsysbinary.readouterr()
    return status, captured.out, captured.err


def kept_values(path) -> list[str]:
    with sqlite3.connect(index_path(path)) as db:
        return [row[0] for row in db.execute("SELECT variant FROM value_of ORDER BY variant")]


@pytest.fixture
def results(tmp_path):
    records = many_results(600, systems=6)
    records.append(make_record("sys-00", "q00001", "pass"))  # a re-graded pair: the last stands
    return write_results(tmp_path / "run.jsonl", records)


def test_the_second_totals_reads_the_index_and_prints_the_same(results, capsysbinary):
    expected = streamed_totals(results)
    assert totals_output(results, capsysbinary) == (0, expected, b"")
    assert index_path(results).is_file()
    assert any(name.startswith("totals:") for name in kept_values(results))
    assert totals_output(results, capsysbinary) == (0, expected, b"")


def test_appended_results_are_counted(results, capsysbinary):
    totals_output(results, capsysbinary)
    with open(results, "ab") as f:
        f.write(record_encoder.encode(make_record("sys-09", "q-new", "fail")) + b"\n")
    assert totals_output(results, capsysbinary) == (0, streamed_totals(results), b"")


def test_results_rewritten_with_the_same_size_are_counted_again(results, capsysbinary):
    totals_output(results, capsysbinary)
    data = results.read_bytes()
    middle = data.index(b'"verdict":"pass"', len(data) // 2)
    results.write_bytes(data[:middle] + b'"verdict":"fail"' + data[middle + 16 :])
    assert len(results.read_bytes()) == len(data)
    assert totals_output(results, capsysbinary) == (0, streamed_totals(results), b"")


def test_a_truncated_index_changes_nothing(results, capsysbinary):
    totals_output(results, capsysbinary)
    index = index_path(results)
    index.write_bytes(index.read_bytes()[: index.stat().st_size // 2])
    assert totals_output(results, capsysbinary) == (0, streamed_totals(results), b"")


def test_a_file_that_is_no_database_is_replaced(results, capsysbinary):
    index_path(results).write_bytes(b"not a database at all\n" * 100)
    assert totals_output(results, capsysbinary) == (0, streamed_totals(results), b"")
    assert any(name.startswith("totals:") for name in kept_values(results))


def test_the_index_of_another_file_is_not_used(results, tmp_path, capsysbinary):
    other = write_results(tmp_path / "other.jsonl", small_results())
    totals_output(results, capsysbinary)
    shutil.copy(index_path(results), index_path(other))
    assert totals_output(other, capsysbinary) == (0, streamed_totals(other), b"")


def test_a_tampered_value_is_not_used(results, capsysbinary):
    totals_output(results, capsysbinary)
    with sqlite3.connect(index_path(results)) as db:
        db.execute(
            "UPDATE value_of SET body = CAST(replace(CAST(body AS TEXT), '\"pass\":', '\"pass\":9') AS BLOB)"
        )
    assert totals_output(results, capsysbinary) == (0, streamed_totals(results), b"")


def test_values_signed_by_another_user_are_not_used(results, tmp_path, monkeypatch, capsysbinary):
    totals_output(results, capsysbinary)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "another-user"))
    with sqlite3.connect(index_path(results)) as db:
        db.execute(
            "UPDATE value_of SET body = CAST(replace(CAST(body AS TEXT), '\"fail\":', '\"fail\":7') AS BLOB)"
        )
    assert totals_output(results, capsysbinary) == (0, streamed_totals(results), b"")


@pytest.mark.parametrize(
    "row",
    [
        ("x", "y", "z", "w"),
        (1, 2, 3, 4),
        (VARIANT, b"\x00" * 10, b"sig", b"'; DROP TABLE value_of; --"),
        (VARIANT, 3.5, None, b"\xff" * 1000),
    ],
)
def test_a_hostile_index_changes_nothing(results, row, capsysbinary):
    with sqlite3.connect(index_path(results)) as db:
        db.execute("CREATE TABLE value_of (variant, extent, signature, body)")
        db.execute("INSERT INTO value_of VALUES (?, ?, ?, ?)", row)
        db.execute(
            "INSERT INTO value_of VALUES (?, zeroblob(50000000), x'00', x'00')", ("totals:" + "0" * 64,)
        )
    assert totals_output(results, capsysbinary) == (0, streamed_totals(results), b"")
    assert done_pairs(results) == streamed_done_pairs(results)


def test_an_index_path_that_is_a_link_is_neither_followed_nor_replaced(results, tmp_path, capsysbinary):
    target = tmp_path / "elsewhere.sqlite"
    os.symlink(target, index_path(results))
    assert totals_output(results, capsysbinary) == (0, streamed_totals(results), b"")
    assert done_pairs(results) == streamed_done_pairs(results)
    assert not target.exists() and index_path(results).is_symlink()


def test_an_index_that_cannot_be_written_leaves_the_figures_alone(results, capsysbinary):
    index_path(results).mkdir()  # in its place, a folder: nothing can be written there
    assert totals_output(results, capsysbinary) == (0, streamed_totals(results), b"")
    assert done_pairs(results) == streamed_done_pairs(results)


@pytest.mark.skipif(
    os.geteuid() == 0, reason="root writes into a read-only folder: run the tests as a user other than root"
)
def test_a_read_only_folder_falls_back_to_reading_the_results(results, capsysbinary):
    results.parent.chmod(0o555)
    try:
        assert totals_output(results, capsysbinary) == (0, streamed_totals(results), b"")
        assert not index_path(results).exists()
    finally:
        results.parent.chmod(0o755)


def test_lines_that_are_no_records_are_named_again_from_the_index(results, capsysbinary):
    with open(results, "ab") as f:
        f.write(b"garbage\n")
    first = totals_output(results, capsysbinary)
    assert first[0] == 1 and f"{results}:".encode() in first[2]
    assert totals_output(results, capsysbinary) == first


def test_decisions_are_applied_and_a_new_one_is_counted(results, capsysbinary):
    totals_output(results, capsysbinary)
    record = [r for r in iter_records(results) if r.verdict == "adjudicate"][-1]
    decision = Decision(
        system=record.system,
        question=record.question,
        verdict="pass",
        prompt_sha256=record.prompt_sha256,
        reviewer="ana",
        time="2026-12-01T12:00:00Z",
    )
    decisions_path(results).write_bytes(msgspec.json.encode(decision) + b"\n")
    expected = streamed_totals(results)
    assert b'"human_pass":1' in expected
    assert totals_output(results, capsysbinary) == (0, expected, b"")


def test_done_pairs_through_the_index_follow_the_file(results):
    assert done_pairs(results) == streamed_done_pairs(results)
    extent = open_index(results).load_prefix(VARIANT)[0]
    assert extent == measure(results)
    with open(results, "ab") as f:  # re-grade an error, add a pair, and leave a torn last line
        f.write(record_encoder.encode(make_record("sys-00", "q00008", "pass")) + b"\n")
        f.write(record_encoder.encode(make_record("sys-07", "q-new", "error")) + b"\n")
        f.write(record_encoder.encode(make_record("sys-07", "q-torn", "pass")))
    assert done_pairs(results) == streamed_done_pairs(results)
    assert ("sys-07", "q-torn") in done_pairs(results)
    kept = open_index(results).load_prefix(VARIANT)[0]
    assert kept.end < kept.size  # the torn line is read every time, never kept
    results.write_bytes(results.read_bytes()[: extent.end // 2])  # truncated: read again
    assert done_pairs(results) == streamed_done_pairs(results)


def diff_output(a, b, capsysbinary) -> tuple[int, bytes, bytes]:
    status = main(["diff", str(a), str(b), "--json"])
    captured = capsysbinary.readouterr()
    return status, captured.out, captured.err


def test_a_diff_is_kept_for_the_same_two_files_and_only_for_them(results, tmp_path, capsysbinary):
    other = tmp_path / "other.jsonl"
    other.write_bytes(results.read_bytes().replace(b'"verdict":"fail"', b'"verdict":"pass"', 40))
    first = diff_output(results, other, capsysbinary)
    assert first[0] == 0 and b'"flips":[{' in first[1]
    assert any(name.startswith("diff:") for name in kept_values(results))
    assert diff_output(results, other, capsysbinary) == first
    with open(other, "ab") as f:  # B changed: its diff is computed again
        f.write(record_encoder.encode(make_record("sys-00", "q00002", "error")) + b"\n")
    index_path(other).unlink(missing_ok=True)
    changed = diff_output(results, other, capsysbinary)
    assert changed != first and b'"only_in_a":[]' in changed[1]
    shutil.copy(other, tmp_path / "fresh.jsonl")  # the same bytes under a name with no index
    fresh = diff_output(results, tmp_path / "fresh.jsonl", capsysbinary)
    assert fresh[1] == changed[1].replace(str(other).encode(), str(tmp_path / "fresh.jsonl").encode())


def test_the_terminal_diff_is_kept_and_printed_the_same(tmp_path, capsysbinary):
    """A later `diff A B` without `--json` reads only what the terminal shows (its first flips and
    pairs of one side only, with how many there are) and prints the same bytes as the first."""
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    write_results(a, [make_record("sys-00", f"q{n:05d}", "pass") for n in range(260)])
    b_records = [make_record("sys-00", f"q{n:05d}", "fail") for n in range(230)]
    write_results(b, b_records + [make_record("sys-01", f"q{n:05d}", "pass") for n in range(25)])

    def printed() -> tuple[int, bytes]:
        status = main(["diff", str(a), str(b)])
        return status, capsysbinary.readouterr().out

    first = printed()
    words = b" ".join(first[1].split())  # as wrapped to the terminal's width
    assert first[0] == 0
    assert b"and 30 more flips" in words and b"flipped: 230" in words
    assert b"only in A: 30; only in B: 25" in words
    assert b"q00249 and 10 more (--json" in words and b"q00019 and 5 more (--json" in words
    assert any(name.startswith("diff-shown:") for name in kept_values(a))
    assert printed() == first
    index_path(a).unlink()
    assert printed() == first


def test_a_diff_and_its_terminal_part_replace_the_diff_kept_before(tmp_path, capsysbinary):
    """Both values of a diff are kept in one write, and a diff of A against another file replaces
    both kept for the one before (one of each kind stays)."""
    a, b, c = (tmp_path / f"{name}.jsonl" for name in "abc")
    write_results(a, [make_record("sys-00", f"q{n:05d}", "pass") for n in range(40)])
    write_results(b, [make_record("sys-00", f"q{n:05d}", "fail") for n in range(40)])
    write_results(c, [make_record("sys-00", f"q{n:05d}", "pass") for n in range(30)])
    assert main(["diff", str(a), str(b)]) == 0
    against_b = [name for name in kept_values(a) if name.startswith("diff")]
    assert sorted(name.split(":")[0] for name in against_b) == ["diff", "diff-shown"]
    assert main(["diff", str(a), str(c)]) == 0
    capsysbinary.readouterr()
    against_c = [name for name in kept_values(a) if name.startswith("diff")]
    assert sorted(name.split(":")[0] for name in against_c) == ["diff", "diff-shown"]
    assert not set(against_b) & set(against_c)


def test_recorded_missing_pairs_through_the_index_follow_the_file(results):
    from tabench_dsl.grading.missing import recorded_missing
    from tabench_dsl.review.outcomes import latest

    def missing(system: str, question: str):
        return msgspec.structs.replace(make_record(system, question, "fail"), cause="missing")

    def streamed() -> set[tuple[str, str]]:
        return {key for key, r in latest(iter_records(results)).items() if r.cause == "missing"}

    assert recorded_missing(results) == streamed() == set()
    with open(results, "ab") as f:
        f.write(record_encoder.encode(missing("sys-00", "q00003")) + b"\n")
        f.write(record_encoder.encode(missing("sys-01", "q00004")) + b"\n")
        f.write(record_encoder.encode(make_record("sys-01", "q00004", "pass")) + b"\n")  # answered since
    assert recorded_missing(results) == streamed() == {("sys-00", "q00003")}
    assert done_pairs(results) == streamed_done_pairs(results)


def report_page(results, out, capsys) -> str:
    assert main(["report", str(results), "--html", str(out)]) == 0
    capsys.readouterr()
    return out.read_text(encoding="utf-8")


def test_a_report_is_kept_and_written_again_with_the_time_of_the_write(results, tmp_path, capsys):
    import re

    with open(results, "ab") as f:  # an answer that imitates the header's stamp
        f.write(
            record_encoder.encode(
                make_record("sys-00", "q-x", "fail", answer="generated 2000-01-01 00:00 UTC</p>")
            )
        )
        f.write(b"\n")
    stamp = re.compile(r"generated \d{4}-\d\d-\d\d \d\d:\d\d UTC</p>")
    first = report_page(results, tmp_path / "one.html", capsys)
    assert any(name.startswith("report:") for name in kept_values(results))
    second = report_page(results, tmp_path / "two.html", capsys)
    assert "2000-01-01" not in stamp.findall(second)[0] and len(stamp.findall(second)) == 1
    assert "generated 2000-01-01 00:00 UTC&lt;/p&gt;" in second
    assert stamp.sub("", second) == stamp.sub("", first)
    with open(results, "ab") as f:
        f.write(record_encoder.encode(make_record("sys-00", "q-y", "pass")) + b"\n")
    third = report_page(results, tmp_path / "three.html", capsys)
    assert "q-y" in third and "q-y" not in second


@pytest.mark.parametrize(
    "schema",
    [
        "CREATE VIEW value_of AS WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) "
        "SELECT 'v' AS variant, x'00' AS extent, x'00' AS signature, x'00' AS body FROM n WHERE x < 0",
        "CREATE TABLE value_of (variant TEXT PRIMARY KEY, extent BLOB NOT NULL, signature BLOB NOT NULL, "
        "body BLOB NOT NULL); CREATE TRIGGER slow BEFORE INSERT ON value_of BEGIN "
        "SELECT count(*) FROM (WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) "
        "SELECT x FROM n); END",
    ],
)
def test_sql_in_a_hostile_index_never_runs_for_long(results, schema, capsysbinary):
    with sqlite3.connect(index_path(results)) as db:
        db.executescript(schema)
    assert totals_output(results, capsysbinary) == (0, streamed_totals(results), b"")
    assert done_pairs(results) == streamed_done_pairs(results)
    assert any(name.startswith("totals:") for name in kept_values(results))  # made anew


def test_the_terminal_shows_the_first_flips_and_says_how_many_more(results, tmp_path, capsys):
    from tabench_dsl.cli.diff_cmd import SHOWN_FLIPS

    flipped = tmp_path / "flipped.jsonl"
    data = results.read_bytes().replace(b'"verdict":"pass"', b'"verdict":"PASS"')
    flipped.write_bytes(data.replace(b'"verdict":"fail"', b'"verdict":"pass"').replace(b"PASS", b"fail"))
    assert main(["diff", str(results), str(flipped), "--json"]) == 0
    flips = msgspec.json.decode(capsys.readouterr().out)["flips"]
    assert len(flips) > SHOWN_FLIPS
    assert main(["diff", str(results), str(flipped)]) == 0
    out = capsys.readouterr().out
    assert f"Flipped verdicts ({len(flips)})" in out
    assert f"and {len(flips) - SHOWN_FLIPS} more flips (--json lists them all)" in out


def test_an_index_in_wal_mode_is_replaced_and_no_file_beside_it_is_written(results, tmp_path, capsysbinary):
    target = tmp_path / "bystander.txt"
    target.write_text("mine\n")
    with sqlite3.connect(index_path(results)) as db:
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("CREATE TABLE t (x)")
    for suffix in ("-wal", "-shm", "-journal"):
        side = index_path(results).with_name(index_path(results).name + suffix)
        side.unlink(missing_ok=True)
        os.symlink(target, side)
    assert totals_output(results, capsysbinary) == (0, streamed_totals(results), b"")
    assert done_pairs(results) == streamed_done_pairs(results)
    assert target.read_text() == "mine\n"
    assert any(name.startswith("totals:") for name in kept_values(results))


def test_the_index_keeps_one_value_of_each_kind(results, capsysbinary):
    from tabench_dsl.core.price import parse_price

    unpriced = totals_output(results, capsysbinary)
    priced = []
    for _ in range(2):
        assert main(["totals", str(results), "--json", "--price", "input=1,output=2"]) == 0
        priced.append(capsysbinary.readouterr().out)
    records = list(iter_records(results))
    expected = json_for_terminal(totals_json(compute_totals(records, price=parse_price("input=1,output=2"))))
    assert priced == [expected + b"\n"] * 2 and priced[0] != unpriced[1]
    done_pairs(results)
    kinds = [name.split(":", 1)[0] for name in kept_values(results)]
    assert sorted(kinds) == ["last-verdicts", "totals"]


def test_a_value_too_big_for_sqlite_is_not_kept_and_the_others_stay(results, monkeypatch, capsysbinary):
    """SQLite refuses a value over its length limit (1e9 bytes by default: the viewer's columns of
    ten million records): that value is not kept, and the index is never made anew for it."""
    totals_output(results, capsysbinary)  # the totals kept
    done_pairs(results)  # and the standing verdicts
    before = kept_values(results)
    real_connect = sqlite3.connect

    def small_limit(*args, **kwargs):
        db = real_connect(*args, **kwargs)
        db.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 4096)
        return db

    monkeypatch.setattr(sqlite3, "connect", small_limit)
    index = open_index(results)
    assert index is not None
    index.store("viewer-columns:big", measure(results), b"x" * 10_000)
    monkeypatch.undo()
    assert kept_values(results) == before


def standing_by_hand(lines: list[tuple[str, str, str, bool]]) -> tuple[set, set]:
    """The done and the recorded-missing pairs of records (system, question, outcome, missing),
    the last record of each pair standing, worked out here without any of tabench's readers."""
    last: dict[tuple[str, str], tuple[str, bool]] = {}
    for system, question, outcome, missing in lines:
        last[(system, question)] = (outcome, missing)
    done = {pair for pair, (outcome, _) in last.items() if outcome != "error"}
    return done, {pair for pair, (_, missing) in last.items() if missing}


def write_lines(path, lines, mode: str = "wb") -> None:
    with open(path, mode) as f:
        for system, question, outcome, missing in lines:
            record = make_record(system, question, outcome)
            if missing:
                record = msgspec.structs.replace(record, cause="missing")
            f.write(record_encoder.encode(record) + b"\n")


@pytest.mark.parametrize("processes", ["1", "3"])
@pytest.mark.parametrize("seed", range(12))
def test_done_pairs_kept_then_extended_are_the_pairs_the_records_leave(
    tmp_path, monkeypatch, seed, processes
):
    """Records re-graded, recorded missing then answered, names that are both a system and a
    question: the pairs read through the index, first from nothing, then from the kept map and
    the lines appended after it, are the ones the records leave, read in one process or shared
    out over three (each a range of the lines, the maps put together in file order)."""
    import random

    monkeypatch.setenv("TABENCH_READ_PROCESSES", processes)

    from tabench_dsl.grading.missing import recorded_missing

    rng = random.Random(seed)
    names = ["s1", "s2", "q1", "q2", "q3", "pass", "error"]
    lines = [
        (
            rng.choice(names[:3]),
            rng.choice(names[2:]),
            rng.choice(["pass", "fail", "error"]),
            rng.random() < 0.2,
        )
        for _ in range(rng.randrange(1, 60))
    ]
    cut = rng.randrange(len(lines) + 1)
    path = tmp_path / "run.jsonl"
    write_lines(path, lines[:cut])
    if cut:
        done, missing = standing_by_hand(lines[:cut])
        assert done_pairs(path) == done and recorded_missing(path) == missing
    write_lines(path, lines[cut:], "ab")
    done, missing = standing_by_hand(lines)
    assert done_pairs(path) == done and recorded_missing(path) == missing
    assert open_index(path).load_prefix(VARIANT)[0] == measure(path)  # the whole file kept
    index_path(path).unlink()
    assert done_pairs(path) == done and recorded_missing(path) == missing  # read from nothing


def test_the_map_kept_is_the_same_read_by_one_process_or_by_three(tmp_path, monkeypatch):
    import random

    rng = random.Random(5)
    lines = [
        (f"s{n % 7}", f"q{rng.randrange(60)}", rng.choice(["pass", "fail", "error"]), n % 11 == 0)
        for n in range(400)
    ]
    kept = []
    for processes in ("1", "3"):
        monkeypatch.setenv("TABENCH_READ_PROCESSES", processes)
        path = tmp_path / processes / "run.jsonl"
        path.parent.mkdir()
        write_lines(path, lines)
        assert done_pairs(path) == standing_by_hand(lines)[0]
        kept.append(open_index(path).load_prefix(VARIANT)[1])
    assert kept[0] == kept[1]


def test_many_systems_each_answering_few_of_many_questions(tmp_path):
    """Where a table of each system's questions would hold far more slots than there are pairs
    (here 400 systems, each answering 2 of 800 questions), the pairs are still the records'."""
    lines = [
        (f"s{n}", f"q{(n * 2 + k) % 800}", "pass" if k else "error", False)
        for n in range(400)
        for k in (0, 1)
    ]
    lines += [(f"s{n}", f"q{n * 2 % 800}", "fail", False) for n in range(0, 400, 3)]  # re-graded
    path = tmp_path / "run.jsonl"
    write_lines(path, lines)
    done, _ = standing_by_hand(lines)
    assert done_pairs(path) == done and len(done) == 400 + len(range(0, 400, 3))
