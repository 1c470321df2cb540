"""Round 3, outputs in folders someone else fills: `--batch files:DIR` (its requests files and the
`batches --cancel` marker) and `merge` into an existing OUT. A link planted under a name tabench
writes is never followed, never truncates its target; a merge never loses records or decisions
without being asked; a full disk names the file."""

from __future__ import annotations

import asyncio
import errno
import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.helpers_grading import write_battery

from tabench_dsl.cli import main
from tabench_dsl.core.errors import StorageError
from tabench_dsl.core.safe_open import replacing
from tabench_dsl.grading.batch.file_batches import FileBatches
from tabench_dsl.review.decisions import make_decision
from tabench_dsl.store.decisions import append_decision, decisions_path, load_decisions
from tabench_dsl.store.results import iter_records

BODY = json.dumps({"model": "m", "messages": [{"role": "user", "content": "secret prompt"}]}).encode()

#: Every name the batch-files service writes in its folder, with the names it wrote before.
WRITTEN_NAMES = [
    "round-1.requests.jsonl.partial",
    "round-1.cancelled",
    "round-2.requests.jsonl.partial",
    "round-2.cancelled",
]


async def _submit_and_cancel(folder: Path) -> None:
    service = FileBatches(folder)
    status = await service.submit([service.entry("tb-1", BODY)])
    await service.cancel(status.id)


def test_a_link_planted_in_the_batch_folder_is_never_written_through(tmp_path: Path) -> None:
    folder, victim = tmp_path / "scratch", tmp_path / "victim.txt"
    folder.mkdir()
    victim.write_text("the user's own file\n")
    (folder / "round-1.requests.jsonl.partial").symlink_to(victim)
    (folder / "round-1.cancelled").symlink_to(tmp_path / "created-by-cancel")
    asyncio.run(_submit_and_cancel(folder))
    assert victim.read_text() == "the user's own file\n"
    assert not (tmp_path / "created-by-cancel").exists()
    requests = folder / "round-1.requests.jsonl"
    assert not requests.is_symlink() and b"secret prompt" in requests.read_bytes()


@settings(
    max_examples=25,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    links=st.dictionaries(st.sampled_from(WRITTEN_NAMES), st.booleans(), min_size=1),
)
def test_no_name_in_the_batch_folder_is_written_through_a_link(tmp_path_factory, links: dict[str, bool]):
    """Whatever names are links (to a file of the user's, or dangling to one not yet there), the
    batch files leave every link's target as it was."""
    base = tmp_path_factory.mktemp("links")
    folder = base / "scratch"
    folder.mkdir()
    for n, (name, dangling) in enumerate(sorted(links.items())):
        target = base / f"target-{n}"
        if not dangling:
            target.write_text("mine\n")
        (folder / name).symlink_to(target)
    asyncio.run(_submit_and_cancel(folder))
    for n, (_, dangling) in enumerate(sorted(links.items())):
        target = base / f"target-{n}"
        assert not target.exists() if dangling else target.read_text() == "mine\n"


