"""The architecture stays as docs/architecture.md draws it: every module named in its module map,
each package's docstring a line on its job and a pointer there, and no import cycle among the
modules, counting the imports made inside functions (which import-linter's layers do not see)."""

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


def imports_of(path: Path) -> set[str]:
    """The tabench modules `path` imports when it runs, at the top or inside a function, as dotted
    names. Imports under `if TYPE_CHECKING:` are left out: they are annotations, never executed."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("tabench_dsl"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            if target.startswith("tabench_dsl"):
                found.add(target)
                found.update(f"{target}.{a.name}" for a in node.names)  # `from . import runner`
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return found


def import_graph() -> dict[str, set[str]]:
    names = {module_name(p): p for p in MODULES}
    graph = {name: {t for t in imports_of(path) if t in names and t != name} for name, path in names.items()}
    # A package's __init__ importing its own submodules is how a package exposes them, not a cycle
    # of jobs; a module importing its package's __init__ for that is left out the same way.
    return {
        name: {t for t in targets if not (t.startswith(name + ".") or name.startswith(t + "."))}
        for name, targets in graph.items()
    }


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycles_even_through_imports_inside_functions() -> None:
    assert cycles(import_graph()) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    # An import inside a function counts (the dry run once imported grade_cmd's helpers there).
    assert "tabench_dsl.cli.answer_slice" in imports_of(PACKAGE / "cli" / "dry_run.py")
