"""The VS Code extension's TextMate grammars (editors/vscode/syntaxes/) over every golden battery
and example, tokenized by vscode-textmate on vscode-oniguruma (the engine VS Code runs) through
editors/vscode/test/tokenize.js. Every question keyword and id, field keyword, string, triple-quoted
block and comment that tabench's own parser finds has its scope, and no visible character is
left unscoped. Also `vsce` packages the extension.

Needs node and the extension's npm modules: `npm ci --prefix editors/vscode` (or `npm install`);
skipped, saying so, without them.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tabench_dsl.language.parse import parse_policy, parse_rubric

ROOT = Path(__file__).resolve().parents[2]
EXTENSION = ROOT / "editors" / "vscode"
NODE = shutil.which("node")
MODULES = EXTENSION / "node_modules"
FILES = sorted(
    p
    for pattern in (
        "tests/golden/**/*.rubric",
        "tests/golden/**/*.policy",
        "examples/**/*.rubric",
        "examples/**/*.policy",
    )
    for p in ROOT.glob(pattern)
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(NODE is None, reason="node is not installed (Debian: apt-get install nodejs npm)"),
    pytest.mark.skipif(
        not (MODULES / "vscode-textmate").is_dir() or not (MODULES / "vscode-oniguruma").is_dir(),
        reason="the extension's npm modules are not installed: npm ci --prefix editors/vscode",
    ),
]

#: Scopes that say where a token is, not what it is.
_CONTAINERS = ("source.", "meta.")


@pytest.fixture(scope="module")
def tokens() -> dict[str, list[tuple[int, int, int, list[str]]]]:
    assert NODE is not None
    done = subprocess.run(
        [NODE, str(EXTENSION / "test" / "tokenize.js"), *map(str, FILES)],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
    return {k: [tuple(t) for t in v] for k, v in json.loads(done.stdout).items()}  # type: ignore[misc]


def _utf16(line: str, col: int) -> int:
    return len(line[: col - 1].encode("utf-16-le")) // 2


def _scopes_at(found: list, lines: list[str], line: int, col: int) -> list[str]:
    index = _utf16(lines[line - 1], col)
    for number, start, end, scopes in found:
        if number == line and start <= index < end:
            return scopes
    raise AssertionError(f"no token at {line}:{col}")


def _comments(text: str) -> list[tuple[int, int]]:
    """Where each comment starts (1-based line and column), strings skipped: the rubric rules."""
    found, line, col, i = [], 1, 1, 0
    while i < len(text):
        if text.startswith('"""', i):
            end = text.find('"""', i + 3)
            end = len(text) if end < 0 else end + 3
        elif text[i] == '"':
            end = i + 1
            while end < len(text) and text[end] not in '"\n':
                end += 2 if text[end] == "\\" else 1
            end += 1
        elif text[i] == "#":
            found.append((line, col))
            end = text.find("\n", i)
            end = len(text) if end < 0 else end
        else:
            end = i + 1
        for ch in text[i:end]:
            line, col = (line + 1, 1) if ch == "\n" else (line, col + 1)
        i = end
    return found


def test_there_are_files() -> None:
    assert len(FILES) >= 10 and any(f.suffix == ".policy" for f in FILES)


def test_nothing_visible_is_unscoped(tokens) -> None:
    for file, found in tokens.items():
        lines = Path(file).read_text(encoding="utf-8-sig").split("\n")
        for number, start, end, scopes in found:
            text = lines[number - 1].rstrip("\r")
            piece = text.encode("utf-16-le")[2 * start : 2 * end].decode("utf-16-le", "replace")
            if piece.strip():
                assert any(not s.startswith(_CONTAINERS) for s in scopes), (file, number, piece, scopes)


def test_rubric_keywords_ids_and_strings(tokens) -> None:
    checked = 0
    for file in (f for f in FILES if f.suffix == ".rubric"):
        text = file.read_text(encoding="utf-8-sig")
        lines = text.split("\n")
        found = tokens[str(file)]
        for question in parse_rubric(text, file).questions:
            assert "keyword.control.question.tabench" in _scopes_at(
                found, lines, question.pos.line, question.pos.col
            )
            assert "entity.name.type.question-id.tabench" in _scopes_at(
                found, lines, question.id_pos.line, question.id_pos.col
            )
            for field in question.fields:
                scopes = _scopes_at(found, lines, field.pos.line, field.pos.col)
                assert "keyword.other.field.tabench" in scopes, (file, field.pos, scopes)
                for arg in field.args:
                    scopes = _scopes_at(found, lines, arg.pos.line, arg.pos.col)
                    if arg.kind == "word":
                        continue  # scoped by the check above (kinds, `why`, `expect`, facet names)
                    long = lines[arg.pos.line - 1][arg.pos.col - 1 :].startswith('"""')
                    want = "string.quoted.triple.tabench" if long else "string.quoted.double.tabench"
                    assert want in scopes, (file, arg.pos, scopes)
                    checked += 1
        for line, col in _comments(text):
            assert "comment.line.number-sign.tabench" in _scopes_at(found, lines, line, col), (file, line)
    assert checked > 50


def test_triple_quoted_blocks_are_strings_throughout(tokens) -> None:
    file = ROOT / "tests" / "golden" / "triple-quoted" / "tq.rubric"
    lines = file.read_text(encoding="utf-8").split("\n")
    inside = False
    for number, line in enumerate(lines, start=1):
        opens = line.count('"""')
        if inside and opens == 0 and line.strip():
            assert "string.quoted.triple.tabench" in _scopes_at(
                tokens[str(file)], lines, number, 1 + len(line) - len(line.lstrip())
            )
        if opens % 2:
            inside = not inside


def test_policy_rules_continuations_and_comments(tokens) -> None:
    for file in (f for f in FILES if f.suffix == ".policy"):
        text = file.read_text(encoding="utf-8-sig")
        lines = text.split("\n")
        found = tokens[str(file)]
        for rule in parse_policy(text, file).rules:
            assert "meta.rule.tabench" in _scopes_at(found, lines, rule.pos.line, 1)
            if rule.id is not None:
                assert "entity.name.tag.rule-id.tabench" in _scopes_at(found, lines, rule.pos.line, 1)
        for number, line in enumerate(lines, start=1):
            stripped = line.strip()
            if stripped.startswith("#"):
                col = 1 + len(line) - len(line.lstrip())
                assert "comment.line.number-sign.tabench" in _scopes_at(found, lines, number, col)
            elif stripped and line[0] in " \t":
                col = 1 + len(line) - len(line.lstrip())
                assert "meta.rule.continuation.tabench" in _scopes_at(found, lines, number, col)


@pytest.mark.skipif(
    not (MODULES / "@vscode" / "vsce").is_dir(),
    reason="@vscode/vsce is not installed: npm ci --prefix editors/vscode",
)
def test_vsce_packages_the_extension(tmp_path: Path) -> None:
    npx = shutil.which("npx")
    assert npx is not None
    out = tmp_path / "tabench.vsix"
    done = subprocess.run(
        [npx, "--no-install", "vsce", "package", "--allow-missing-repository", "--out", str(out)],
        cwd=EXTENSION,
        capture_output=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout.decode("utf-8", "replace") + done.stderr.decode(
        "utf-8", "replace"
    )
    assert out.stat().st_size > 1000
