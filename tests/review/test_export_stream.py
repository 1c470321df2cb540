"""`tabench export` reads the file twice (review/export_stream.py) instead of holding it: the file
it writes is byte for byte what applying the decisions to every record and exporting them gives,
with re-graded pairs, bad lines, stale and replaced decisions."""

from __future__ import annotations

from pathlib import Path

import msgspec
from support.make_results import make_record, many_results, write_results

from tabench_dsl.cli import main
from tabench_dsl.core.records import Decision
from tabench_dsl.review.decisions import apply_decisions
from tabench_dsl.review.export import write_records
from tabench_dsl.review.export_stream import standing_positions, standing_records
from tabench_dsl.store.results import iter_records


def decision(system: str, question: str, verdict: str, sha: str, note: str = "") -> Decision:
    return Decision(system, question, verdict, sha, "ann", "2026-11-30T10:00:00Z", note)  # type: ignore[arg-type]


def test_export_streams_the_same_rows_as_the_whole_file_gives(tmp_path: Path, capsys) -> None:
    records = many_results(300, systems=3)
    adjudicated = next(r for r in records if r.verdict == "adjudicate")
    later = make_record(
        adjudicated.system, adjudicated.question, "adjudicate", prompt_sha256=adjudicated.prompt_sha256
    )
    records += [make_record("sys-00", "q00001", "fail"), later, make_record("sys-09", "new", "pass")]
    path = write_results(tmp_path / "run.jsonl", records)
    with open(path, "ab") as f:
        f.write(b"not a record\n")
    decisions = [
        decision(later.system, later.question, "fail", later.prompt_sha256, "first"),
        decision(later.system, later.question, "pass", later.prompt_sha256, "replaces the first"),
        decision("sys-00", "q00001", "pass", "0" * 64),  # stale: the prompt differs
        decision("nobody", "q00001", "pass", "0" * 64),  # no such pair
    ]
    (tmp_path / "run.decisions.jsonl").write_bytes(
        b"".join(msgspec.json.encode(d) + b"\n" for d in decisions)
    )
    assert main(["export", str(path), "--format", "csv", "--out", str(tmp_path / "out.csv")]) == 1
    assert "run.jsonl:304" in capsys.readouterr().err  # the bad line, named once

    whole = apply_decisions(list(iter_records(path)), decisions)
    expected = write_records(whole, tmp_path / "expected.csv", "csv")
    assert expected == 301  # 300 pairs and the new one; the re-graded pairs count once
    assert (tmp_path / "out.csv").read_bytes() == (tmp_path / "expected.csv").read_bytes()
    assert b"replaces the first" in (tmp_path / "out.csv").read_bytes()


def test_records_appended_after_the_first_pass_are_left_out(tmp_path: Path) -> None:
    path = write_results(
        tmp_path / "run.jsonl", [make_record("a", "q1", "pass"), make_record("a", "q2", "fail")]
    )
    positions = standing_positions(path, on_problem=lambda problem: None)
    with open(path, "ab") as f:  # a grading still writing: a re-grade of q1 and a new pair
        for record in (make_record("a", "q1", "fail"), make_record("a", "q3", "pass")):
            f.write(msgspec.json.encode(record) + b"\n")
    standing = list(standing_records(path, positions, []))
    assert [(r.question, r.verdict) for r in standing] == [("q1", "pass"), ("q2", "fail")]


def test_export_read_in_ranges_by_processes_writes_the_same_file(tmp_path: Path, monkeypatch, capsys) -> None:
    """Forced to three processes (each a third of the file's bytes): pairs graded again in a later
    range and in their own, a bad line in the last range, decisions: the rows a single read gives."""
    records = many_results(240, systems=3)
    regraded = [
        make_record(r.system, r.question, "fail", prompt_sha256=r.prompt_sha256) for r in records[::37]
    ]
    records = records[:120] + regraded[:2] + records[120:] + [records[5], *regraded[2:]]
    path = write_results(tmp_path / "run.jsonl", records[:200])
    with open(path, "ab") as f:
        f.write(b'{"system": "sys-00"}\n')
        f.write(b"".join(msgspec.json.encode(r) + b"\n" for r in records[200:]))
    decided = records[-1]
    decisions = [decision(decided.system, decided.question, "pass", decided.prompt_sha256, "settled")]
    (tmp_path / "run.decisions.jsonl").write_bytes(
        b"".join(msgspec.json.encode(d) + b"\n" for d in decisions)
    )
    monkeypatch.setenv("TABENCH_READ_PROCESSES", "3")
    assert main(["export", str(path), "--format", "csv", "--out", str(tmp_path / "out.csv")]) == 1
    assert "run.jsonl:201:" in capsys.readouterr().err  # numbered from the file's first line

    monkeypatch.setenv("TABENCH_READ_PROCESSES", "1")
    whole = apply_decisions(list(iter_records(path)), decisions)
    assert write_records(whole, tmp_path / "expected.csv", "csv") == 240
    assert (tmp_path / "out.csv").read_bytes() == (tmp_path / "expected.csv").read_bytes()


def test_rows_taken_out_of_the_export_in_place_move_the_rest_down_whole(tmp_path: Path, monkeypatch) -> None:
    """Read in one range, the export is written as it is read, and the rows of pairs re-graded
    later are taken out of it in place: with more bytes after them than are moved at a time (4 MiB),
    the rows after each are moved down block by block, to the bytes a whole-file export gives."""
    records = many_results(6000, systems=3)
    regraded = [make_record(r.system, r.question, "fail", prompt_sha256=r.prompt_sha256) for r in records[:3]]
    path = write_results(tmp_path / "run.jsonl", [*records, *regraded])
    assert path.stat().st_size > 5 << 20
    monkeypatch.setenv("TABENCH_READ_PROCESSES", "1")
    assert main(["export", str(path), "--format", "csv", "--out", str(tmp_path / "out.csv")]) == 0
    assert write_records(list(iter_records(path)), tmp_path / "expected.csv", "csv") == 6000
    assert (tmp_path / "out.csv").read_bytes() == (tmp_path / "expected.csv").read_bytes()
