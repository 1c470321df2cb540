"""Hostile answers, results and decisions files: a byte order mark is accepted; bytes that are not
UTF-8 and lone surrogate escapes are bad lines at their line and column; JSON nested too deeply is
a bad line. Never a traceback: answers and results lines are reported and skipped (exit 1), a bad
decisions line stops the command (exit 2), as any bad decisions line does."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest
from support.make_results import JUDGE, make_record, small_results, write_results

from tabench_dsl.cli import main
from tabench_dsl.core.jsonl import text_fault
from tabench_dsl.core.records import record_encoder
from tabench_dsl.review.decisions import make_decision
from tabench_dsl.store.decisions import append_decision, decisions_path
from tabench_dsl.store.results import iter_records

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "lark-internals"
BOM = b"\xef\xbb\xbf"
#: Deeper than any decoder follows: a RecursionError inside msgspec before this change.
DEEP = b"[" * 100_000 + b"]" * 100_000


def line(system: str, question: str, answer: str) -> bytes:
    return json.dumps({"system": system, "question": question, "answer": answer}).encode() + b"\n"


def grade(tmp_path: Path, answers: bytes, capsys, *extra: str) -> tuple[int, str, Path]:
    path = tmp_path / "answers.jsonl"
    path.write_bytes(answers)
    out = tmp_path / "r.jsonl"
    status = main(
        [
            "grade",
            str(EXAMPLE),
            "--answers",
            str(path),
            "--out",
            str(out),
            "--judge",
            "builtin",
            "--json",
            *extra,
        ]
    )
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return status, err, out


# -- answers ---------------------------------------------------------------------------------------


def test_answers_with_a_byte_order_mark_are_graded(tmp_path: Path, capsys) -> None:
    answers = BOM + line("a", "default-parser", "Earley") + BOM + b"\n" + line("a", "auto-lexer", "x")
    status, err, out = grade(tmp_path, answers, capsys)
    assert status == 0, err
    assert [r.question for r in iter_records(out)] == ["default-parser", "auto-lexer"]


def test_answers_not_utf8_are_reported_at_their_column_and_skipped(tmp_path: Path, capsys) -> None:
    bad = b'{"system": "caf\xe9", "question": "auto-lexer", "answer": "x"}\n'  # Latin-1, not UTF-8
    status, err, out = grade(tmp_path, line("a", "default-parser", "Earley") + bad, capsys)
    assert status == 1
    path = tmp_path / "answers.jsonl"
    assert f"{path}:2:16: not a JSON object: not valid UTF-8 (byte 0xe9); the file must be UTF-8 text" in err
    assert [r.question for r in iter_records(out)] == ["default-parser"]


def test_answers_with_a_lone_surrogate_escape_are_reported_at_its_column(tmp_path: Path, capsys) -> None:
    lone = b'{"system": "a", "question": "auto-lexer", "answer": "ok \\ud800 then"}\n'
    # An escaped backslash before `ud800` is text, and a whole pair is one character: both graded.
    text = b'{"system": "a", "question": "cache-option", "answer": "C:\\\\ud800"}\n'
    pair = b'{"system": "a", "question": "on-error", "answer": "\\ud83d\\ude00"}\n'
    status, err, out = grade(tmp_path, lone + text + pair, capsys)
    assert status == 1
    path = tmp_path / "answers.jsonl"
    assert (
        f"{path}:1:57: not a JSON object: \\ud800 is half of a surrogate pair: JSON text must name "
        "whole characters"
    ) in err
    assert [r.answer for r in iter_records(out)] == ["C:\\ud800", "\U0001f600"]


def test_answers_nested_too_deeply_are_a_bad_line(tmp_path: Path, capsys) -> None:
    deep = b'{"system": "a", "question": "auto-lexer", "answer": "x", "extra": ' + DEEP + b"}\n"
    status, err, out = grade(tmp_path, deep + line("a", "default-parser", "Earley"), capsys)
    assert status == 1
    assert f"{tmp_path / 'answers.jsonl'}:1: not a JSON object: JSON nested too deeply" in err
    assert [r.question for r in iter_records(out)] == ["default-parser"]


# -- results ---------------------------------------------------------------------------------------


def totals(path: Path, capsys) -> tuple[int, str, dict | None]:
    status = main(["totals", str(path), "--json"])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return status, err, json.loads(out) if out else None


def test_results_with_a_byte_order_mark_are_counted(tmp_path: Path, capsys) -> None:
    path = write_results(tmp_path / "r.jsonl", small_results())
    path.write_bytes(BOM + path.read_bytes())
    status, err, doc = totals(path, capsys)
    assert status == 0, err
    assert doc is not None and doc["records"] == 8


def test_bad_result_lines_are_named_with_line_and_column_and_skipped(tmp_path: Path, capsys) -> None:
    good = record_encoder.encode(make_record("agent-a", "h01", "pass")) + b"\n"
    latin1 = good.replace(b'"agent-a"', b'"agent-\xe4"')
    lone = good.replace(b'"agent-a"', b'"agent-\\udc00"')
    deep = good.replace(b'"answer":', b'"extra":' + DEEP + b',"answer":')
    path = tmp_path / "r.jsonl"
    path.write_bytes(good + latin1 + lone + deep)
    status, err, doc = totals(path, capsys)
    assert status == 1
    assert f"{path}:2:18: not a result record: not valid UTF-8 (byte 0xe4)" in err
    assert f"{path}:3:18: not a result record: \\udc00 is half of a surrogate pair" in err
    assert f"{path}:4: not a result record: JSON nested too deeply" in err
    assert doc is not None and doc["records"] == 1


def test_names_that_look_like_markup_are_printed_as_they_are(tmp_path: Path, capsys) -> None:
    """A system, question or judge named like rich markup once crashed `totals` (`[/x]`: a
    MarkupError traceback, on every run over that file) or became a terminal hyperlink."""
    judge = msgspec.structs.replace(JUDGE, model="[/judge]")
    records = [
        msgspec.structs.replace(make_record("[/x]agent", "[link=http://evil]q[/link]", "pass"), judge=judge),
        make_record("[bold]b", "h02", "fail"),
    ]
    path = write_results(tmp_path / "r.jsonl", records)
    status = main(["totals", str(path)])
    out, err = capsys.readouterr()
    assert status == 0 and "Traceback" not in err
    for name in ("[/x]agent", "[link=http://evil]q[/link]", "[bold]b", "[/judge]"):
        assert name in out
    assert "\x1b]8;" not in out  # no hyperlink escape


def test_resume_keeps_a_whole_last_line_with_a_bom_or_deep_nesting(tmp_path: Path, capsys) -> None:
    """`--resume` cuts a torn last line before appending; a whole line is never cut, even one that
    starts with a BOM (once cut as "not JSON") or nests too deeply to decode (once a traceback)."""
    answers = line("a", "default-parser", "Earley") + line("a", "auto-lexer", "x")
    status, err, out = grade(tmp_path, answers, capsys)
    assert status == 0, err
    first = out.read_bytes().splitlines(keepends=True)[0]
    out.write_bytes(BOM + first)
    status, err, _ = grade(tmp_path, answers, capsys, "--resume")
    assert status == 0, err
    assert "torn" not in err and "skipped 1 already done" in err
    assert out.read_bytes().startswith(BOM + first)
    assert [r.question for r in iter_records(out)] == ["default-parser", "auto-lexer"]

    deep = b'{"extra": ' + DEEP + b"}\n"
    out.write_bytes(first + deep)
    status, err, _ = grade(tmp_path, answers, capsys, "--resume")
    assert status == 0, err  # the deep line is named, and left out of the totals
    assert "torn" not in err and f"{out}:2: not a result record: JSON nested too deeply" in err
    assert out.read_bytes().startswith(first + deep)


# -- decisions -------------------------------------------------------------------------------------


def decided(tmp_path: Path) -> tuple[Path, Path]:
    results = write_results(tmp_path / "run.jsonl", small_results())
    decisions = decisions_path(results)
    append_decision(decisions, make_decision(small_results()[4], "pass", reviewer="ana"))
    return results, decisions


def test_decisions_with_a_byte_order_mark_are_applied(tmp_path: Path, capsys) -> None:
    results, decisions = decided(tmp_path)
    decisions.write_bytes(BOM + decisions.read_bytes())
    status, err, doc = totals(results, capsys)
    assert status == 0, err
    assert doc is not None and doc["systems"][0]["human_pass"] == 1


@pytest.mark.parametrize(
    ("bad", "where", "message"),
    [
        (b'{"system": "\xff"}\n', "2:13", "not valid UTF-8 (byte 0xff); the file must be UTF-8 text"),
        (b'{"system": "\\ud800"}\n', "2:13", "\\ud800 is half of a surrogate pair"),
        (b'{"system": "a", "extra": ' + DEEP + b"}\n", "2:1", "JSON nested too deeply"),
    ],
)
def test_a_bad_decisions_line_is_a_positioned_error(tmp_path: Path, capsys, bad, where, message) -> None:
    results, decisions = decided(tmp_path)
    with open(decisions, "ab") as f:
        f.write(bad)
    status, err, _ = totals(results, capsys)
    assert status == 2
    assert err.startswith(f"tabench: error: {decisions}:{where}: bad decision: {message}")
    assert len(err.splitlines()) == 1


# -- where a fault in the text is ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "fault"),
    [
        (b'"fine"', None),
        (b'"\\ud83d\\ude00"', None),  # a whole pair
        (b'"\\\\ud800"', None),  # an escaped backslash, then text
        (b'"\\\\\\ud800"', (4, "\\ud800")),  # an escaped backslash, then a lone escape
        (b'"\\ud800"', (2, "\\ud800")),  # high half, then the end of the string
        (b'"\\ud800x\\udc00"', (2, "\\ud800")),  # the low half does not follow at once
        (b'"\\ud800\\ud800\\udc00"', (2, "\\ud800")),  # two highs: the first is alone
        (b'"ab\\uDC00"', (4, "\\uDC00")),  # a low half first, upper-case hex
        (b'"\xc3\xa9 \xc3"', (4, None)),  # é is good; a cut-off sequence is not
        (b'"\xed\xa0\x80"', (2, None)),  # a surrogate written as UTF-8 bytes is not UTF-8
    ],
)
def test_text_fault_column(text: bytes, fault: tuple[int, str | None] | None) -> None:
    found = text_fault(text)
    if fault is None:
        assert found is None
        return
    col, escape = fault
    assert found is not None and found.col == col
    if escape is not None:
        assert found.message.startswith(f"{escape} is half of a surrogate pair")
    else:
        assert found.message.startswith("not valid UTF-8")
