"""docs/cli.md, the command reference, is what `cli_reference` generates from the parsers now: a
flag added to a command and not to the page (or the other way round) fails here."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tabench_dsl.cli import build_parser
from tabench_dsl.cli.cli_reference import reference
from tabench_dsl.cli.command_help import usage_block

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "cli.md"
REGENERATE = "python -m tabench_dsl.cli.cli_reference > docs/cli.md"


def test_docs_cli_md_is_the_parsers_reference() -> None:
    written = PAGE.read_text(encoding="utf-8")
    assert written == reference(build_parser()), f"docs/cli.md differs from the parsers; run: {REGENERATE}"


def test_the_page_names_every_flag_with_its_help_and_exit_codes() -> None:
    page = PAGE.read_text(encoding="utf-8")
    grade = page[page.index("## tabench grade\n") : page.index("## tabench totals\n")]
    assert "- `--system NAME`: grade only the answers of this system (repeatable)" in grade
    assert "- `--concurrency N`: judge calls in flight at most (default 8)" in grade  # %(default)s filled
    assert "  130  interrupted (Ctrl-C or SIGTERM)" in grade
    assert REGENERATE in page  # the page says how to regenerate it


def test_the_regeneration_command_writes_the_page(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tabench_dsl.cli.cli_reference"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == reference(build_parser())


def test_the_block_follows_the_parsers() -> None:
    # What the test compares with is generated, so a flag missing from the README cannot hide.
    block = usage_block(build_parser())
    assert (
        "tabench totals [--json | --csv] [--decisions DECISIONS.jsonl] [--tag TAG] [--price KEY=USD,...]"
        in block
    )
    assert "tabench export --format {csv,parquet} --out FILE" in block
    assert "[--no-browser]" in block and "[--reviewer NAME]" in block
    assert "[--dir PARENT] [--scorer SCORER] NAME" in block
    calibrate = block[block.index("tabench calibrate") : block.index("tabench new")]
    for flag in ("--rpm N", "--tpm N", "--out RESULTS.jsonl", "--retries N", "--no-cache"):
        assert flag in calibrate
