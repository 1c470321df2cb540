"""Entries kept in tabench's cache folder (`core/kept_entries.py`): read back only when this user's
key signed them for the same kind, and removed once unused for a month."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tabench_dsl.core import kept_entries
from tabench_dsl.core.kept_entries import open_entry, private_folder, write_entry


def read_entry(path: Path, person: bytes) -> bytes | None:
    """The whole body of the entry at `path` as `open_entry` checks it, or None."""
    entry = open_entry(path, person)
    if entry is None:
        return None
    try:
        return entry.read(0, entry.size)
    finally:
        entry.close()


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    made = private_folder("things")
    assert made == tmp_path / "xdg" / "tabench" / "things"
    return made


def test_an_entry_reads_back_for_its_kind_only(folder: Path) -> None:
    write_entry(folder / "a", b"body", b"tabench-things")
    assert read_entry(folder / "a", b"tabench-things") == b"body"
    assert read_entry(folder / "a", b"tabench-others") is None
    (folder / "b").write_bytes((folder / "a").read_bytes()[:-1] + b"!")
    assert read_entry(folder / "b", b"tabench-things") is None


def test_an_entry_written_in_parts_opens_checked_and_reads_in_parts(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kept_entries, "CHECK_CHUNK", 3)  # the signature checked over many reads
    write_entry(folder / "a", [b"head", b"-", b"questions"], b"tabench-things")
    assert read_entry(folder / "a", b"tabench-things") == b"head-questions"
    entry = open_entry(folder / "a", b"tabench-things")
    assert entry is not None and entry.size == 14
    assert entry.read(5, 9) == b"questions" and entry.read(0, 4) == b"head"
    assert entry.read(12, 10) == b"ns"  # past the end: what there is
    entry.close()
    assert open_entry(folder / "a", b"tabench-others") is None
    data = (folder / "a").read_bytes()
    for name, damaged in (("cut", data[:-1]), ("flipped", data[:-1] + b"!"), ("short", data[:5])):
        (folder / name).write_bytes(damaged)
        assert open_entry(folder / name, b"tabench-things") is None
    (folder / "link").symlink_to(folder / "a")  # an entry is never read through a link
    assert open_entry(folder / "link", b"tabench-things") is None
    assert open_entry(folder / "missing", b"tabench-things") is None


def test_a_folder_others_may_write_is_not_used(folder: Path) -> None:
    folder.chmod(0o777)
    assert private_folder("things") is None


def test_entries_unused_for_a_month_go_when_another_is_kept(folder: Path) -> None:
    month = kept_entries.UNUSED_DAYS * 86400
    for name in ("old", "used", "recent"):
        write_entry(folder / name, name.encode(), b"tabench-things")
    long_ago = time.time() - month - 3600
    for name in ("old", "used"):
        os.utime(folder / name, (long_ago, long_ago))
    os.utime(folder / "recent", (time.time() - month + 3600,) * 2)
    assert read_entry(folder / "used", b"tabench-things") == b"used"  # a use is its new time
    write_entry(folder / "new", b"new", b"tabench-things")
    assert sorted(p.name for p in folder.iterdir()) == ["new", "recent", "used"]


def test_an_entry_checked_today_is_not_read_through_again_until_its_file_changes(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_entry(folder / "a", b"head-questions", b"tabench-things")
    write_entry(folder / "b", b"head-questions", b"tabench-things")
    assert read_entry(folder / "a", b"tabench-things") == b"head-questions"  # read through, noted
    notes = private_folder(kept_entries.CHECKED)
    assert notes is not None and len(list(notes.iterdir())) == 1
    # A check that reads nothing would fail every entry: the noted one opens without it.
    monkeypatch.setattr(kept_entries, "CHECK_CHUNK", 0)
    assert read_entry(folder / "a", b"tabench-things") == b"head-questions"
    assert read_entry(folder / "a", b"tabench-others") is None  # noted for its kind only
    assert read_entry(folder / "b", b"tabench-things") is None  # never checked: read through
    # Written in place, even with its old modification time put back: read through, refused.
    info = os.stat(folder / "a")
    with open(folder / "a", "r+b") as f:
        f.seek(info.st_size - 3)
        f.write(b"ONS")
    os.utime(folder / "a", ns=(info.st_atime_ns, info.st_mtime_ns))
    monkeypatch.setattr(kept_entries, "CHECK_CHUNK", 1 << 20)
    assert read_entry(folder / "a", b"tabench-things") is None
    # A note is this user's key's: one written by anything else notes nothing.
    assert read_entry(folder / "b", b"tabench-things") == b"head-questions"
    for note in notes.iterdir():
        note.write_bytes(bytes(32))
    monkeypatch.setattr(kept_entries, "CHECK_CHUNK", 0)
    assert read_entry(folder / "b", b"tabench-things") is None


def test_an_entry_used_a_day_ago_is_read_through_and_touched(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_entry(folder / "a", b"body", b"tabench-things")
    assert read_entry(folder / "a", b"tabench-things") == b"body"
    yesterday = time.time() - kept_entries.CHECKED_SECONDS - 60
    os.utime(folder / "a", (yesterday, yesterday))
    monkeypatch.setattr(kept_entries, "CHECK_CHUNK", 0)
    assert read_entry(folder / "a", b"tabench-things") is None  # read through again
    monkeypatch.setattr(kept_entries, "CHECK_CHUNK", 1 << 20)
    assert read_entry(folder / "a", b"tabench-things") == b"body"
    assert os.stat(folder / "a").st_mtime > yesterday + 3600  # touched: its last use is today
