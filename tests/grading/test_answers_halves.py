"""A resume's answers file read in two halves side by side (`grading/answers_halves.py`): whatever
the second half holds (only done answers, a bad line, a duplicate of a pair of the first half, an
answer to grade, a new system), the reader yields, counts, reports, skips, notes as answered and
keeps in its scan exactly what one read of the file gives."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tabench_dsl.grading import answers as answers_module
from tabench_dsl.grading import answers_scan
from tabench_dsl.grading.answer_slice import AnswerSlice
from tabench_dsl.grading.answers import AnswerReader
from tabench_dsl.grading.answers_scan import kept_scan
from tabench_dsl.grading.missing import Coverage
from tabench_dsl.grading.resume_skip import ResumeSkip
from tabench_dsl.store.pair_set import PairSet, pair_keys

QUESTIONS = [f"q{n:03d}" for n in range(200)]
SYSTEMS = ["s0", "s1", "s2"]


def line(system: str, question: str, answer: str = "a") -> str:
    return json.dumps({"system": system, "question": question, "answer": answer})


def done_set(pairs: list[tuple[str, str]]) -> PairSet:
    """The done pairs as a resume holds them: names numbered, keys in a set."""
    numbers: dict[str, int] = {}
    for name in [*SYSTEMS, *QUESTIONS, "s-new"]:
        numbers.setdefault(name, len(numbers))
    keys = pair_keys(numbers, [s for s, _ in pairs], [q for _, q in pairs])
    return PairSet(numbers, set(keys))


def read(path: Path, done: PairSet) -> tuple:
    """Everything a reading gives: the answers yielded, the problems and warnings in order, the
    count, the skipped count, the progress told, the answered questions of each system and the
    scan kept (its names, columns and notes)."""
    said: list[str] = []
    told: list[int] = []
    coverage = Coverage(QUESTIONS)
    skip = ResumeSkip(done, AnswerSlice(), coverage, told.append)
    reader = AnswerReader(
        path,
        set(QUESTIONS),
        on_problem=lambda p: said.append(f"problem {p.render()}"),
        on_warning=lambda p: said.append(f"warning {p.render()}"),
        done=skip,
        keep_scans=True,
    )
    got = [(a.system, a.question, a.answer) for a in skip.told(reader)]
    kept = kept_scan(str(path), set(QUESTIONS))
    assert kept is not None
    columns, f, _ = kept
    f.close()
    scan = columns.scan
    kept_answers = []  # each good answer's system, question and offset (names numbered in any order)
    for first in range(0, scan.count, 5):
        systems, questions, offsets = columns.chunk(first, min(first + 5, scan.count))
        names = scan.names.__getitem__
        kept_answers += zip(map(names, systems), map(names, questions), offsets, strict=True)
    missing = coverage.missing()
    return got, said, reader.count, skip.count, sum(told), missing, scan.notes, kept_answers


@pytest.fixture(autouse=True)
def _small_blocks(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(answers_module, "BLOCK_BYTES", 600)  # about ten lines a block
    monkeypatch.setattr(answers_scan, "CHUNK", 5)


PAIRS = [(s, q) for s in SYSTEMS for q in QUESTIONS if hash((s, q)) % 7]  # systems leave some out


@pytest.mark.parametrize(
    "second_half",
    ["done", "bad line", "duplicate of the first half", "to grade", "new system", "blank line"],
)
def test_a_halved_read_gives_what_one_read_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, second_half: str
) -> None:
    rows = [line(s, q, f"answer {s} {q}") for s, q in PAIRS]
    done = list(PAIRS)
    late = len(rows) * 3 // 4  # in the second half
    if second_half == "bad line":
        rows.insert(late, "not json")
    elif second_half == "duplicate of the first half":
        rows.insert(late, line(*PAIRS[3]))
    elif second_half == "to grade":
        done.remove(PAIRS[late])
    elif second_half == "new system":
        rows.insert(late, line("s-new", "q001"))
    elif second_half == "blank line":
        rows.insert(late, "")
    path = tmp_path / "answers.jsonl"
    path.write_text("\n".join(rows) + "\n")

    monkeypatch.setenv("TABENCH_READ_PROCESSES", "1")
    one = read(path, done_set(done))
    monkeypatch.setenv("TABENCH_READ_PROCESSES", "2")
    (tmp_path / "xdg").rename(tmp_path / "xdg-one")  # the halved read keeps a scan of its own
    halved = read(path, done_set(done))
    assert halved == one
    assert one[2] == len(PAIRS) + (second_half == "new system")  # the file is what the test means
    assert bool(one[1]) == (second_half in ("bad line", "duplicate of the first half"))
    assert one[5]  # some questions missing: the coverage is compared


def test_the_child_read_the_second_half(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With only done answers, the second half's lines are the child's: the reader reads only the
    first half (its lines, counted by the blocks it reads itself)."""
    path = tmp_path / "answers.jsonl"
    path.write_text("".join(line(s, q) + "\n" for s, q in PAIRS))
    monkeypatch.setenv("TABENCH_READ_PROCESSES", "2")
    taken: list[bool] = []
    real = AnswerReader._take_half

    def noted(self, half, seen, lines):
        taken.append(real(self, half, seen, lines))
        return taken[-1]

    monkeypatch.setattr(AnswerReader, "_take_half", noted)
    assert read(path, done_set(PAIRS))[2] == len(PAIRS)
    assert taken == [True]


@pytest.mark.parametrize("changed", ["first half", "second half", "none"])
def test_a_scan_kept_from_two_halves_is_bound_to_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, changed: str
) -> None:
    """Each process hashes the half it read; the scan's key takes both hashes and the cut, so a
    byte changed in either half (the size kept) reads the file again."""
    path = tmp_path / "answers.jsonl"
    path.write_text("".join(line(s, q) + "\n" for s, q in PAIRS))
    monkeypatch.setenv("TABENCH_READ_PROCESSES", "2")
    read(path, done_set(PAIRS))  # the second half taken from the child (as above), the scan kept
    kept = kept_scan(str(path), set(QUESTIONS))
    assert kept is not None and kept[0].scan.cut > 0
    kept[1].close()
    data = bytearray(path.read_bytes())
    at = {"first half": 20, "second half": len(data) - 20, "none": None}[changed]
    if at is not None:
        data[at] = ord("b") if data[at] != ord("b") else ord("c")
        path.write_bytes(bytes(data))
    again = kept_scan(str(path), set(QUESTIONS))
    assert (again is None) == (changed != "none")
    if again is not None:
        again[1].close()
