"""A resumed grading keeps what reading a JSONL answers file found (`grading/answers_scan.py`); the
next reading of the same bytes replays it. What a replay yields, counts and reports is what reading
the file gives, bad lines, warnings and duplicates included, whichever pairs are done; any change
to the file, the battery's questions or the kept entry reads the file afresh."""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from support.done_pairs import DonePairs

from tabench_dsl.core.errors import UsageError
from tabench_dsl.grading import answers as answers_module
from tabench_dsl.grading import answers_scan
from tabench_dsl.grading.answers import AnswerReader

QUESTIONS = {f"q{n}" for n in range(300)}


def line(system: str, question: str, answer: str = "a") -> str:
    return json.dumps({"system": system, "question": question, "answer": answer})


class Replays:
    """Counts the kept scans replayed (a file read afresh replays none)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        real = answers_scan.scan_items

        def counted(*args):
            self.count += 1
            return real(*args)

        monkeypatch.setattr(answers_module, "scan_items", counted)


@pytest.fixture
def replays(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Replays:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(answers_module, "BLOCK_BYTES", 400)  # about eight lines a block
    monkeypatch.setattr(answers_scan, "CHUNK", 5)  # chunks that end between notes and across them
    return Replays(monkeypatch)


def read(path, done, *, keep: bool = True, questions=QUESTIONS):
    """The answers yielded, the problems and warnings (worded, in order), the pairs passed over
    and the count."""
    said: list[str] = []
    pairs = DonePairs(done)
    reader = AnswerReader(
        path,
        questions,
        on_problem=lambda p: said.append(f"problem {p.render()}"),
        on_warning=lambda p: said.append(f"warning {p.render()}"),
        done=pairs,
        keep_scans=keep,
    )
    got = [(a.system, a.question, a.answer) for a in reader]
    return got, said, pairs.passed, reader.count, reader.problems


BAD = [
    "",
    "\ufeff" + line("s0", "q201"),  # a byte order mark
    "not json",
    '{"system": "s0", "question": "q2"',  # torn
    line("", "q6"),  # an empty name
    line("s0", "nope"),  # an unknown question
    line("s0", "q0"),  # a duplicate of the first line
    json.dumps({"system": "s0", "question": "q202", "answer": "x", "extra": 1}),  # another key
    json.dumps({"system": "s1", "question": "q203", "answer": "y", "extra": 1, "more": 2}),
    json.dumps({"system": "s0", "question": "q8", "answer": 3}),
    line("s0", "q204") + "\r",
]
#: The answers among the lines above that are good (a BOM, other keys, a carriage return).
GOOD_AMONG_BAD = {("s0", "q201"), ("s0", "q202"), ("s1", "q203"), ("s0", "q204")}


@pytest.fixture
def answers(tmp_path: Path) -> tuple[Path, list[tuple[str, str]]]:
    rows = [(f"s{n % 3}", f"q{n}") for n in range(120)]
    text = [line(s, q, f"answer {s} {q}") for s, q in rows]
    for place, bad in enumerate(BAD):
        text.insert(7 + place * 9, bad)
    path = tmp_path / "answers.jsonl"
    path.write_text("\n".join(text) + "\n", encoding="utf-8")
    return path, rows


@pytest.mark.parametrize("share", [0.0, 0.5, 0.9, 1.0])
def test_a_replay_reads_as_the_file_does(answers, replays: Replays, share: float) -> None:
    path, rows = answers
    done = set(rows[: int(len(rows) * share)][::-1][::2]) if share < 1 else {*rows, *GOOD_AMONG_BAD}
    fresh = read(path, done, keep=False)
    assert read(path, done) == fresh  # read, and its scan kept
    assert replays.count == 0
    assert read(path, done) == fresh  # the scan replayed
    assert replays.count == 1
    assert fresh[3] == len(rows) + 4 and fresh[4] == len(BAD) - 5  # the file is what the test means
    assert any("unknown key(s) 'extra' ignored" in said for said in fresh[1])


def test_a_changed_file_is_read_afresh(answers, replays: Replays) -> None:
    path, rows = answers
    done = {*rows, *GOOD_AMONG_BAD}
    read(path, done)
    text = path.read_text(encoding="utf-8").replace('"answer s1 q4"', '"answer s1 q5"')  # same size
    path.write_text(text, encoding="utf-8")
    got = read(path, done - {("s1", "q4")})
    assert replays.count == 0
    assert got[0] == [("s1", "q4", "answer s1 q5")]


def test_other_questions_read_afresh(answers, replays: Replays) -> None:
    path, rows = answers
    read(path, set(rows))
    fewer = QUESTIONS - {"q9"}
    got = read(path, set(rows), questions=fewer)
    assert replays.count == 0
    assert "problem " + f"{path}:" in " ".join(got[1]) and any("unknown question 'q9'" in s for s in got[1])


@pytest.mark.parametrize("damage", ["flip", "truncate", "foreign key"])
def test_a_damaged_or_foreign_entry_is_never_replayed(answers, replays: Replays, tmp_path, damage) -> None:
    path, rows = answers
    fresh = read(path, set(rows[:60]), keep=False)
    read(path, set(rows[:60]))
    (entry,) = (tmp_path / "xdg" / "tabench" / "answers").iterdir()
    data = bytearray(entry.read_bytes())
    if damage == "flip":
        data[len(data) // 2] ^= 1
        entry.write_bytes(bytes(data))
    elif damage == "truncate":
        entry.write_bytes(bytes(data[: len(data) - 3]))
    else:  # a valid entry signed by another user's key
        key = tmp_path / "xdg" / "tabench" / "index.key"
        key.write_bytes(os.urandom(len(key.read_bytes())))
    assert read(path, set(rows[:60])) == fresh
    assert replays.count == 0


def test_a_file_changed_while_it_is_replayed_stops_the_run(answers, replays: Replays) -> None:
    path, rows = answers
    read(path, set(rows[:100]))
    reader = AnswerReader(path, QUESTIONS, done=DonePairs(set(rows[:100]), blocks=False), keep_scans=True)
    it = iter(reader)
    next(it)  # the scan checked against the file's bytes, and replayed
    assert replays.count == 1
    path.write_text(path.read_text(encoding="utf-8").replace('"s1"', '"s9"'), encoding="utf-8")
    with pytest.raises(UsageError, match="changed while it was read"):
        list(it)


def test_several_files_or_a_plain_read_keep_nothing(answers, replays: Replays, tmp_path) -> None:
    path, _ = answers
    other = tmp_path / "more.jsonl"
    other.write_text(line("s7", "q1") + "\n", encoding="utf-8")
    list(AnswerReader([path, other], QUESTIONS, done=DonePairs(set(), blocks=False), keep_scans=True))
    list(AnswerReader(path, QUESTIONS, keep_scans=True))  # no resume: nothing to skip
    folder = tmp_path / "xdg" / "tabench" / "answers"
    assert not folder.exists() or not any(folder.iterdir())


def test_a_read_stopped_early_keeps_nothing(answers, replays: Replays, tmp_path) -> None:
    path, _ = answers
    it = iter(AnswerReader(path, QUESTIONS, done=DonePairs(set(), blocks=False), keep_scans=True))
    next(it)
    it.close()  # as `--limit` stops reading
    folder = tmp_path / "xdg" / "tabench" / "answers"
    assert not folder.exists() or not any(folder.iterdir())
    read(path, set())
    assert replays.count == 0


def test_a_pipe_is_read_as_ever_and_keeps_nothing(answers, replays: Replays, tmp_path) -> None:
    path, rows = answers
    done = {*rows, *GOOD_AMONG_BAD}
    fresh = read(path, done, keep=False)
    pipe = tmp_path / "answers.fifo"
    os.mkfifo(pipe)
    for _ in range(2):  # a scan kept for the first would read the second up to hash it
        with ThreadPoolExecutor(1) as pool:
            pool.submit(lambda: pipe.write_bytes(path.read_bytes()))
            got = read(pipe, done)
        assert got[0] == fresh[0] and got[3] == fresh[3]
    assert replays.count == 0
    assert not any((tmp_path / "xdg" / "tabench" / "answers").glob("*"))


def test_a_file_replaced_after_its_bytes_were_checked_is_not_read_for_them(
    tmp_path: Path, replays: Replays, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The replay reads the answers from the very file whose bytes were hashed to check the scan:
    one renamed into its place in between (a newer export) is not where the offsets are read."""
    path, newer = tmp_path / "answers.jsonl", tmp_path / "newer.jsonl"
    old = [line("s0", "q0"), "not json: a line exactly as long as an answer one!!", line("s0", "q2", "old")]
    path.write_text("\n".join(old) + "\n", encoding="utf-8")
    new = [old[0], line("s0", "q1", "one"), line("s0", "q2", "new")]
    assert [len(x) for x in new] == [len(x) for x in old]
    newer.write_text("\n".join(new) + "\n", encoding="utf-8")
    done = {("s0", "q0")}
    fresh = read(path, done, keep=False)
    assert fresh[0] == [("s0", "q2", "old")]
    read(path, done)  # the scan kept
    real = hashlib.file_digest

    def then_replaced(f, digest):
        found = real(f, digest)
        if newer.exists():
            os.replace(newer, path)  # once the bytes are checked, before any answer is read
        return found

    monkeypatch.setattr(hashlib, "file_digest", then_replaced)
    assert read(path, done) == fresh
    assert replays.count == 1 and not newer.exists()


