"""The CLI presents itself alike everywhere: `--version`, a description and the exit codes in every
command's help, uppercase positional names, and one set of grading options for `grade` and
`calibrate` (same names, metavars, help, defaults and checks). Through `main(argv)` and the parser
`main` builds."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from support.helpers_grading import write_battery

from tabench_dsl import __version__
from tabench_dsl.cli import COMMANDS, build_parser, main

#: The options `grade` and `calibrate` share, as `cli.grading_flags` defines them.
SHARED = (
    "--judge",
    "--model",
    "--concurrency",
    "--cache",
    "--no-cache",
    "--retries",
    "--timeout",
    "--rpm",
    "--tpm",
    "--max-answer-bytes",
)


def subparser(name: str) -> argparse.ArgumentParser:
    parser = build_parser([name])
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[name]


def option(parser: argparse.ArgumentParser, flag: str) -> argparse.Action:
    return next(a for a in parser._actions if flag in a.option_strings)


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"tabench {__version__}\n"


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_has_a_description_and_its_exit_codes(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([command, "--help"]) == 0
    out = capsys.readouterr().out
    usage, _, rest = out.partition("\n\n")
    assert usage.startswith(f"usage: tabench {command} ")
    description = rest.split("\n\n")[0]
    assert description and not description.startswith(("positional arguments", "options")), out
    exit_status = out[out.index("\nexit status:\n") :]
    for code in ("0 ", "2 ", "130 "):
        assert f"\n  {code}" in exit_status, out


@pytest.mark.parametrize("command", list(COMMANDS))
def test_positional_names_are_uppercase(command: str) -> None:
    positionals = [a for a in subparser(command)._actions if not a.option_strings]
    names = [a.metavar for a in positionals if not isinstance(a, argparse._HelpAction)]
    if command == "lsp":  # the language server reads its files from the editor, not the command line
        assert names == []
        return
    assert names and all(name and name.isupper() for name in names), names


def test_grade_and_calibrate_share_their_grading_options() -> None:
    grade, calibrate = subparser("grade"), subparser("calibrate")
    for flag in SHARED:
        mine, theirs = option(grade, flag), option(calibrate, flag)
        fields = ("option_strings", "metavar", "help", "default", "type", "dest")
        assert [getattr(mine, f) for f in fields] == [getattr(theirs, f) for f in fields], flag


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--concurrency", "0"], "--concurrency must be at least 1"),
        (["--timeout", "0"], "--timeout must be positive"),
        (["--retries", "-1"], "--retries must be 0 or more"),
        (["--rpm", "-5"], "--rpm must be positive"),
        (["--tpm", "0"], "--tpm must be positive"),
    ],
)
def test_calibrate_checks_the_shared_options_as_grade_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    battery = str(write_battery(tmp_path))
    assert main(["calibrate", battery, *flags]) == 2
    assert capsys.readouterr().err == f"tabench: error: {message}\n"


def test_calibrate_takes_rate_limits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    battery = str(write_battery(tmp_path))
    assert main(["calibrate", battery, "--rpm", "600", "--tpm", "100000", "--no-cache"]) == 0
    assert "calibrate" in capsys.readouterr().out
