"""A resume reads blocks of done answers at once (`AnswerReader(done=...)`); what it
reads, counts and reports is what the line-by-line reading gives, bad lines and all."""

from __future__ import annotations

import json

import pytest
from support.done_pairs import DonePairs

from tabench_dsl.grading import answers as answers_module
from tabench_dsl.grading.answers import AnswerReader
from tabench_dsl.store import key_cells
from tabench_dsl.store.key_cells import KeyCells
from tabench_dsl.store.pair_set import pair_keys

QUESTIONS = {f"q{n}" for n in range(300)}


def line(system: str, question: str, answer: str = "a") -> str:
    return json.dumps({"system": system, "question": question, "answer": answer})


def read(path, done, *, blocks: bool):
    """The answers yielded, the problems (worded), the pairs passed over and the count."""
    problems: list[str] = []
    # The pairs seen laid out as a resume lays them out, in the rows of the done pairs' systems
    # (with `key_layout`'s rows) or in a set; s0 and s1 are numbered first, so s2's pairs, numbered
    # as the reader comes to them, have no row.
    numbers = {name: n for n, name in enumerate(["s0", "s1", *sorted(QUESTIONS)])}
    layout = KeyCells(pair_keys(numbers, [s for s in ("s0", "s1") for _ in QUESTIONS], sorted(QUESTIONS) * 2))
    pairs = DonePairs(done, blocks=blocks, numbers=numbers, cells=layout)
    reader = AnswerReader(
        path,
        QUESTIONS,
        on_problem=lambda p: problems.append(f"{p.line}:{p.col}: {p.message}"),
        done=pairs,
    )
    got = [(a.system, a.question, a.answer) for a in reader]
    return got, problems, pairs.passed, reader.count, pairs.taken


@pytest.fixture(autouse=True, params=["keys in a set", "keys in rows"])
def key_layout(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test both ways `store/key_cells.py` holds pair keys: a few keys go to a set, and here
    to rows too (as ten million would)."""
    if request.param == "keys in rows":
        monkeypatch.setattr(key_cells, "DENSE_FROM", 0)


@pytest.fixture
def small_blocks(monkeypatch):
    monkeypatch.setattr(answers_module, "BLOCK_BYTES", 400)  # about eight lines a block


def test_done_blocks_are_taken_whole(tmp_path, small_blocks):
    rows = [(f"s{n % 3}", f"q{n}") for n in range(200)]
    path = tmp_path / "a.jsonl"
    path.write_text("".join(line(s, q) + "\n" for s, q in rows))
    done = set(rows[:150])
    by_blocks = read(path, done, blocks=True)
    assert by_blocks[:4] == read(path, done, blocks=False)[:4]
    assert by_blocks[0] == [(s, q, "a") for s, q in rows[150:]]
    assert sum(by_blocks[4]) > 100  # most of the done lines went by in blocks


BAD_LINES = [
    "",  # blank
    "   ",
    "\ufeff" + line("s0", "q1"),  # a byte order mark
    "not json",
    '{"system": "s0", "question": "q2"',  # torn
    line("s0", "q3") + ", " + line("s0", "q4"),  # two objects on one line
    '{"system": "s0",',  # an object over two lines, each part starting with `{`
    '{"question": "q5", "answer": "a"}',
    # an object over two lines, the second not starting with `{`, beside a line of two objects: as
    # many objects as lines, but not one a line
    '{"system": "s0"\n"question": "q5", "answer": "a"}\n' + line("s0", "q3") + ", " + line("s0", "q4"),
    line("", "q6"),  # an empty name
    line("s0", "  "),
    line("s0", "nope"),  # an unknown question
    line("s0", "q0"),  # a duplicate of the first line
    json.dumps({"system": "s0", "question": "q7", "answer": "a", "extra": 1}),  # another key
    json.dumps({"system": "s0", "question": "q8", "answer": 3}),
    "[1, 2]",
    '  {"system": "s0", "question": "q9", "answer": "a"}',  # spaces before it
    line("s0", "q10") + "\r",
]


@pytest.mark.parametrize("bad", BAD_LINES)
def test_a_bad_line_among_done_answers_is_read_and_reported_as_ever(tmp_path, small_blocks, bad):
    rows = [("s0", f"q{n}") for n in range(11, 60)]
    text = (
        [line("s0", "q0")] + [line(s, q) for s, q in rows[:20]] + [bad] + [line(s, q) for s, q in rows[20:]]
    )
    path = tmp_path / "a.jsonl"
    path.write_text("\n".join(text) + "\n", encoding="utf-8")
    done = {("s0", "q0"), *rows, *(("s0", f"q{n}") for n in range(1, 11))}
    assert read(path, done, blocks=True)[:4] == read(path, done, blocks=False)[:4]


def test_several_files_keep_where_each_pair_was_first(tmp_path, small_blocks):
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    first.write_text("".join(line("s0", f"q{n}") + "\n" for n in range(40)))
    second.write_text("".join(line("s1", f"q{n}") + "\n" for n in range(40)) + line("s0", "q7") + "\n")
    done = {(s, f"q{n}") for s in ("s0", "s1") for n in range(40)}
    assert read([first, second], done, blocks=True)[:4] == read([first, second], done, blocks=False)[:4]
    assert read([first, second], done, blocks=True)[1] == [
        f"41:None: duplicate answer of system 's0' to question 'q7' (first at {first}:8); skipped"
    ]
