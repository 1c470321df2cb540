"""Lint's problems as documents for machines: `lint --format json` and `lint --format sarif`.

JSON is one object: `{"format_version": 1, "problems": [...], "errors": N, "warnings": N}`, each
problem with `code, severity, path, line, column, end_line, end_column, message, hint`.

SARIF is a SARIF 2.1.0 log with one run: the tool's rules are the rows of `codes.CODES` (plus
E000/W000 when a problem has one of them), one result per problem with its region (columns counted
in Unicode code points, which the run says), so that code scanning services annotate the lines.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePath
from urllib.parse import quote

from ..core.version import __version__
from .codes import CODES, describe
from .problems import Problem

#: The version of the JSON document's layout; raised when a key changes meaning or goes away.
FORMAT_VERSION = 1

#: The schema a SARIF log names.
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"

#: SARIF's levels by tabench severity.
_LEVELS = {"error": "error", "warning": "warning"}


def json_document(problems: Sequence[Problem]) -> dict[str, object]:
    """The `lint --format json` document for `problems`."""
    errors = sum(1 for p in problems if p.severity == "error")
    return {
        "format_version": FORMAT_VERSION,
        "problems": [p.as_json() for p in problems],
        "errors": errors,
        "warnings": len(problems) - errors,
    }


def sarif_log(problems: Sequence[Problem]) -> dict[str, object]:
    """The `lint --format sarif` log (SARIF 2.1.0) for `problems`."""
    rules = [
        {
            "id": row.code,
            "shortDescription": {"text": row.summary},
            "defaultConfiguration": {"level": _LEVELS[row.severity]},
        }
        for row in CODES
    ]
    index = {row.code: i for i, row in enumerate(CODES)}
    for problem in problems:
        if problem.code not in index:  # E000 / W000: a problem the table does not name yet
            index[problem.code] = len(rules)
            rules.append({"id": problem.code, "defaultConfiguration": {"level": _LEVELS[problem.severity]}})
    results = [_sarif_result(p, index[p.code]) for p in problems]
    driver = {"name": "tabench", "version": __version__, "rules": rules}
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{"tool": {"driver": driver}, "columnKind": "unicodeCodePoints", "results": results}],
    }


def _sarif_result(problem: Problem, rule_index: int) -> dict[str, object]:
    text = problem.message if not problem.hint else f"{problem.message}\nhint: {problem.hint}"
    region = {
        "startLine": max(problem.line, 1),
        "startColumn": max(problem.column, 1),
        "endLine": max(problem.end_line, 1),
        "endColumn": max(problem.end_column, 1),
    }
    return {
        "ruleId": problem.code,
        "ruleIndex": rule_index,
        "level": _LEVELS[problem.severity],
        "message": {"text": text},
        "locations": [
            {"physicalLocation": {"artifactLocation": {"uri": artifact_uri(problem.path)}, "region": region}}
        ],
    }


def artifact_uri(path: str) -> str:
    """`path` as a SARIF artifact URI: relative paths stay relative (code scanning reads them from
    the repository's root), absolute ones become file URIs."""
    pure = PurePath(path)
    if pure.is_absolute():
        return "file://" + quote(pure.as_posix())
    return quote(pure.as_posix())


def summary_of(code: str) -> str:
    """The table's one-line summary of `code` (empty when the table has no row for it)."""
    row = describe(code)
    return row.summary if row is not None else ""
