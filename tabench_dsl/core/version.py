"""The version of tabench, in the bottom layer so the CLI can print it (`tabench --version`)
without importing the package root, which sits above every layer. Kept equal to pyproject.toml's."""

from __future__ import annotations

__version__ = "0.1.0"
