"""The architecture stays as docs/architecture.md draws it: every module named in its module map,
each package's docstring a line on its job and a pointer there."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "tabench_dsl"
ARCHITECTURE = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
MODULES = sorted(PACKAGE.rglob("*.py"))


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_every_module_is_in_the_module_map() -> None:
    listed = {line.split("`")[1] for line in ARCHITECTURE.splitlines() if line.startswith("- `")}
    modules = {str(path.relative_to(PACKAGE)) for path in MODULES}
    assert sorted(modules - listed) == [], "add these to docs/architecture.md's module map"
    assert sorted(m for m in listed - modules if m.endswith(".py")) == [], "the map names modules gone"


@pytest.mark.parametrize("init", sorted(PACKAGE.rglob("__init__.py")), ids=lambda p: module_name(p))
def test_a_package_docstring_says_its_job_and_points_at_the_architecture(init: Path) -> None:
    doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
    first = doc.partition("\n")[0]
    assert first.strip() and len(first) <= 110, "one line on the package's job"
    assert "docs/architecture.md" in doc
