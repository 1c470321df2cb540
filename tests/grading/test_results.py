"""The results file and the answers file: append-only records, torn-tail repair, streaming answers."""

from __future__ import annotations

from pathlib import Path

import pytest

from tabench_dsl.core.errors import UsageError
from tabench_dsl.core.records import Attempt, JudgeInfo, Record, Tokens
from tabench_dsl.grading.answer_counts import count_lines
from tabench_dsl.grading.answers import AnswerReader
from tabench_dsl.store.light_records import iter_light_records
from tabench_dsl.store.results import ResultsWriter, iter_records, repair_tail
from tabench_dsl.store.standing_verdicts import done_pairs

JUDGE = JudgeInfo("openai", "m")


def rec(question: str, verdict: str = "pass", system: str = "a") -> Record:
    return Record(system, question, "t2", verdict, "why", "sha", JUDGE)


def test_writer_appends_whole_lines_and_keeps_old_ones(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    with ResultsWriter(path) as w:
        w.write(rec("q1"))
    first = path.read_bytes()
    with ResultsWriter(path) as w:
        w.write(rec("q2"))
        assert w.count == 1
    data = path.read_bytes()
    assert data.startswith(first)
    assert data.count(b"\n") == 2 and data.endswith(b"\n")
    assert [r.question for r in iter_records(path)] == ["q1", "q2"]


def test_record_reaches_the_file_before_close(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    w = ResultsWriter(path)
    w.write(rec("q1"))
    # Nothing held in a Python buffer: another reader sees the whole line at once.
    assert path.read_bytes().endswith(b"\n")
    w.close()
    w.close()


def test_torn_last_line_is_cut_before_appending(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    with ResultsWriter(path) as w:
        w.write(rec("q1"))
    good = path.read_bytes()
    path.write_bytes(good + b'{"system":"a","question":"q2","ti')
    with ResultsWriter(path) as w:
        assert w.repaired == len(b'{"system":"a","question":"q2","ti')
        w.write(rec("q3"))
    assert [r.question for r in iter_records(path)] == ["q1", "q3"]
    assert path.read_bytes().startswith(good)


def test_undecodable_last_line_with_break_is_cut(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    with ResultsWriter(path) as w:
        w.write(rec("q1"))
    good = path.read_bytes()
    path.write_bytes(good + b"\x00\x00\x00\n")
    assert repair_tail(path) == 4
    assert path.read_bytes() == good


def test_whole_json_line_of_another_shape_is_never_cut(tmp_path: Path) -> None:
    # A record from a newer tabench (an unknown cause) or edited by hand is JSON with a line break:
    # it is whole, so it stays; readers skip what they cannot read.
    path = tmp_path / "r.jsonl"
    with ResultsWriter(path) as w:
        w.write(rec("q1"))
    foreign = b'{"system":"a","question":"q2","verdict":"error","cause":"timeout"}\n'
    path.write_bytes(path.read_bytes() + foreign)
    before = path.read_bytes()
    assert repair_tail(path) == 0
    with ResultsWriter(path) as w:
        assert w.repaired == 0
        w.write(rec("q3"))
    assert path.read_bytes().startswith(before)
    assert [r.question for r in iter_records(path)] == ["q1", "q3"]


def test_whole_file_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    with ResultsWriter(path) as w:
        w.write(rec("q1"))
        w.write(rec("q2"))
    before = path.read_bytes()
    assert repair_tail(path) == 0
    assert path.read_bytes() == before


def test_torn_only_line_leaves_an_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_bytes(b'{"system":"a"')
    assert repair_tail(path) == len(b'{"system":"a"')
    assert path.read_bytes() == b""


def test_long_torn_line_is_found_across_chunks(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    with ResultsWriter(path) as w:
        w.write(rec("q1"))
    good = path.read_bytes()
    path.write_bytes(good + b"x" * 200_000)
    repair_tail(path)
    assert path.read_bytes() == good


def test_done_pairs_last_record_stands_errors_are_not_done(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    with ResultsWriter(path) as w:
        w.write(rec("q1", "error"))
        w.write(rec("q1", "pass"))
        w.write(rec("q2", "pass"))
        w.write(rec("q2", "error"))
        w.write(rec("q3", "adjudicate"))
        w.write(rec("q1", "fail", system="b"))
    assert done_pairs(path) == {("a", "q1"), ("a", "q3"), ("b", "q1")}
    assert done_pairs(tmp_path / "missing.jsonl") == set()


def test_bad_result_lines_are_reported(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    with ResultsWriter(path) as w:
        w.write(rec("q1"))
        w.write(rec("q2"))
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(lines[0] + b"garbage\n" + lines[1])
    problems: list[str] = []
    assert [r.question for r in iter_records(path, on_problem=problems.append)] == ["q1", "q2"]
    assert len(problems) == 1 and problems[0].startswith(f"{path}:2: not a result record")


def test_light_records_count_what_records_count_without_the_texts(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    attempts = [Attempt("first", "not json", tokens=Tokens(5, 2)), Attempt("format", None, error="boom")]
    full = Record(
        "b",
        "q2",
        "t2",
        "adjudicate",
        "malformed twice",
        "sha2",
        JUDGE,
        answer="long answer",
        facets={"names_all_required": True},
        cause="malformed",
        attempts=attempts,
        injection_suspect=True,
    )
    with ResultsWriter(path) as w:
        w.write(rec("q1"))
        w.write(full)
        w.write(rec("q3", "fail"))
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(lines[0] + b'{"system": 1}\n' + b"".join(lines[1:]))
    problems: list[str] = []
    light = list(iter_light_records(path, on_problem=problems.append))
    assert problems == _problems(iter_records, path)
    assert len(problems) == 1 and problems[0].startswith(f"{path}:2: not a result record")
    assert [(r.system, r.question, r.verdict) for r in light] == [
        ("a", "q1", "pass"),
        ("b", "q2", "adjudicate"),
        ("a", "q3", "fail"),
    ]
    got = light[1]
    assert (got.answer, got.reason, got.cause, got.facets, got.injection_suspect, got.judge) == (
        "",
        "",
        "malformed",
        {"names_all_required": True},
        True,
        JUDGE,
    )
    assert [(a.kind, a.raw, a.error, a.tokens) for a in got.attempts] == [
        ("first", "", None, Tokens(5, 2)),
        ("format", None, "", Tokens()),
    ]
    assert light[0].judge is light[2].judge  # repeated values are shared


def _problems(reader, path: Path) -> list[str]:
    problems: list[str] = []
    for _ in reader(path, on_problem=problems.append):
        pass
    return problems


def test_answers_stream_reports_bad_lines_and_goes_on(tmp_path: Path) -> None:
    path = tmp_path / "answers.jsonl"
    path.write_text(
        '{"system": "a", "question": "h01", "answer": "x"}\n'
        "not json\n"
        '{"system": "a", "question": "h01"}\n'
        "\n"
        '{"system": "a", "question": "zz", "answer": "x"}\n'
        '{"system": "b", "question": "h01", "answer": "y"}\n'
        '{"system": "a", "question": "h01", "answer": "again"}\n'
        '["a", "h01", "x"]\n'
        '{"system": "a", "question": "h02", "answer": "z"}',
        encoding="utf-8",
    )
    problems = []
    reader = AnswerReader(path, {"h01", "h02"}, on_problem=problems.append)
    got = [(a.system, a.question, a.answer) for a in reader]
    assert got == [("a", "h01", "x"), ("b", "h01", "y"), ("a", "h02", "z")]
    assert [p.line for p in problems] == [2, 3, 5, 7, 8]
    rendered = [p.render() for p in problems]
    assert rendered[0].startswith(f"{path}:2: not a JSON object")
    assert rendered[1] == f"{path}:3: bad answer: Object missing required field `answer`"
    assert rendered[2] == f"{path}:5: unknown question 'zz'"
    assert "duplicate answer of system 'a' to question 'h01' (first at line 1)" in rendered[3]
    assert reader.problems == 5 and reader.count == 3
    assert count_lines(path) == 9


def test_a_second_writer_on_the_same_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    with ResultsWriter(path) as w:
        w.write(rec("q1"))
        with pytest.raises(UsageError, match="being written by another tabench grade"):
            ResultsWriter(path)
    with ResultsWriter(path) as w:  # free again once the first is closed
        w.write(rec("q2"))
    assert [r.question for r in iter_records(path)] == ["q1", "q2"]