def test_a_full_disk_names_the_file_and_keeps_the_old_one(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    out.write_text("old\n")
    with pytest.raises(StorageError, match=r"out\.jsonl: could not write the file"), replacing(out) as sink:
        sink.write(b"new")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    assert out.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.jsonl"]


# -- merge into an existing OUT ------------------------------------------------------------------


@pytest.fixture
def graded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Two results files graded by T1 alone (no judge): a.jsonl (systems a*) and b.jsonl (b*)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TABENCH_CACHE", raising=False)
    battery = write_battery(tmp_path)
    for name in ("a", "b"):
        lines = [{"system": f"{name}{n}", "question": "h02", "answer": "7311"} for n in range(4)]
        (tmp_path / f"{name}.answers.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
        argv = ["grade", str(battery), "--answers", f"{name}.answers.jsonl", "--question", "h02"]
        assert main([*argv, "--out", f"{name}.jsonl"]) == 0
    return tmp_path


def _decide(results: Path, reviewer: str) -> None:
    record = next(iter(iter_records(results)))
    append_decision(decisions_path(results), make_decision(record, "fail", reviewer=reviewer))


def test_merge_into_an_existing_out_is_refused_without_force(graded: Path, capsys) -> None:
    before = (graded / "a.jsonl").read_bytes()
    assert main(["merge", "a.jsonl", "b.jsonl"]) == 2
    assert "a.jsonl exists and holds records" in capsys.readouterr().err
    assert (graded / "a.jsonl").read_bytes() == before


def test_merge_into_out_among_the_inputs_keeps_its_records_and_decisions(graded: Path) -> None:
    _decide(graded / "a.jsonl", "ada")
    _decide(graded / "b.jsonl", "bob")
    assert main(["merge", "a.jsonl", "a.jsonl", "b.jsonl"]) == 0
    assert {r.system for r in iter_records(graded / "a.jsonl")} == {f"{x}{n}" for x in "ab" for n in range(4)}
    assert [d.reviewer for d in load_decisions(graded / "a.decisions.jsonl")] == ["ada", "bob"]


def test_merge_with_force_never_drops_out_s_decisions(graded: Path) -> None:
    _decide(graded / "a.jsonl", "ada")
    assert main(["merge", "a.jsonl", "b.jsonl", "--force"]) == 0
    assert {r.system for r in iter_records(graded / "a.jsonl")} == {f"b{n}" for n in range(4)}
    assert [d.reviewer for d in load_decisions(graded / "a.decisions.jsonl")] == ["ada"]


def test_merge_never_writes_through_a_link_beside_out(graded: Path) -> None:
    _decide(graded / "b.jsonl", "bob")
    victim = graded / "victim.txt"
    victim.write_text("mine\n")
    (graded / "m.decisions.jsonl").symlink_to(victim)
    assert main(["merge", "m.jsonl", "b.jsonl"]) == 2
    assert victim.read_text() == "mine\n"


# -- the class: no output path of any command is written through a link -------------------------------

#: Each command that writes files, as (argv, the names it writes) in a folder holding the results
#: file `r.jsonl` (and its decisions) and a battery `battery/`.
COMMANDS: dict[str, tuple[list[str], list[str]]] = {
    "report": (["report", "r.jsonl", "--html", "out.html"], ["out.html"]),
    "export": (["export", "r.jsonl", "--format", "csv", "--out", "out.csv"], ["out.csv"]),
    "merge": (["merge", "m.jsonl", "r.jsonl"], ["m.jsonl", "m.decisions.jsonl", "m.batches.jsonl"]),
    "lock": (["compile", "battery", "--lock"], ["battery/tabench.lock", "battery/tabench.lock.tmp"]),
    "grade": (
        ["grade", "battery", "--answers", "a.jsonl", "--question", "h02", "--out", "g.jsonl"],
        ["g.jsonl", "g.batches.jsonl"],
    ),
}


@settings(
    max_examples=30,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    command=st.sampled_from(sorted(COMMANDS)),
    planted=st.lists(
        st.tuples(st.integers(0, 2), st.booleans()), min_size=1, max_size=3, unique_by=lambda x: x[0]
    ),
)
def test_no_command_writes_through_a_link(tmp_path_factory, monkeypatch, command: str, planted) -> None:
    """Whatever output names of a command are links (to a file of the user's, or dangling to a
    name not yet there), the command leaves every link's target as it was (it may refuse: exit 2)."""
    base = tmp_path_factory.mktemp("cmd")
    monkeypatch.chdir(base)
    monkeypatch.delenv("TABENCH_CACHE", raising=False)
    write_battery(base)
    (base / "a.jsonl").write_text(json.dumps({"system": "s", "question": "h02", "answer": "7311"}) + "\n")
    assert main(["grade", "battery", "--answers", "a.jsonl", "--question", "h02", "--out", "r.jsonl"]) == 0
    argv, names = COMMANDS[command]
    targets = []
    for n, (which, dangling) in enumerate(planted):
        name = names[which % len(names)]
        if (base / name).is_symlink():
            continue
        target = base / f"target-{n}"
        if not dangling:
            target.write_text("mine\n")
        (base / name).symlink_to(target)
        targets.append((target, dangling))
    assert main(argv) in (0, 1, 2)
    for target, dangling in targets:
        assert not target.exists() if dangling else target.read_text() == "mine\n"


def test_a_fifo_planted_as_a_batch_results_file_is_named_not_waited_on(tmp_path: Path) -> None:
    from tabench_dsl.core.errors import UsageError

    service = FileBatches(tmp_path)
    status = asyncio.run(service.submit([service.entry("tb-1", BODY)]))
    os.mkfifo(service.results_file(status.id))
    with pytest.raises(UsageError, match=r"round-1\.results\.jsonl: not a regular file"):
        asyncio.run(service.status(status.id))
