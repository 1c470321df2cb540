"""The architecture stays as docs/architecture.md draws it: every module named in its module map,
each package's docstring a line on its job and a pointer there, and no import cycle among the
modules, counting the imports made inside functions (which import-linter's layers do not see).
Sizes too, counted with `ast`: no module over 450 lines and no function over 60 but those named
with their reason, and no private name imported from another module."""

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
    assert "tabench_dsl.cli.slice_flags" in imports_of(PACKAGE / "cli" / "dry_run.py")


# Size: modules of about 100-400 lines and none over 450, functions under 60 lines (CONTRIBUTING,
# "Style"). What must be over is named here with the reason; today nothing is.
MAX_MODULE_LINES = 450
MAX_FUNCTION_LINES = 60
LONG_MODULES_ALLOWED: dict[str, str] = {}
LONG_FUNCTIONS_ALLOWED: dict[str, str] = {}


def long_modules() -> dict[str, int]:
    """Each module of the package over `MAX_MODULE_LINES` lines, by its path in the package."""
    found = {}
    for path in MODULES:
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_MODULE_LINES:
            found[str(path.relative_to(PACKAGE))] = lines
    return found


def function_lengths(path: Path, root: Path = PACKAGE) -> dict[str, int]:
    """The length in lines (from `def` to its last line) of every function in `path`, nested ones
    and methods too, by `path-from-root:Qualified.name`."""
    found: dict[str, int] = {}
    where = str(path.relative_to(root))

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = prefix + child.name
                found[f"{where}:{name}"] = (child.end_lineno or child.lineno) - child.lineno + 1
                visit(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".")
            else:
                visit(child, prefix)

    visit(ast.parse(path.read_text(encoding="utf-8")), "")
    return found


def long_functions() -> dict[str, int]:
    """Every function of the package over `MAX_FUNCTION_LINES` lines."""
    return {
        name: length
        for path in MODULES
        for name, length in function_lengths(path).items()
        if length > MAX_FUNCTION_LINES
    }


def private_imports(path: Path) -> list[str]:
    """The private names (`_name`, not `__dunder__`) `path` imports from another module, as
    `module:_name`: a helper another module needs is public and has a docstring."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            source = "." * node.level + (node.module or "")
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    found.append(f"{source}:{alias.name}")
    return found


def test_no_module_is_over_450_lines_but_those_named_with_their_reason() -> None:
    assert sorted(set(long_modules()) - set(LONG_MODULES_ALLOWED)) == []


def test_no_function_is_over_60_lines_but_those_named_with_their_reason() -> None:
    assert sorted(set(long_functions()) - set(LONG_FUNCTIONS_ALLOWED)) == []


def test_the_allowed_exceptions_are_still_long() -> None:
    # A module or function split since it was named here: take its entry out.
    assert sorted(set(LONG_MODULES_ALLOWED) - set(long_modules())) == []
    assert sorted(set(LONG_FUNCTIONS_ALLOWED) - set(long_functions())) == []


def test_no_private_name_is_imported_across_modules() -> None:
    found = {str(path.relative_to(PACKAGE)): private_imports(path) for path in MODULES}
    assert {where: names for where, names in found.items() if names} == {}


def test_the_counters_count(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text(
        "from .a import _b, c, __version__\n"
        "from x import _y\n"
        "class K:\n"
        "    def f(self):\n"
        "        def g():\n"
        "            return 1\n"
        "        return g\n"
        "async def h():\n"
        "    pass\n",
        encoding="utf-8",
    )
    assert private_imports(source) == [".a:_b", "x:_y"]
    assert function_lengths(source, root=tmp_path) == {"m.py:K.f": 4, "m.py:K.f.g": 2, "m.py:h": 2}