def test_a_file_rewritten_in_place_after_its_bytes_were_checked_stops_the_run(
    tmp_path: Path, replays: Replays, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file written over in place once its bytes were checked (`>` in a shell: the same file,
    new bytes) is not replayed with the old scan's problems and the new answers: the run stops,
    as it does when a line read is not the one the scan names, though here each line is."""
    path = tmp_path / "answers.jsonl"
    old = [line("s0", "q0"), "not json: a line exactly as long as an answer one!!", line("s0", "q2", "old")]
    new = [old[0], line("s0", "q1", "one"), line("s0", "q2", "new")]
    assert [len(x) for x in new] == [len(x) for x in old]
    path.write_text("\n".join(old) + "\n", encoding="utf-8")
    os.utime(path, (1e9, 1e9))  # written long ago: the rewrite below is not within its clock tick
    done = {("s0", "q0")}
    read(path, done)  # the scan kept
    real = hashlib.file_digest
    rewritten: list[bool] = []

    def then_rewritten(f, digest):
        found = real(f, digest)
        if not rewritten:
            with open(path, "r+b") as again:  # the same file, its bytes written over
                again.write(("\n".join(new) + "\n").encode())
            rewritten.append(True)
        return found

    monkeypatch.setattr(hashlib, "file_digest", then_rewritten)
    with pytest.raises(UsageError, match="changed while it was read"):
        read(path, done)
    assert replays.count == 1


def test_no_package_metadata_reads_and_keeps_as_ever(
    answers, replays: Replays, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An install whose msgspec has no package metadata (a bundled or vendored copy): the scan's
    key names it so, and a resume reads, keeps and replays as ever, with no traceback."""
    path, rows = answers
    done = {*rows, *GOOD_AMONG_BAD}
    fresh = read(path, done, keep=False)

    def no_metadata(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", no_metadata)
    assert read(path, done) == fresh
    assert read(path, done) == fresh
    assert replays.count == 1


def test_a_scan_changed_in_place_while_it_is_replayed_stops_the_run(
    answers, replays: Replays, tmp_path
) -> None:
    """A kept scan's columns are read a chunk at a time after its entry was checked: one written to
    in place meanwhile (only tabench's own cache file could be) is never read as the scan."""
    path, rows = answers
    done = set(rows)
    read(path, done)
    (entry,) = (tmp_path / "xdg" / "tabench" / "answers").iterdir()
    pairs = DonePairs(done)
    reader = AnswerReader(path, QUESTIONS, done=pairs, keep_scans=True)
    it = iter(reader)
    next(it)  # the first good answer not done (one of the bad lines' good answers): replaying
    assert replays.count == 1
    with open(entry, "r+b") as f:  # a byte of the last chunk's offsets, the columns' last part
        size = os.fstat(f.fileno()).st_size
        f.seek(size - 16)
        f.write(b"\xff")
    with pytest.raises(UsageError, match="changed while in use"):
        list(it)
