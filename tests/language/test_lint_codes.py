"""Lint for machines: a stable code per problem, `--format json|sarif`, `# tabench: ignore[CODE]`.

The codes of the spec-error cases are written here by hand, from the table in docs/language.md;
the SARIF log is validated against the published SARIF 2.1.0 schema (tests/data/schemas/, the
OASIS file as published in oasis-tcs/sarif-spec).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest
from support.battery_files import write_battery
from test_spec_errors import read_case, write_files

from tabench_dsl.cli import main
from tabench_dsl.language.codes import CODES
from tabench_dsl.language.problems import lint_problems, span_end

CASES_DIR = Path(__file__).parent / "spec_errors"

SARIF_SCHEMA = json.loads(
    (Path(__file__).parents[1] / "data" / "schemas" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8")
)

#: The code each spec-error case's problem has, by the table.
CASE_CODES = {
    "bad-battery-name": "E306",
    "bad-escape": "E102",
    "bad-exemplar-kind": "E208",
    "bad-facet-name": "E207",
    "bad-judge-prompt-cache": "E305",
    "bad-judge-reasoning-effort": "E305",
    "bad-judge-thinking-budget": "E305",
    "bad-judge-value": "E305",
    "bad-reasoning-tag-blank": "E305",
    "bad-reasoning-tags-shape": "E305",
    "bad-reasoning-tags-value": "E305",
    "bad-lint-code": "E305",
    "unknown-lint-key": "E302",
    "continuation-without-a-rule": "E104",
    "duplicate-field": "E202",
    "duplicate-manifest-key": "E303",
    "duplicate-question-id": "E205",
    "duplicate-rule-id": "E213",
    "empty-gold": "E204",
    "guide-and-facet": "E211",
    "invisible-character": "E103",
    "judge-prompt-cache-as-a-list": "E305",
    "judge-thinking-budget-over-max-tokens": "E305",
    "judge-thinking-with-temperature": "E310",
    "missing-closing-brace": "E103",
    "missing-gold": "E203",
    "missing-manifest-key": "E304",
    "missing-policy-file": "E308",
    "missing-prompt": "E203",
    "rubric-pattern-matching-nothing": "E308",
    "t1-trap-not-a-switch": "E305",
    "unknown-field": "E201",
    "unknown-manifest-key": "E302",
    "unknown-scorer": "E307",
    "unterminated-string": "E101",
    "unterminated-triple-quoted-string": "E101",
    "yaml-syntax-error": "E301",
    "yaml-unclosed-at-the-end-of-the-file": "E301",
}

MANIFEST = """\
    name: memos
    scorer: tabench-1.1
    policies: [memos.policy]
    rubrics: ["*.rubric"]
"""

WARNED = """\
    question h01 {
      prompt "Which stages?"
      gold "Ingest, Index"
      accept " Ingest, Index "
    }
"""


def _case_battery(tmp_path: Path, name: str) -> None:
    files, _ = read_case(CASES_DIR / f"{name}.case")
    write_files(tmp_path, files)


@pytest.mark.parametrize("name", sorted(CASE_CODES))
def test_every_case_has_its_code(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    _case_battery(tmp_path, name)
    codes = [p.code for p in lint_problems("bat") if p.severity == "error"]
    assert codes == [CASE_CODES[name]]


def test_every_case_is_in_the_table() -> None:
    assert sorted(CASE_CODES) == sorted(p.stem for p in CASES_DIR.glob("*.case"))


def test_codes_are_unique_and_documented() -> None:
    codes = [row.code for row in CODES]
    assert len(codes) == len(set(codes))
    docs = (Path(__file__).parents[2] / "docs" / "language.md").read_text(encoding="utf-8")
    documented = re.findall(r"^\| `([EW]\d{3})` \|", docs, flags=re.MULTILINE)
    assert documented == codes


def test_warning_codes_and_spans(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write_battery(tmp_path, {"battery.yaml": MANIFEST, "memos.policy": "Be brief.\n", "a.rubric": WARNED})
    found = [(p.code, p.path, p.line, p.column, p.end_column) for p in lint_problems("bat")]
    assert found == [
        ("W102", "bat/a.rubric", 1, 1, 9),  # `question`
        ("W103", "bat/a.rubric", 4, 3, 9),  # `accept`
        ("W101", "bat/memos.policy", 1, 1, 3),  # `Be`
    ]


TRAPS = """\
    # tabench: ignore[W102]
    question truth {
      prompt "Which stages?"
      gold "Ingest, Index"
      accept "ingest, INDEX"
      trap "There is no Summarize stage."
    }
    # tabench: ignore[W102]
    question claim {
      prompt "Which stages?"
      gold "Ingest, Index"
      trap "The pipeline has a Summarize stage."
    }
