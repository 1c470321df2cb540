"""Commands read their command line once, into frozen structs they pass on, and never write to
the `argparse.Namespace` (docs/architecture.md, "A command"): an option a command rewrote in
place once meant something else to the code that read it next."""

from __future__ import annotations

import ast
import copy
import json
from pathlib import Path

import pytest
from support.helpers_grading import write_battery

from tabench_dsl.cli import build_parser
from tabench_dsl.cli.grade_options import grade_options

CLI = Path(__file__).resolve().parents[2] / "tabench_dsl" / "cli"


def writes_to_a_namespace(path: Path) -> list[str]:
    """`args.x = ...` (or `+=`, `setattr(args, ...)`) in `path`, outside an `argparse.Action`, whose
    job is to fill the namespace while it is parsed."""
    found: list[str] = []

    def visit(node: ast.AST, in_action: bool) -> None:
        if isinstance(node, ast.ClassDef):
            in_action = any("Action" in ast.unparse(base) for base in node.bases)
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        elif isinstance(node, ast.Call) and ast.unparse(node.func) == "setattr" and node.args:
            targets = [ast.Attribute(value=node.args[0], attr="?")]
        for target in targets:
            named = isinstance(target, ast.Attribute) and ast.unparse(target.value) in ("args", "namespace")
            if named and not in_action:
                found.append(f"{path.name}:{node.lineno}: {ast.unparse(target)}")
        for child in ast.iter_child_nodes(node):
            visit(child, in_action)

    visit(ast.parse(path.read_text(encoding="utf-8")), False)
    return found


def test_no_command_writes_to_its_namespace() -> None:
    found = [line for path in sorted(CLI.glob("*.py")) for line in writes_to_a_namespace(path)]
    assert found == []


def test_the_finder_finds_a_write(tmp_path: Path) -> None:
    path = tmp_path / "x_cmd.py"
    path.write_text("def run(args):\n    args.price = 1\n    setattr(args, 'x', 2)\n", encoding="utf-8")
    assert writes_to_a_namespace(path) == ["x_cmd.py:2: args.price", "x_cmd.py:3: args.?"]


def test_grade_reads_its_command_line_into_one_frozen_struct(work: Path, capsys) -> None:
    battery = write_battery(work)
    answers = work / "answers.jsonl"
    answers.write_text(json.dumps({"system": "a", "question": "h02", "answer": "7311"}) + "\n")
    argv = ["grade", str(battery), "--answers", str(answers), "--judge", "builtin", "--no-cache"]
    argv += ["--price", "input=1,output=2", "--workers", "1", "--limit", "3", "--dry-run"]
    args = build_parser().parse_args(argv)
    before = copy.deepcopy(vars(args))
    options = grade_options(args)
    assert vars(args) == before
    assert options.grading.price is not None and options.grading.price.output == 2.0
    assert (options.workers, options.plan.slice.limit, options.answers) == (1, 3, (answers,))
    assert options.out == Path("results.jsonl") and options.grading.cache is None
    with pytest.raises(AttributeError):
        options.workers = 2  # type: ignore[misc]
    assert args.run(args) == 0  # the dry run, from the same namespace, left as it was
    assert vars(args) == before
    assert "dry run" in capsys.readouterr().out
