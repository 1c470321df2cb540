"""The optional extras (`inspect`, `parquet`): where one is absent, what needs it says so, naming
the extra to install, with exit status 2 and no traceback; everything else works without them.

Absence is simulated in this process: a module set to None in `sys.modules` fails to import as a
missing package does, whether or not the package is installed here."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from support.helpers_grading import write_battery

from tabench_dsl.cli import main
from tabench_dsl.core.errors import UsageError
from tabench_dsl.core.extras import (
    install_command,
    installed_from,
    missing_extra_message,
    pip_command,
    require,
)

#: The hint for this environment: what works where this tabench was installed from, with its pip.
HINT = install_command("inspect", installed_from(), Path.cwd(), pip=pip_command(Path.cwd()))


@pytest.fixture
def without_inspect(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [
        n for n in sys.modules if n == "inspect_ai" or n.startswith(("inspect_ai.", "tabench_dsl.inspect"))
    ]:
        monkeypatch.delitem(sys.modules, name)
    for name in ("inspect_ai", "inspect_ai.log", "inspect_ai.scorer"):
        monkeypatch.setitem(sys.modules, name, None)


def test_the_message_names_the_extra_and_how_to_install_it() -> None:
    message = missing_extra_message("inspect", "reading Inspect AI logs")
    assert message == (
        f"reading Inspect AI logs needs the optional extra 'inspect' (inspect_ai is not installed): {HINT}"
    )


@pytest.mark.parametrize(
    ("source", "cwd", "command"),
    [
        # From a package index: no direct_url.json.
        (None, "/anywhere", 'pip install "tabench-dsl[parquet]"'),
        # From a clone, in the clone's folder, editable or not.
        (
            {"url": "file:///src/tabench", "dir_info": {"editable": True}},
            "/src/tabench",
            'pip install -e ".[parquet]"',
        ),
        ({"url": "file:///src/tabench", "dir_info": {}}, "/src/tabench", 'pip install ".[parquet]"'),
        # From a clone elsewhere: its folder, quoted for a shell.
        ({"url": "file:///src/tabench", "dir_info": {}}, "/home", 'pip install "/src/tabench[parquet]"'),
        (
            {"url": "file:///my%20src/it's", "dir_info": {}},
            "/home",
            "pip install '/my src/it'\"'\"'s[parquet]'",
        ),
        # From git or an archive: the URL, never its credentials.
        (
            {
                "url": "https://user:s3cret@git.example/lab/tabench.git",
                "vcs_info": {"vcs": "git", "commit_id": "a"},
            },
            "/home",
            'pip install "tabench-dsl[parquet] @ git+https://git.example/lab/tabench.git"',
        ),
        (
            {"url": "https://files.example:8443/tabench-1.0.tar.gz", "archive_info": {}},
            "/home",
            'pip install "tabench-dsl[parquet] @ https://files.example:8443/tabench-1.0.tar.gz"',
        ),
    ],
)
def test_the_install_command_fits_where_tabench_came_from(
    source: dict | None, cwd: str, command: str
) -> None:
    assert install_command("parquet", source, Path(cwd)) == command


def test_this_checkout_is_named_as_a_folder_not_a_package_index() -> None:
    # The tests run from a clone (installed editable, or on the path): the hint names a folder.
    assert " install -e " in HINT and HINT.endswith('[inspect]"') and "tabench-dsl" not in HINT


def test_the_hint_names_the_pip_of_the_environment_running_tabench(tmp_path: Path) -> None:
    # The README sets up `.venv` and runs `.venv/bin/pip`: a `pip` on the PATH may be another
    # Python's, or missing. Outside a virtual environment the hint keeps `pip`.
    bin_folder = tmp_path / ".venv" / "bin"
    bin_folder.mkdir(parents=True)
    python = str(bin_folder / "python")
    assert pip_command(tmp_path, executable=python, in_venv=True) == f"{python} -m pip"
    (bin_folder / "pip").write_text("", encoding="utf-8")
    assert pip_command(tmp_path, executable=python, in_venv=True) == ".venv/bin/pip"
    assert pip_command(bin_folder, executable=python, in_venv=True) == "./pip"  # never the PATH's
    assert pip_command(Path("/elsewhere"), executable=python, in_venv=True) == str(bin_folder / "pip")
    assert pip_command(tmp_path, executable=python, in_venv=False) == "pip"
    command = install_command(
        "parquet", None, tmp_path, pip=pip_command(tmp_path, executable=python, in_venv=True)
    )
    assert command == '.venv/bin/pip install "tabench-dsl[parquet]"'


def test_grading_an_inspect_log_without_the_extra_is_a_usage_error(
    without_inspect: None, tmp_path: Path, capsys
) -> None:
    battery = write_battery(tmp_path)
    log = tmp_path / "run.eval"
    log.write_bytes(b"PK\x03\x04 not read: the extra is missing")
    out = tmp_path / "results.jsonl"
    assert main(["grade", str(battery), "--answers", str(log), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "reading Inspect AI logs needs the optional extra 'inspect'" in err
    assert HINT in err and "Traceback" not in err
    assert not out.exists()
    # A folder of logs is listed by Inspect too: the same message.
    assert main(["grade", str(battery), "--answers", str(tmp_path), "--out", str(out)]) == 2
    assert HINT in capsys.readouterr().err


def test_jsonl_answers_are_graded_without_the_extra(without_inspect: None, tmp_path: Path) -> None:
    battery = write_battery(tmp_path)
    answers = tmp_path / "answers.jsonl"
    answers.write_text('{"system": "s", "question": "h02", "answer": "7311"}\n', encoding="utf-8")
    out = tmp_path / "results.jsonl"
    assert main(["grade", str(battery), "--answers", str(answers), "--out", str(out)]) == 0


def test_importing_the_scorer_package_without_the_extra_names_it(without_inspect: None) -> None:
    with pytest.raises(UsageError, match=r"tabench_dsl.inspect .*" + re.escape(HINT)):
        import tabench_dsl.inspect  # noqa: F401


def test_an_import_error_inside_an_installed_package_is_its_own(tmp_path: Path, monkeypatch) -> None:
    """Only the extra's own package missing is "not installed": a package that is there but fails
    on a missing dependency of its own raises that error, which names the real culprit."""
    package = tmp_path / "half_installed_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("import a_dependency_nobody_has\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError, match="a_dependency_nobody_has"):
        require("half_installed_pkg", extra="inspect", purpose="testing")
    with pytest.raises(UsageError, match="needs the optional extra 'parquet'"):
        require("no_such_pkg_at_all", extra="parquet", purpose="testing")