"""


def test_a_trap_worded_as_the_false_claim_warns_and_a_case_only_variant_does_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write_battery(tmp_path, {"battery.yaml": MANIFEST, "memos.policy": "S1: x\n", "a.rubric": TRAPS})
    found = [(p.code, p.line, p.column, p.end_column) for p in lint_problems("bat")]
    assert found == [("W107", 12, 3, 7)]  # `trap` of the second question only


def test_span_of_a_string_and_a_word() -> None:
    assert span_end('  gold "a \\" b" x', 8) == 16
    assert span_end('  scoring """x""" y', 11) == 18
    assert span_end("  gloden x", 3) == 9
    assert span_end('  gold "a\\qb"', 10) == 12
    assert span_end("short", 40) == 40
    assert span_end(None, 3) == 3


def test_ignore_comment_silences_a_warning_there_only(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    rubric = """\
        # tabench: ignore[W102]
        question h01 {
          prompt "Which stages?"
          gold "Ingest"
        }
        question h02 {
          prompt "Which stages?"
          gold "Ingest"
        }
    """
    write_battery(tmp_path, {"battery.yaml": MANIFEST, "memos.policy": "S1: x\n", "a.rubric": rubric})
    assert [(p.code, p.line) for p in lint_problems("bat")] == [("W102", 6)]
    assert main(["lint", "bat"]) == 0
    out = capsys.readouterr().out
    assert "question 'h01'" not in out
    assert out.endswith("0 errors, 1 warning\n")


def test_ignore_comment_never_silences_an_error(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    rubric = """\
        question h01 {
          prompt "Which stages?"
          gold "Ingest"
          # tabench: ignore[E201]
          gloden "x"
          exemplar correct "Ingest" why "named"
        }
    """
    write_battery(tmp_path, {"battery.yaml": MANIFEST, "memos.policy": "S1: x\n", "a.rubric": rubric})
    assert [(p.code, p.line) for p in lint_problems("bat")] == [("E201", 5)]
    assert main(["lint", "bat"]) == 2


def test_json_document(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    _case_battery(tmp_path, "unknown-field")
    assert main(["lint", "bat", "--format", "json"]) == 2
    document = json.loads(capsys.readouterr().out)
    assert document == {
        "format_version": 1,
        "problems": [
            {
                "code": "E201",
                "severity": "error",
                "path": "bat/questions/a.rubric",
                "line": 4,
                "column": 3,
                "end_line": 4,
                "end_column": 9,
                "message": "unknown field 'gloden'",
                "hint": "fields are prompt, gold, accept, trap, structure, scoring, guide, facet, exemplar, "
                "t1, tags, match",
            }
        ],
        "errors": 1,
        "warnings": 0,
    }


def test_sarif_log_is_valid_sarif_2_1_0(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    write_battery(tmp_path, {"battery.yaml": MANIFEST, "memos.policy": "Be brief.\n", "a.rubric": WARNED})
    assert main(["lint", "bat", "--format", "sarif"]) == 0
    log = json.loads(capsys.readouterr().out)
    jsonschema.validate(log, SARIF_SCHEMA)
    run = log["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    results = [
        (
            r["ruleId"],
            rules[r["ruleIndex"]]["id"],
            r["level"],
            r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            r["locations"][0]["physicalLocation"]["region"]["startLine"],
        )
        for r in run["results"]
    ]
    assert results == [
        ("W102", "W102", "warning", "bat/a.rubric", 1),
        ("W103", "W103", "warning", "bat/a.rubric", 4),
        ("W101", "W101", "warning", "bat/memos.policy", 1),
    ]


def test_sarif_log_of_an_error_is_valid(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    _case_battery(tmp_path, "bad-escape")
    assert main(["lint", "bat", "--format", "sarif"]) == 2
    log = json.loads(capsys.readouterr().out)
    jsonschema.validate(log, SARIF_SCHEMA)
    (result,) = log["runs"][0]["results"]
    assert result["ruleId"] == "E102"
    assert result["level"] == "error"
    assert result["locations"][0]["physicalLocation"]["region"] == {
        "startLine": 3,
        "startColumn": 13,
        "endLine": 3,
        "endColumn": 15,
    }


def test_a_bad_document_fails_the_schema() -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"version": "2.1.0", "runs": [{"results": []}]}, SARIF_SCHEMA)
