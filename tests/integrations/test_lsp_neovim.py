"""`tabench lsp` end to end with a real editor: headless Neovim opens a rubric, reads the pushed
diagnostics and asks for a completion (tests/integrations/nvim_lsp_client.lua). Skipped, saying
so, where Neovim is not installed (Debian's `neovim` package)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from lsp_session import ROOT, RUBRIC, write_memos

NVIM = shutil.which("nvim")


@pytest.mark.slow
@pytest.mark.skipif(NVIM is None, reason="Neovim (nvim) is not installed: apt-get install neovim")
def test_neovim_reads_diagnostics_and_a_completion(tmp_path: Path) -> None:
    text = RUBRIC.replace(
        '  exemplar correct "Ingest, Index." why "both named"\n', '  exemplar \n  gloden "x"\n'
    )
    rubric = write_memos(tmp_path, text)
    out = tmp_path / "seen.json"
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "TABENCH_RUBRIC": str(rubric),
        "TABENCH_PYTHON": sys.executable,
        "TABENCH_OUT": str(out),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
    }
    script = Path(__file__).with_name("nvim_lsp_client.lua")
    assert NVIM is not None
    done = subprocess.run(
        [NVIM, "--headless", "-u", "NONE", "-i", "NONE", "-c", f"luafile {script}"],
        env=env,
        timeout=90,
        check=False,
        capture_output=True,
    )
    assert out.is_file(), done.stderr.decode("utf-8", "replace")
    seen = json.loads(out.read_text(encoding="utf-8"))
    assert seen["error"] is None
    # The half-typed `exemplar` line and the misspelt field, as lint reports them.
    assert [(d["lnum"], d["col"], d["code"]) for d in seen["diagnostics"]] == [(3, 2, "E210"), (4, 2, "E201")]
    assert seen["diagnostics"][1]["message"].startswith("unknown field 'gloden'")
    assert seen["completion"] == ["correct", "incorrect", "partial"]
