"""The README's command block (the ``` block under "## Commands") is the parsers' usage: a flag
added to a command and not to the README (or the other way round) fails here."""

from __future__ import annotations

from pathlib import Path

from tabench_dsl.cli import build_parser
from tabench_dsl.cli.command_help import usage_block

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_command_block(text: str) -> str:
    start = text.index("## Commands\n\n```\n") + len("## Commands\n\n```\n")
    return text[start : text.index("```\n", start)].rstrip("\n")


def test_the_readme_command_block_is_the_parsers_usage() -> None:
    expected = usage_block(build_parser())
    written = readme_command_block(README.read_text(encoding="utf-8"))
    assert written == expected, (
        "README.md's command block differs from the parsers; put this under '## Commands':\n" + expected
    )


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
