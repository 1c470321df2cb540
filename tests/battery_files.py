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
