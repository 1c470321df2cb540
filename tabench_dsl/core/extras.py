"""Optional extras: a feature that needs a package tabench does not install by default imports it
through `require`, at the moment it is used, and its absence is a usage error naming the extra.

    inspect   inspect_ai: Inspect AI logs as answers, a battery as an Inspect scorer
    parquet   pyarrow: `tabench export --format parquet`
    lsp       pygls: `tabench lsp`, the language server

Imported lazily so that `tabench grade` on a JSONL file, and everything else, starts as fast as
before and works where the extras are absent.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import os
import re
import shlex
import sys
from pathlib import Path
from types import ModuleType
from urllib.parse import unquote, urlsplit, urlunsplit

from .errors import UsageError

#: Extra name -> the distribution it brings, as a user would look it up.
EXTRAS = {"inspect": "inspect_ai", "parquet": "pyarrow", "lsp": "pygls"}

#: The distribution tabench is installed as.
DISTRIBUTION = "tabench-dsl"
#: The folder holding the `tabench_dsl` package: a checkout when it holds a pyproject.toml.
SOURCE_ROOT = Path(__file__).resolve().parents[2]


def missing_extra_message(extra: str, purpose: str) -> str:
    """What to tell a user whose `purpose` needs the optional extra `extra`."""
    return (
        f"{purpose} needs the optional extra {extra!r} ({EXTRAS[extra]} is not installed): "
        f"{install_command(extra, installed_from(), Path.cwd(), pip=pip_command(Path.cwd()))}"
    )


def pip_command(cwd: Path, *, executable: str = sys.executable, in_venv: bool | None = None) -> str:
    """The pip that installs into the environment running tabench: in a virtual environment its
    own pip (`.venv/bin/pip`, as the README sets one up, named from `cwd` when it is below it),
    since the `pip` on the PATH may be another Python's, or none; outside one, `pip`."""
    if in_venv is None:
        in_venv = sys.prefix != sys.base_prefix
    if not in_venv:
        return "pip"
    pip = Path(executable).parent / ("pip.exe" if os.name == "nt" else "pip")
    if not pip.is_file():  # a venv made without pip (`--without-pip`, uv): pip as a module, if any
        return f"{shlex.quote(executable)} -m pip"
    shown = str(pip)
    if pip.is_relative_to(cwd):
        shown = str(pip.relative_to(cwd))
        shown = shown if os.sep in shown else f".{os.sep}{shown}"  # never the PATH's pip
    return shlex.quote(shown)


def installed_from() -> dict | None:
    """Where pip installed tabench from, as its PEP 610 record (`direct_url.json`) says: a folder
    (a clone, editable or not), a VCS or an archive URL; None for a package index. tabench run from
    a checkout that pip never installed counts as an editable install of that checkout."""
    try:
        text = importlib.metadata.distribution(DISTRIBUTION).read_text("direct_url.json")
    except importlib.metadata.PackageNotFoundError:
        if (SOURCE_ROOT / "pyproject.toml").is_file():
            return {"url": SOURCE_ROOT.as_uri(), "dir_info": {"editable": True}}
        return None
    try:
        found = json.loads(text) if text else None
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


def install_command(extra: str, source: dict | None, cwd: Path, *, pip: str = "pip") -> str:
    """The pip command (`pip`, as `pip_command` names it) that adds `extra` where tabench came
    from (`installed_from`): the clone's folder (`.` when it is the working folder, `-e` when the
    install was editable), the VCS or archive URL (without credentials), or the package index."""
    url = str(source.get("url", "")) if source else ""
    if not source or not url:
        return f'{pip} install "{DISTRIBUTION}[{extra}]"'
    if "dir_info" in source and url.startswith("file:"):
        folder = Path(unquote(urlsplit(url).path))
        where = "." if folder == cwd.resolve() else str(folder)
        editable = "-e " if source["dir_info"].get("editable") else ""
        return f"{pip} install {editable}{_quoted(f'{where}[{extra}]')}"
    parts = urlsplit(url)
    host = parts.hostname or ""
    bare = urlunsplit(parts._replace(netloc=host if parts.port is None else f"{host}:{parts.port}"))
    vcs_info = source.get("vcs_info")
    if isinstance(vcs_info, dict) and vcs_info.get("vcs"):
        bare = f"{vcs_info['vcs']}+{bare}"
    return f"{pip} install {_quoted(f'{DISTRIBUTION}[{extra}] @ {bare}')}"


def _quoted(argument: str) -> str:
    """`argument` in double quotes where that is safe in a shell, else as `shlex.quote` has it."""
    return f'"{argument}"' if re.fullmatch(r"[\w./~:@+\-\[\] ]+", argument) else shlex.quote(argument)


def require(module: str, *, extra: str, purpose: str) -> ModuleType:
    """Import `module` (of the extra `extra`), or raise `UsageError` naming the extra to install.

    Only a missing top-level package counts as absent: an error raised inside an installed package
    is its own, and passes through as it is."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        top = module.partition(".")[0]
        if exc.name is not None and exc.name.partition(".")[0] != top:
            raise
        raise UsageError(missing_extra_message(extra, purpose)) from None
