"""`tabench lsp`: pushed diagnostics, the same problems, codes and spans as `lint`."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from lsp_session import RUBRIC, diagnostics_for, lsp_client_fixture, open_file, write_memos
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from tabench_dsl.language.problems import lint_problems

client = lsp_client_fixture()

#: Each test starts the server as a subprocess.
pytestmark = pytest.mark.slow


async def test_open_pushes_lint_problems(client: LanguageClient, tmp_path: Path) -> None:
    rubric = write_memos(tmp_path, RUBRIC.replace('  gold "Ada"', '  gloden "Ada"'))
    uri = await open_file(client, rubric)
    found = await diagnostics_for(client, uri)
    as_lint = [p for p in lint_problems(tmp_path / "memos") if Path(p.path).resolve() == rubric.resolve()]
    assert [
        (d.code, d.range.start.line + 1, d.range.start.character + 1, d.range.end.character + 1)
        for d in found
    ] == [(p.code, p.line, p.column, p.end_column) for p in as_lint]
    assert [d.code for d in found] == ["E203", "E201"]
    assert found[1].severity == lsp.DiagnosticSeverity.Error and found[1].source == "tabench"
    assert found[1].message.startswith("unknown field 'gloden'\nhint: fields are prompt, gold")


async def test_change_uses_the_unsaved_text(client: LanguageClient, tmp_path: Path) -> None:
    rubric = write_memos(tmp_path)
    uri = await open_file(client, rubric)
    assert await diagnostics_for(client, uri) == []
    # An edit that is never saved: the server reads the buffer, not the file.
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[
                lsp.TextDocumentContentChangePartial(
                    range=lsp.Range(
                        start=lsp.Position(line=8, character=2), end=lsp.Position(line=8, character=6)
                    ),
                    text="gloden",
                )
            ],
        )
    )
    found = await diagnostics_for(client, uri)
    assert [(d.code, d.range.start.line) for d in found] == [("E203", 6), ("E201", 8)]
    assert rubric.read_text(encoding="utf-8") == RUBRIC


async def test_columns_are_utf16_units(client: LanguageClient, tmp_path: Path) -> None:
    text = RUBRIC.replace('  prompt "Who wrote the memo?"', '  prompt "🎉 who?" gold "x"')
    rubric = write_memos(tmp_path, text)
    uri = await open_file(client, rubric)
    (found,) = await diagnostics_for(client, uri)
    # `gold` stands at character 18 as Python counts, 19 in UTF-16 units (the emoji takes two).
    assert found.code == "E210" and found.range.start == lsp.Position(line=7, character=19)


async def test_a_file_outside_any_battery_gets_its_syntax_error(
    client: LanguageClient, tmp_path: Path
) -> None:
    loose = tmp_path / "loose.rubric"
    loose.write_text('question q {\n  prompt "never closed\n}\n', encoding="utf-8")
    uri = await open_file(client, loose)
    (found,) = await diagnostics_for(client, uri)
    assert (found.code, found.range.start.line, found.range.start.character) == ("E101", 1, 9)


async def test_warning_and_its_ignore_comment(client: LanguageClient, tmp_path: Path) -> None:
    text = 'question h09 {\n  prompt "p"\n  gold "g"\n}\n'
    rubric = write_memos(tmp_path, RUBRIC + "\n" + text)
    uri = await open_file(client, rubric)
    found = await diagnostics_for(client, uri)
    assert [(d.code, d.severity) for d in found] == [("W102", lsp.DiagnosticSeverity.Warning)]
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[
                lsp.TextDocumentContentChangeWholeDocument(text=RUBRIC + "\n# tabench: ignore[W102]\n" + text)
            ],
        )
    )
    assert await diagnostics_for(client, uri) == []


async def _until(check, seconds: float = 30.0) -> None:
    """Wait until `check()` holds (notifications may come two at once: a wait for one may miss
    the other, so the test looks at what has arrived)."""
    for _ in range(int(seconds / 0.05)):
        if check():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the server did not push what was expected")


async def test_an_edit_updates_the_other_open_files_of_the_battery(
    client: LanguageClient, tmp_path: Path
) -> None:
    rubric = write_memos(tmp_path)
    other = rubric.with_name("b.rubric")
    other.write_text(RUBRIC.replace("h01", "h11").replace("h02", "h12"), encoding="utf-8")
    uri = await open_file(client, rubric)
    await diagnostics_for(client, uri)
    other_uri = await open_file(client, other)
    await _until(lambda: other_uri in client.diagnostics)
    assert list(client.diagnostics[other_uri]) == []
    # a.rubric takes the id h11, which b.rubric has: the duplicate is reported in b.rubric.
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=RUBRIC.replace("h01", "h11"))],
        )
    )
    await _until(lambda: [d.code for d in client.diagnostics.get(other_uri, [])] == ["E205"])
    assert list(client.diagnostics[uri]) == []


async def test_the_manifest_gets_its_problems(client: LanguageClient, tmp_path: Path) -> None:
    write_memos(tmp_path)
    manifest = tmp_path / "memos" / "battery.yaml"
    text = manifest.read_text(encoding="utf-8") + "rubric: [x]\n"
    uri = await open_file(client, manifest, text, language="yaml")
    (found,) = await diagnostics_for(client, uri)
    assert (found.code, found.range.start.line, found.range.start.character, found.range.end.character) == (
        "E302",
        4,
        0,
        6,
    )


async def test_a_burst_of_changes_ends_with_the_last_text_s_diagnostics(
    client: LanguageClient, tmp_path: Path
) -> None:
    rubric = write_memos(tmp_path)
    uri = await open_file(client, rubric)
    await diagnostics_for(client, uri)
    texts = [RUBRIC.replace('  gold "Ada"', f'  gold{"x" * n} "Ada"') for n in range(1, 8)]
    texts.append(RUBRIC.replace('  gold "Ada"', '  gloden "Ada"'))
    for version, text in enumerate(texts, start=2):  # sent at once, as fast typing does
        client.text_document_did_change(
            lsp.DidChangeTextDocumentParams(
                text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )
    await _until(lambda: any("'gloden'" in d.message for d in client.diagnostics.get(uri, [])))
    assert [d.code for d in client.diagnostics[uri]] == ["E203", "E201"]
