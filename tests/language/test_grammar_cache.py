"""Lark's analysis of the grammars is cached only in a folder this user alone can write."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from tabench_dsl.language.parse import _grammar_cache

REPO = Path(__file__).resolve().parents[2]


def test_cache_goes_to_a_private_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    where = _grammar_cache("tabench.lark")
    assert isinstance(where, str) and Path(where).parent == tmp_path / "tabench"
    assert stat.S_IMODE(os.stat(tmp_path / "tabench").st_mode) == 0o700


def test_a_folder_others_can_write_is_not_used(tmp_path, monkeypatch):
    shared = tmp_path / "tabench"
    shared.mkdir()
    shared.chmod(0o777)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert _grammar_cache("tabench.lark") is False


def test_compile_writes_and_then_reads_the_cache(tmp_path):
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    battery = REPO / "examples" / "lark-internals"
    argv = [sys.executable, "-m", "tabench_dsl", "compile", str(battery), "--json"]
    first = subprocess.run(argv, env=env, capture_output=True, check=True, timeout=60)
    cached = sorted(p.name for p in (tmp_path / "tabench").iterdir())
    assert any(name.startswith("tabench.lark-") for name in cached)
    second = subprocess.run(argv, env=env, capture_output=True, check=True, timeout=60)
    assert first.stdout == second.stdout and first.stdout.count(b"\n") == 13
