"""A compiled battery kept on disk (`language/compile_cache.py`) is given back only for the very same
inputs: byte-identical to a fresh compile, and compiled afresh after any change to a rubric, a
policy, the manifest, a scorer file, the files a rubric pattern matches or tabench's version, and
whenever the kept entry is damaged or signed by another key."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from unittest import mock

import pytest

from tabench_dsl.core.errors import UsageError
from tabench_dsl.core.resources import specs_dir
from tabench_dsl.language import battery as battery_module
from tabench_dsl.language import compile_cache, render, scorer_templates
from tabench_dsl.language.battery import load_battery
from tabench_dsl.language.compile_cache import compiled_battery
from tabench_dsl.language.render import compile_battery

GOLDEN = Path(__file__).parents[1] / "golden"
CASES = sorted(p.name for p in GOLDEN.iterdir() if (p / "battery.yaml").is_file())


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg" / "tabench" / "compiled"


class Compiles:
    """Counts the compiles `compiled_battery` makes (a kept entry used makes none): each one
    parses the battery (`battery.load_battery`) once."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        real = battery_module.load_battery

        def counted(*args, **kwargs):
            self.count += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(battery_module, "load_battery", counted)


@pytest.fixture
def compiles(monkeypatch: pytest.MonkeyPatch) -> Compiles:
    return Compiles(monkeypatch)


def fresh(path: Path):
    """A compile from the files as they are now (the templates this process keeps read again)."""
    for cached in (scorer_templates.scorer_environment, scorer_templates.load_template, render._system_joins):
        cached.cache_clear()
    return compile_battery(load_battery(path))


@pytest.mark.parametrize("spool", [compile_cache.SPOOL_BYTES, 1])
def test_an_entry_whose_questions_spill_to_disk_reads_as_a_fresh_compile(
    spool: int, tmp_path: Path, compiles: Compiles, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The questions' bytes are spooled while the entry is written: in memory, or (spool of 1
    # byte) in a temporary file from the first question on.
    monkeypatch.setattr(compile_cache, "SPOOL_BYTES", spool)
    battery = tmp_path / CASES[0]
    shutil.copytree(GOLDEN / CASES[0], battery)
    compiled_battery(battery)
    second = compiled_battery(battery)
    assert compiles.count == 1
    assert second == fresh(battery)
    assert [second.questions[qid] for qid in second.questions] == list(fresh(battery).questions.values())


def test_no_room_to_spool_the_questions_compiles_without_keeping(
    tmp_path: Path, private_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The spool's temporary file cannot be made (its folder is gone): the battery is compiled as
    # without a cache, and nothing is kept.
    monkeypatch.setattr(compile_cache, "SPOOL_BYTES", 1)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "gone"))
    battery = tmp_path / CASES[0]
    shutil.copytree(GOLDEN / CASES[0], battery)
    assert compiled_battery(battery) == fresh(battery)
    assert not any(private_cache.glob("*.msgpack"))


@pytest.mark.parametrize("case", CASES)
def test_a_kept_compile_equals_a_fresh_one(case: str, tmp_path: Path, compiles: Compiles) -> None:
    battery = tmp_path / case
    shutil.copytree(GOLDEN / case, battery)
    first = compiled_battery(battery)
    second = compiled_battery(battery)
    assert compiles.count == 1  # the second came from the cache
    assert first == second == fresh(battery)
    for path in (battery / "expected").glob("*.system.txt"):  # and the hand-written prompts
        qid = path.name.removesuffix(".system.txt")
        assert second.questions[qid].system == path.read_bytes().decode("utf-8")


@pytest.fixture
def battery(tmp_path: Path) -> Path:
    """A battery with its own scorer folder (a copy of the shipped one) and a rubric pattern."""
    folder = tmp_path / "b"
    folder.mkdir()
    shutil.copytree(specs_dir() / "tabench-1.1", folder / "myscorer")
    (folder / "battery.yaml").write_text(
        "name: cached\nscorer: myscorer\npolicies: [house.policy]\nrubrics: ['*.rubric']\n", encoding="utf-8"
    )
    (folder / "house.policy").write_text("S1: Judge only what the answer says.\n", encoding="utf-8")
    (folder / "a.rubric").write_text('question q1 {\n  prompt "One?"\n  gold "Gold 1"\n}\n', encoding="utf-8")
    return folder


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


EDITS = {
    "rubric byte": lambda b: edit(b / "a.rubric", "Gold 1", "Gold 2"),
    "policy": lambda b: edit(b / "house.policy", "S1: Judge", "S1: Grade"),
    "manifest": lambda b: edit(b / "battery.yaml", "name: cached", "name: renamed"),
    "scorer template": lambda b: edit(b / "myscorer" / "system.j2", "{{ policies }}", "{{ policies }}!"),
    "scorer settings": lambda b: edit(b / "myscorer" / "scorer.yaml", "name: tabench-1.1", "name: mine-1.1"),
    "a new rubric file": lambda b: (b / "b.rubric").write_text(
        'question q2 {\n  prompt "Two?"\n  gold "Gold 2"\n}\n', encoding="utf-8"
    ),
}


@pytest.mark.parametrize("change", sorted(EDITS))
def test_any_change_compiles_afresh(change: str, battery: Path, compiles: Compiles) -> None:
    before = compiled_battery(battery)
    assert compiled_battery(battery) == before and compiles.count == 1
    EDITS[change](battery)
    expected = fresh(battery)
    after = compiled_battery(battery)
    assert compiles.count == 2
    assert after == expected and after != before
    assert compiled_battery(battery) == after and compiles.count == 2  # kept again, then reused


