"""Round 3, `breaking --git`: a repository that arrives with its `.git` (a tarball of a working copy,
a shared checkout) names programs in its own config. Reading a revision must run none of them."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from support.battery_files import write_battery

from tabench_dsl.cli import main

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not on PATH")

MANIFEST = """\
    name: memos
    scorer: tabench-1.1
    policies: [memos.policy]
    rubrics: ["*.rubric"]
"""
RUBRIC = 'question a {\n  prompt "Who wrote the memo?"\n  gold "Ada"\n}\n'


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


def _hostile_repo(tmp_path: Path) -> tuple[Path, Path]:
    """A repository whose `.gitattributes` names a filter driver, a diff driver and whose config
    names an fsmonitor and hooks: each program writes a marker file when run."""
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    battery = write_battery(
        repo / "bench", {"battery.yaml": MANIFEST, "memos.policy": "S1: Answer.\n", "q.rubric": RUBRIC}
    )
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "old")
    marker = tmp_path / "ran"
    (repo / ".gitattributes").write_text("* filter=evil diff=evil export-subst\n")
    _git(repo, "add", ".gitattributes")
    _git(repo, "commit", "-q", "-m", "attributes")
    hooks = repo / "evil-hooks"
    hooks.mkdir()
    for hook in ("post-checkout", "post-index-change", "reference-transaction", "pre-auto-gc"):
        (hooks / hook).write_text(f"#!/bin/sh\necho {hook} >> {marker}\n")
        (hooks / hook).chmod(0o755)
    program = hooks / "program"  # logs that it ran, then passes its input through (a filter's job)
    program.write_text(f"#!/bin/sh\necho ran >> {marker}\ncat\n")
    program.chmod(0o755)
    with (repo / ".git" / "config").open("a") as config:
        config.write(
            f'[filter "evil"]\n\tsmudge = {program}\n\tclean = {program}\n'
            f'[diff "evil"]\n\ttextconv = {program}\n'
            f"[core]\n\tfsmonitor = {program}\n\thooksPath = {hooks}\n\tpager = {program}\n"
        )
    return battery, marker


def test_breaking_git_runs_no_program_the_repository_names(tmp_path: Path, capsys) -> None:
    battery, marker = _hostile_repo(tmp_path)
    assert main(["breaking", "--git", str(battery), "HEAD~1", "HEAD"]) == 0
    assert not marker.exists(), marker.read_text()
    assert capsys.readouterr().out.startswith("not breaking")


def test_a_revision_git_does_not_know_is_a_usage_error(tmp_path: Path, capsys) -> None:
    battery, marker = _hostile_repo(tmp_path)
    assert main(["breaking", "--git", str(battery), "HEAD", "nope"]) == 2
    assert "nope" in capsys.readouterr().err
    assert not marker.exists()
