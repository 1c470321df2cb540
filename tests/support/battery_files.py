"""Write a small battery from strings, for tests of the battery language."""

from __future__ import annotations

import textwrap
from pathlib import Path


def write_battery(root: Path, files: dict[str, str]) -> Path:
    """Write `files` (relative name -> text, dedented) under `root/bat`; return the folder."""
    battery = root / "bat"
    for name, text in files.items():
        file = battery / name
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(textwrap.dedent(text), encoding="utf-8")
    return battery


def shipped_settings():
    """The shipped scorer's settings (tabench-1.1), read as a battery reads them."""
    from tabench_dsl.core.resources import specs_dir
    from tabench_dsl.language.scorer import read_settings

    file = specs_dir() / "tabench-1.1" / "scorer.yaml"
    errors: list = []
    settings = read_settings(file.read_text(encoding="utf-8"), file, errors)
    assert settings is not None, [e.render() for e in errors]
    return settings