def test_a_rubric_swapped_for_a_link_outside_is_refused_not_reused(
    battery: Path, tmp_path: Path, compiles: Compiles
) -> None:
    compiled_battery(battery)
    outside = tmp_path / "outside.rubric"
    shutil.copy(battery / "a.rubric", outside)
    (battery / "a.rubric").unlink()
    (battery / "a.rubric").symlink_to(outside)  # the same bytes, now outside the battery folder
    opened: list[str] = []
    real_open = open

    def watched_open(file, *args, **kwargs):
        opened.append(os.path.realpath(file) if isinstance(file, str | Path) else file)
        return real_open(file, *args, **kwargs)

    with (
        mock.patch("builtins.open", watched_open),
        mock.patch("os.open", _watched_os_open(opened)),
        pytest.raises(Exception, match="outside the battery folder"),
    ):
        compiled_battery(battery)
    assert str(outside) not in opened  # not even read to check the kept entry against it


def _watched_os_open(opened: list):
    real = os.open

    def watched(path, *args, **kwargs):
        opened.append(os.path.realpath(path))
        return real(path, *args, **kwargs)

    return watched


def test_another_tabench_version_compiles_afresh(
    battery: Path, compiles: Compiles, monkeypatch: pytest.MonkeyPatch
) -> None:
    compiled_battery(battery)
    monkeypatch.setattr(compile_cache, "__version__", "99.0")
    compiled_battery(battery)
    assert compiles.count == 2


def entry_of(private_cache: Path) -> Path:
    (entry,) = private_cache.glob("*.msgpack")
    return entry


@pytest.mark.parametrize("damage", ["flip a byte", "truncate", "empty", "another key"])
def test_a_damaged_or_foreign_entry_is_never_used(
    damage: str, battery: Path, private_cache: Path, compiles: Compiles, tmp_path: Path
) -> None:
    expected = fresh(battery)
    assert compiled_battery(battery) == expected  # read from the entry it has just written
    entry = entry_of(private_cache)
    data = bytearray(entry.read_bytes())
    if damage == "flip a byte":
        at = data.find(b"Gold 1")
        data[at + 5] = ord("9")  # the gold answer inside the kept prompt
        entry.write_bytes(bytes(data))
    elif damage == "truncate":
        entry.write_bytes(bytes(data[: len(data) // 2]))
    elif damage == "empty":
        entry.write_bytes(b"")
    else:
        key = private_cache.parent / "index.key"
        key.chmod(0o600)
        key.write_bytes(b"k" * 32)  # the entry was signed with the key before
    again = compiled_battery(battery)
    assert compiles.count == 2
    assert again == expected


def test_no_private_folder_no_cache(battery: Path, private_cache: Path, compiles: Compiles) -> None:
    private_cache.parent.mkdir(parents=True)
    private_cache.parent.chmod(0o777)  # a folder others can write: nothing kept there is trusted
    try:
        assert compiled_battery(battery) == compiled_battery(battery) == fresh(battery)
        assert compiles.count == 2
        assert not private_cache.exists()
    finally:
        private_cache.parent.chmod(0o700)


def three_questions(battery: Path) -> None:
    (battery / "a.rubric").write_text(
        "".join(f'question q{n} {{\n  prompt "Question {n}?"\n  gold "Gold {n}"\n}}\n' for n in (1, 2, 3)),
        encoding="utf-8",
    )


def test_a_kept_battery_reads_each_question_when_asked_and_checks_its_bytes(
    battery: Path, private_cache: Path, compiles: Compiles
) -> None:
    three_questions(battery)
    first = fresh(battery)
    compiling = compiled_battery(battery)
    # The run that compiles goes on with the entry it wrote: no compiled prompt is held.
    assert type(compiling.questions).__name__ == "KeptQuestions" and compiling == first
    kept = compiled_battery(battery)
    assert compiles.count == 1
    assert type(kept.questions).__name__ == "KeptQuestions"  # not a dict decoded whole
    assert list(kept.questions) == ["q1", "q2", "q3"] and len(kept.questions) == 3
    assert "q2" in kept.questions and "q4" not in kept.questions
    assert kept.questions["q2"] == first.questions["q2"]
    # q3's bytes changed in place after the entry was checked, as only a write to tabench's own
    # cache file could: q3 is refused when asked for, never given as another question.
    entry = entry_of(private_cache)
    data = entry.read_bytes()
    at = data.rfind(b"Gold 3")
    with open(entry, "r+b") as f:
        f.seek(at)
        f.write(b"Gold 9")
    with pytest.raises(UsageError, match="changed while in use"):
        kept.questions["q3"]
    assert kept.questions["q2"].gold == "Gold 2"
    assert kept.questions["q1"] == first.questions["q1"]  # read from the file after the change
    with pytest.raises(KeyError):
        kept.questions["q4"]
    # The changed entry fails its signature next time: compiled afresh.
    assert compiled_battery(battery) == fresh(battery)
    assert compiles.count == 2


def test_a_kept_battery_goes_to_a_worker_whole(battery: Path, compiles: Compiles) -> None:
    from tabench_dsl.grading.parallel.frames import HEAD, WorkerConfig, config_decoder, frame
    from tabench_dsl.grading.session import GradingOptions

    three_questions(battery)
    compiled_battery(battery)
    kept = compiled_battery(battery)
    assert type(kept.questions).__name__ == "KeptQuestions"
    sent = frame(WorkerConfig(battery=kept, options=GradingOptions(judge="builtin")))
    received = config_decoder.decode(sent[HEAD:])
    assert type(received.battery.questions) is dict
    assert received.battery == fresh(battery)
