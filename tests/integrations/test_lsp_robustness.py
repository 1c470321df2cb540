"""`tabench lsp` outlives whatever it is sent: random edits (Hypothesis) of a rubric and of the
manifest, hostile characters included, each followed by every request at a random place. After
every edit the server pushes diagnostics, answers every request, and logs no failure."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lsp_session import RUBRIC, diagnostics_for, lsp_client_fixture, open_file, write_memos
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

client = lsp_client_fixture()

#: Each test starts the server as a subprocess.
pytestmark = pytest.mark.slow

#: Pieces an author (or an attacker) might type: the language's own words and marks, and characters
#: that have broken parsers before (surrogate-pair emoji, NUL, bidi overrides, CR, BOM).
PIECES = st.sampled_from(
    [
        '"',
        '"""',
        "{",
        "}",
        "#",
        "\\",
        "\\u",
        "\\ud800",
        "question ",
        "gold ",
        "exemplar ",
        "facet ",
        "t1 ",
        "\n",
        "\r\n",
        "\t",
        " ",
        "🎉",
        "\x00",
        "\u202e",
        "\ufeff",
        "é",
        "x" * 300,
        "name: ",
        ": [",
        "- ",
    ]
)

EDIT = st.tuples(st.floats(0, 1), st.integers(0, 40), st.lists(PIECES, max_size=4).map("".join))


def _scripts() -> list[list[tuple[float, int, str]]]:
    """Edit scripts, drawn once by Hypothesis (derandomized): each edit deletes a few characters
    at a relative place and inserts pieces there."""
    drawn: list[list[tuple[float, int, str]]] = []

    @settings(max_examples=12, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
    @given(st.lists(EDIT, min_size=1, max_size=6))
    def draw(script: list[tuple[float, int, str]]) -> None:
        drawn.append(script)

    draw()
    return drawn


def _apply(text: str, edit: tuple[float, int, str]) -> tuple[str, int]:
    where, cut, insert = edit
    at = int(where * len(text))
    return text[:at] + insert + text[at + cut :], at


def _position(text: str, offset: int) -> lsp.Position:
    before = text[:offset]
    line = before.count("\n")
    column = before[before.rfind("\n") + 1 :]
    return lsp.Position(line=line, character=len(column.encode("utf-16-le")) // 2)


async def _every_request(client: LanguageClient, uri: str, position: lsp.Position) -> None:
    doc = lsp.TextDocumentIdentifier(uri=uri)
    await client.text_document_completion_async(lsp.CompletionParams(text_document=doc, position=position))
    await client.text_document_hover_async(lsp.HoverParams(text_document=doc, position=position))
    await client.text_document_document_symbol_async(lsp.DocumentSymbolParams(text_document=doc))
    await client.text_document_definition_async(lsp.DefinitionParams(text_document=doc, position=position))
    await client.text_document_formatting_async(
        lsp.DocumentFormattingParams(
            text_document=doc, options=lsp.FormattingOptions(tab_size=2, insert_spaces=True)
        )
    )
    rng = lsp.Range(start=position, end=position)
    await client.text_document_code_action_async(
        lsp.CodeActionParams(text_document=doc, range=rng, context=lsp.CodeActionContext(diagnostics=[]))
    )


async def _edit_through(client: LanguageClient, path: Path, start: str, language: str) -> None:
    uri = await open_file(client, path, start, language=language)
    await diagnostics_for(client, uri)
    version = 1
    for script in _scripts():
        text = start
        for edit in script:
            text, at = _apply(text, edit)
            version += 1
            client.text_document_did_change(
                lsp.DidChangeTextDocumentParams(
                    text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
                    content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=text)],
                )
            )
            await diagnostics_for(client, uri)
            await _every_request(client, uri, _position(text, at))
    failures = [m.message for m in client.log_messages if m.type == lsp.MessageType.Error]
    assert failures == []


async def test_random_edits_of_a_rubric(client: LanguageClient, tmp_path: Path) -> None:
    rubric = write_memos(tmp_path)
    await _edit_through(client, rubric, RUBRIC, "tabench")


async def test_random_edits_of_the_manifest(client: LanguageClient, tmp_path: Path) -> None:
    write_memos(tmp_path)
    manifest = tmp_path / "memos" / "battery.yaml"
    await _edit_through(client, manifest, manifest.read_text(encoding="utf-8"), "yaml")
