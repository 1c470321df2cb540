"""Answers files through `tabench grade` (`main(argv)`): CSV read like JSONL, empty names and
unknown keys, `--out` that is an input, and the slice options `--limit`, `--question`, `--system`.

The builtin judge grades here (no model named): it is deterministic and local, so what is tested is
which answers reach grading and how the file is read, not a judge.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from support.helpers_grading import write_battery

from tabench_dsl.cli import main
from tabench_dsl.grading.answer_counts import count_answers
from tabench_dsl.store.results import iter_records


async def run(argv: list[str]) -> int:
    return await asyncio.to_thread(main, argv)


def graded(path: Path) -> list[tuple[str, str, str]]:
    return sorted((r.system, r.question, r.answer) for r in iter_records(path))


def jsonl(folder: Path, rows: list[dict | str], name: str = "answers.jsonl") -> Path:
    path = folder / name
    path.write_text(
        "".join((json.dumps(r) if isinstance(r, dict) else r) + "\n" for r in rows), encoding="utf-8"
    )
    return path


def ans(system: str, question: str, answer: str) -> dict:
    return {"system": system, "question": question, "answer": answer}


# A BOM, CRLF line ends, a quoted answer over two lines with a comma and doubled quotes, columns in
# another order, an extra column, and a blank line.
CSV_TEXT = (
    "\ufeffquestion,system,answer,note\r\n"
    'h02,a,"The code is 7311,\r\nas the ""manual"" says",first\r\n'
    "\r\n"
    "h03,a,blue,second\r\n"
    "h03,b,green,third\r\n"
)


async def test_csv_answers_grade_like_the_same_answers_in_jsonl(work: Path, capsys) -> None:
    battery = write_battery(work)
    csv_path = work / "answers.csv"
    csv_path.write_text(CSV_TEXT, encoding="utf-8", newline="")
    assert await run(["grade", str(battery), "--answers", str(csv_path), "--out", "csv.jsonl"]) == 0
    err = capsys.readouterr().err
    assert "graded 3/3 in " in err  # the progress total counts records, not the six lines
    assert err.count("unknown key(s) 'note' ignored") == 1
    same = jsonl(
        work,
        [
            ans("a", "h02", 'The code is 7311,\r\nas the "manual" says'),
            ans("a", "h03", "blue"),
            ans("b", "h03", "green"),
        ],
    )
    assert await run(["grade", str(battery), "--answers", str(same), "--out", "jsonl.jsonl"]) == 0
    assert graded(work / "csv.jsonl") == graded(work / "jsonl.jsonl")
    assert len(graded(work / "csv.jsonl")) == 3
    # The progress total counts records, not lines: the two-line answer is one.
    assert count_answers(csv_path) == 3


async def test_bad_csv_records_are_named_at_the_line_where_they_start(work: Path, capsys) -> None:
    battery = write_battery(work)
    path = work / "answers.csv"
    path.write_bytes(
        b"system,question,answer\n"
        b'a,h02,"7311\nover two lines"\n'  # line 2, good
        b'b,h02,"spans\nthree\nlines",extra\n'  # line 4: one field too many
        b",h03,blue\n"  # line 7: empty system
        b"c,nope,x\n"  # line 8: unknown question
        b"c,h03,caf\xe9\n"  # line 9: not UTF-8, at column 10
        b"a,h02,again\n"  # line 10: duplicate of line 2
        b"d,h03\n"  # line 11: a field short
        b"d,h02,7311\n"  # line 12, good
    )
    assert await run(["grade", str(battery), "--answers", str(path)]) == 1
    err = capsys.readouterr().err
    assert f"{path}:4: bad answer: 4 field(s) where the header names 3" in err
    assert f"{path}:7: bad answer: `system` is empty" in err
    assert f"{path}:8: unknown question 'nope'" in err
    assert f"{path}:9:10: bad answer: not valid UTF-8 (byte 0xe9)" in err
    assert f"{path}:10: duplicate answer of system 'a' to question 'h02' (first at line 2)" in err
    assert f"{path}:11: bad answer: 2 field(s) where the header names 3" in err
    assert "6 bad answer line(s)" in err and "Traceback" not in err
    assert graded(work / "results.jsonl") == [("a", "h02", "7311\nover two lines"), ("d", "h02", "7311")]


async def test_a_csv_without_the_three_columns_is_one_bad_line(work: Path, capsys) -> None:
    battery = write_battery(work)
    path = work / "answers.csv"
    path.write_text("model,question,response\na,h02,7311\n", encoding="utf-8")
    assert await run(["grade", str(battery), "--answers", str(path)]) == 1
    err = capsys.readouterr().err
    assert f"{path}:1: bad CSV header: no system, answer column" in err
    assert "1 bad answer line(s)" in err


async def test_empty_names_or_non_string_fields_are_bad_lines_and_unknown_keys_warn_once(
    work: Path, capsys
) -> None:
    battery = write_battery(work)
    answers = jsonl(
        work,
        [
            {**ans("a", "h02", "7311"), "id": 1},
            ans("", "h03", "blue"),
            ans("  ", "h03", "blue"),
            ans("b", "", "blue"),
            ans("c", "h03", ""),
            {"system": 7, "question": "h03", "answer": "blue"},
            {"system": "d", "question": "h03", "answer": ["blue"]},
            {**ans("e", "h02", "7311"), "id": 2, "meta": {}},
            {**ans("f", "h02", "7311"), "id": 3, "meta": {}},
        ],
    )
    assert await run(["grade", str(battery), "--answers", str(answers)]) == 1
    err = capsys.readouterr().err
    assert f"{answers}:2: bad answer: `system` is empty" in err
    assert f"{answers}:3: bad answer: `system` is empty" in err
    assert f"{answers}:4: bad answer: `question` is empty" in err
    assert f"{answers}:5:" not in err  # an empty answer is graded (tests/cli/test_missing_answers.py)
    assert f"{answers}:6: bad answer: Expected `str`, got `int` - at `$.system`" in err
    assert f"{answers}:7: bad answer: Expected `str`, got `array` - at `$.answer`" in err
    assert "5 bad answer line(s)" in err
    # Each unknown key is named once, at its first line, and is a warning, not a bad line.
    assert f"tabench: warning: {answers}:1: unknown key(s) 'id' ignored" in err
    assert f"tabench: warning: {answers}:8: unknown key(s) 'meta' ignored" in err
    assert err.count("unknown key(s)") == 2
    assert graded(work / "results.jsonl") == [
        ("a", "h02", "7311"),
        ("c", "h03", ""),
        ("e", "h02", "7311"),
        ("f", "h02", "7311"),
    ]


async def test_unknown_keys_alone_do_not_fail_the_run(work: Path, capsys) -> None:
    battery = write_battery(work)
    answers = jsonl(work, [{**ans("a", "h02", "7311"), "id": 1}])
    assert await run(["grade", str(battery), "--answers", str(answers)]) == 0
    assert "unknown key(s) 'id' ignored" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["answers.jsonl", "answers.csv"])
async def test_out_may_not_be_the_answers_file(work: Path, capsys, name: str) -> None:
    battery = write_battery(work)
    answers = jsonl(work, [ans("a", "h02", "7311")], name=name)
    if name.endswith(".csv"):
        answers.write_text("system,question,answer\na,h02,7311\n", encoding="utf-8")
    before = answers.read_bytes()
    assert await run(["grade", str(battery), "--answers", str(answers), "--out", str(answers)]) == 2
    err = capsys.readouterr().err
    assert "that is the answers file; tabench never writes over its input" in err
    assert answers.read_bytes() == before


async def test_out_may_not_be_the_file_a_replay_judge_reads(work: Path, capsys) -> None:
    battery = write_battery(work)
    answers = jsonl(work, [ans("a", "h02", "7311"), ans("a", "h03", "blue")])
    assert await run(["grade", str(battery), "--answers", str(answers), "--out", "first.jsonl"]) == 0
    before = (work / "first.jsonl").read_bytes()
    capsys.readouterr()
    argv = ["grade", str(battery), "--answers", str(answers), "--judge", "replay:first.jsonl"]
    assert await run([*argv, "--out", "first.jsonl", "--resume"]) == 2
    err = capsys.readouterr().err
    assert "that is the results file --judge replays" in err and "Traceback" not in err
    assert (work / "first.jsonl").read_bytes() == before


def slice_answers(work: Path) -> Path:
    return jsonl(
        work,
        [
            ans("a", "h02", "7311"),
            ans("a", "h03", "blue"),
            ans("b", "h02", "7311"),
            ans("b", "h03", "green"),
            ans("c", "h02", "7311"),
            ans("c", "h03", "blue"),
        ],
    )


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (["--question", "h03"], [("a", "h03"), ("b", "h03"), ("c", "h03")]),
        (["--system", "b", "--system", "c"], [("b", "h02"), ("b", "h03"), ("c", "h02"), ("c", "h03")]),
        (["--system", "c", "--question", "h02", "--question", "h03"], [("c", "h02"), ("c", "h03")]),
        (["--limit", "2"], [("a", "h02"), ("a", "h03")]),
        (["--question", "h03", "--limit", "2"], [("a", "h03"), ("b", "h03")]),
    ],
)
async def test_grade_a_slice(work: Path, capsys, extra: list[str], expected: list) -> None:
    battery = write_battery(work)
    answers = slice_answers(work)
    assert await run(["grade", str(battery), "--answers", str(answers), *extra, "--json"]) == 0
    out = work / "results.jsonl"
    got = sorted((r.system, r.question) for r in iter_records(out)) if out.exists() else []
    assert got == expected
    err = capsys.readouterr().err
    assert f"graded {len(expected)} answer(s)" in err
    # Progress counts to the answers the slice selected, not to the lines of the file.
    assert f"graded {len(expected)}/{len(expected)} in " in err


async def test_resume_with_a_limit_grades_the_next_slice(work: Path, capsys) -> None:
    battery = write_battery(work)
    answers = slice_answers(work)
    argv = ["grade", str(battery), "--answers", str(answers), "--question", "h02", "--limit", "2"]
    assert await run(argv) == 0
    assert [(r.system, r.question) for r in iter_records(work / "results.jsonl")] == [
        ("a", "h02"),
        ("b", "h02"),
    ]
    # The progress total is the limit, not the six lines of the file.
    assert "graded 2/2 in " in capsys.readouterr().err
    # The two done are skipped (and not counted by --limit); the filter came first, so the skipped
    # count is of h02 answers only.
    assert await run([*argv, "--resume"]) == 0
    err = capsys.readouterr().err
    assert "graded 1 answer(s)" in err and "skipped 2 already done" in err
    assert [(r.system, r.question) for r in iter_records(work / "results.jsonl")] == [
        ("a", "h02"),
        ("b", "h02"),
        ("c", "h02"),
    ]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["--question", "h99", "--question", "h02", "--question", "zz"],
            "--question: the battery has no question h99, zz (questions in the battery: h01, h02, h03)",
        ),
        # A typo in --system grades nothing: an error naming the systems the answers are from.
        (
            ["--system", "b", "--system", "nobody", "--system", "agnet"],
            "--system: no answer is from agnet, nobody (systems in the answers: a, b, c)",
        ),
        (["--tag", "hard"], "--tag: no question of the battery has tag hard (tags in the battery: none)"),
        (["--limit", "0"], "--limit must be at least 1"),
        (["--limit", "x"], "argument --limit: invalid int value"),
    ],
)
async def test_slice_usage_errors_exit_2(work: Path, capsys, extra: list[str], message: str) -> None:
    battery = write_battery(work)
    answers = slice_answers(work)
    assert await run(["grade", str(battery), "--answers", str(answers), *extra]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (work / "results.jsonl").exists()
