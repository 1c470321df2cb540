"""Stable codes for lint's problems: one table, read by `lint --format json|sarif`, the language
server and `# tabench: ignore[CODE]`.

A problem is raised as a `SpecError` where it is found (the parser, the rubric and manifest
loaders, lint's own warnings); its code is given here, from the shape of its message, so that the
modules that find problems need not change and one table (documented in docs/language.md §5.1)
says which code means what. Codes never change meaning once published: a new kind of problem gets
a new code, and a code no longer raised is left out of the table rather than reused.

`E...` codes are errors, `W...` codes warnings. `E000` is a problem no row of the table names yet
(a test holds every known error case to a code of its own).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..core.errors import SpecError


@dataclass(frozen=True)
class Code:
    """One row of the table: a code, its severity, its one-line summary and the message shapes it
    covers (regular expressions matched at the start of the message)."""

    code: str
    severity: str
    summary: str
    patterns: tuple[str, ...]


#: Every code, in the order docs/language.md lists them.
CODES: tuple[Code, ...] = (
    Code("E101", "error", "a one-line or triple-quoted string does not end", (r"unterminated string",)),
    Code("E102", "error", "a bad escape in a one-line string", (r"bad escape ", r"lone surrogate escape ")),
    Code(
        "E103",
        "error",
        "a word or character the grammar does not expect there",
        (
            r"unexpected character ",
            r"expected a field or ",
            r"expected 'question'",
            r"unexpected end of file",
        ),
    ),
    Code(
        "E104", "error", "a policy file starts with an indented line", (r"an indented line continues a rule",)
    ),
    Code(
        "E105",
        "error",
        "a file that cannot be read, or is not UTF-8",
        (r"cannot read ", r".* is not UTF-8 text"),
    ),
    Code("E201", "error", "an unknown field keyword", (r"unknown field ",)),
    Code("E202", "error", "a field given twice in one question", (r"duplicate field ",)),
    Code("E203", "error", "a question without its prompt or gold", (r"question '.*' has no (prompt|gold)$",)),
    Code("E204", "error", "an empty prompt or gold", (r"empty \w+ in question ",)),
    Code("E205", "error", "a question id used twice", (r"duplicate question id ",)),
    Code("E206", "error", "a bad question id", (r"bad question id ",)),
    Code("E207", "error", "a facet name the scorer does not have", (r"unknown facet ",)),
    Code(
        "E208",
        "error",
        "an exemplar kind other than correct, partial, incorrect",
        (r"unknown exemplar kind ",),
    ),
    Code(
        "E209",
        "error",
        "`t1` not on/off, `expect` not pass/fail",
        (r"t1 must be off or on", r"expect must be "),
    ),
    Code(
        "E210",
        "error",
        "a field's arguments out of shape (a word for a string, missing `why`, extra words)",
        (r"expected .* in field ", r"incomplete field ", r"unexpected .* after field "),
    ),
    Code(
        "E211", "error", "`guide` and `facet` in one question", (r"a question has facet lines or one guide",)
    ),
    Code(
        "E212",
        "error",
        "a bad, empty or repeated tag",
        (r"bad tag ", r"duplicate tag ", r"field 'tags' needs "),
    ),
    Code("E213", "error", "an S-rule id used twice", (r"duplicate rule id ",)),
    Code("E214", "error", "a bad `match` check (kind, value, option or pattern)", (r"bad match check",)),
    Code("E301", "error", "the manifest is not valid YAML", (r"invalid YAML",)),
    Code(
        "E302",
        "error",
        "an unknown manifest, judge or price key, or judge rule",
        (r"unknown key ", r"unknown \w+ key ", r"unknown judge rule "),
    ),
    Code("E303", "error", "a key given twice", (r"duplicate key ", r"duplicate \w+ key ")),
    Code(
        "E304",
        "error",
        "a required key is missing",
        (r"missing key ", r"judge price needs ", r"a panel judge needs "),
    ),
    Code(
        "E305",
        "error",
        "a manifest value of the wrong type or range",
        (
            r"empty manifest",
            r"a manifest is a mapping",
            r"judge must be a mapping",
            r"a judge panel needs ",
            r"a panel judge must be ",
            r"judge panel must be ",
            r"judge price must be ",
            r"price \w+ ",
            r"t1 must be true or false",
            r"a reasoning tag may not ",
            r"[\w. ]+ must be ",
        ),
    ),
    Code("E306", "error", "a bad battery name", (r"bad battery name ",)),
    Code("E307", "error", "an unknown scorer", (r"unknown scorer ",)),
    Code(
        "E308",
        "error",
        "a named file or pattern finds nothing",
        (r"\w+ file not found", r"rubric pattern .* matches no file"),
    ),
    Code(
        "E309",
        "error",
        "a named file outside the battery's folder",
        (r"rubric pattern .* (reaches|matches) ", r"scorer folder .* is ", r"\w+ '.*' is (outside|not)"),
    ),
    Code(
        "E310",
        "error",
        "judge settings that cannot go together (a provider's rules)",
        (r"judge \w+ cannot go with ",),
    ),
    Code(
        "E401", "error", "a malformed scorer.yaml (any error reported in it but E402)", (r"scorer settings ",)
    ),
    Code(
        "E402",
        "error",
        "a scorer template that does not compile, render or exist",
        (r"scorer template", r"unsafe template"),
    ),
    Code("W101", "warning", "an S-rule without an id", (r"rule has no id",)),
    Code("W102", "warning", "a question without exemplars", (r"question '.*' has no exemplars",)),
    Code("W103", "warning", "an accepted variant equal to the gold", (r"accepted variant equals the gold",)),
    Code("W104", "warning", "an exemplar expected to fail that T1 would pass", (r"T1 would pass this ",)),
    Code("W105", "warning", "a builtin-judge marker missing from its template", (r"builtin \w+ marker ",)),
    Code("W106", "warning", "a judge backend that is a URL", (r"judge (panel )?backend '.*' is a URL",)),
    Code(
        "W107",
        "warning",
        "a trap that reads as the false claim, not the truth that exposes it",
        (r"the trap reads as ",),
    ),
    Code(
        "W108",
        "warning",
        "an exemplar the match check decides against its expected verdict",
        (r"the match check would (pass|fail) this ",),
    ),
)

#: The code of an error no row names.
UNKNOWN_ERROR = "E000"

#: The code of a warning no row names.
UNKNOWN_WARNING = "W000"

_BY_CODE = {row.code: row for row in CODES}
_COMPILED = [(row, [re.compile(p) for p in row.patterns]) for row in CODES]


def code_of(problem: SpecError) -> str:
    """The code of `problem`: the first row of `CODES` of its severity whose pattern matches the
    start of its message."""
    if problem.severity == "error":
        by_file = _code_by_file(problem)
        if by_file is not None:
            return by_file
    for row, patterns in _COMPILED:
        if row.severity != problem.severity:
            continue
        if any(p.match(problem.message) for p in patterns):
            return row.code
    return UNKNOWN_WARNING if problem.severity == "warning" else UNKNOWN_ERROR


def _code_by_file(problem: SpecError) -> str | None:
    """E402 for an error in a template, E401 for any other error in a scorer.yaml: the scorer's
    messages share their shapes with the manifest's, the file tells them apart."""
    name = problem.path.replace("\\", "/").rsplit("/", 1)[-1]
    if name.endswith(".j2") or (name == "scorer.yaml" and "template" in problem.message):
        return "E402"
    if name == "scorer.yaml":
        return "E401"
    return None


def describe(code: str) -> Code | None:
    """The table's row for `code`, or None."""
    return _BY_CODE.get(code)
