"""`tabench lsp`, one test per feature: completion, hover, document symbols, go to definition,
formatting and code actions, through a real protocol client (pytest-lsp)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from lsp_session import RUBRIC, diagnostics_for, lsp_client_fixture, open_file, write_memos
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from tabench_dsl.api import compile_battery

client = lsp_client_fixture()

#: Each test starts the server as a subprocess.
pytestmark = pytest.mark.slow


def _doc(uri: str) -> lsp.TextDocumentIdentifier:
    return lsp.TextDocumentIdentifier(uri=uri)


async def _labels(client: LanguageClient, uri: str, line: int, character: int) -> list[str]:
    result = await client.text_document_completion_async(
        lsp.CompletionParams(text_document=_doc(uri), position=lsp.Position(line=line, character=character))
    )
    assert isinstance(result, lsp.CompletionList)
    return [item.label for item in result.items]


async def test_completion(client: LanguageClient, tmp_path: Path) -> None:
    text = RUBRIC.replace(
        '  exemplar correct "Ada." why "named"\n',
        '  exemplar correct "Ada." why "named"\n  \n  exemplar \n  facet \n  t1 \n'
        '  exemplar correct "x" why "y" expect \n  match \n  match number 42 \n',
    )
    rubric = write_memos(tmp_path, text)
    uri = await open_file(client, rubric)
    await diagnostics_for(client, uri)
    fields = [
        "prompt",
        "gold",
        "accept",
        "trap",
        "structure",
        "scoring",
        "guide",
        "facet",
        "exemplar",
        "t1",
        "tags",
        "match",
    ]
    assert await _labels(client, uri, 10, 2) == fields
    assert await _labels(client, uri, 11, 11) == ["correct", "incorrect", "partial"]
    assert await _labels(client, uri, 12, 8) == ["extra_correct_info", "missing_minor", "erroneous_assertion"]
    assert await _labels(client, uri, 13, 5) == ["off", "on"]
    assert await _labels(client, uri, 14, 39) == ["pass", "fail"]
    assert await _labels(client, uri, 15, 8) == ["number", "choice", "regex"]
    assert await _labels(client, uri, 16, 18) == ["within", "decides"]
    assert await _labels(client, uri, 5, 0) == ["question"]  # between questions


async def test_completion_of_facets_from_the_battery_s_scorer(client: LanguageClient, tmp_path: Path) -> None:
    rubric = write_memos(tmp_path, RUBRIC.replace('  gold "Ada"\n', '  gold "Ada"\n  facet \n'))
    scorer = tmp_path / "memos" / "house"
    shipped = Path(__file__).resolve().parents[2] / "specs" / "tabench-1.1"
    scorer.mkdir()
    for name in ("system.j2", "user.j2", "stern.j2"):
        (scorer / name).write_text((shipped / name).read_text(encoding="utf-8"), encoding="utf-8")
    (scorer / "scorer.yaml").write_text("facets: [tone, length]\n", encoding="utf-8")
    manifest = tmp_path / "memos" / "battery.yaml"
    manifest.write_text(manifest.read_text().replace("tabench-1.1", "house"), encoding="utf-8")
    uri = await open_file(client, rubric)
    await diagnostics_for(client, uri)
    assert await _labels(client, uri, 9, 8) == ["tone", "length"]


async def test_completion_of_manifest_keys(client: LanguageClient, tmp_path: Path) -> None:
    write_memos(tmp_path)
    manifest = tmp_path / "memos" / "battery.yaml"
    text = manifest.read_text(encoding="utf-8") + "judge:\n  \n"
    uri = await open_file(client, manifest, text, language="yaml")
    await diagnostics_for(client, uri)
    keys = ["name", "scorer", "policies", "rubrics", "t1", "t1_trap", "judge", "reasoning_tags", "lint"]
    assert await _labels(client, uri, 5, 0) == keys
    assert "max_tokens" in await _labels(client, uri, 5, 2)


async def test_hover_on_a_field_and_on_a_question_id(client: LanguageClient, tmp_path: Path) -> None:
    rubric = write_memos(tmp_path)
    uri = await open_file(client, rubric)
    await diagnostics_for(client, uri)
    field = await client.text_document_hover_async(
        lsp.HoverParams(text_document=_doc(uri), position=lsp.Position(line=2, character=3))
    )
    assert field is not None and isinstance(field.contents, lsp.MarkupContent)
    assert field.contents.value.startswith('`gold "text"` (required, once): the gold answer; `answer_gold`')
    assert field.range == lsp.Range(
        start=lsp.Position(line=2, character=2), end=lsp.Position(line=2, character=6)
    )

    question = await client.text_document_hover_async(
        lsp.HoverParams(text_document=_doc(uri), position=lsp.Position(line=6, character=10))
    )
    assert question is not None and isinstance(question.contents, lsp.MarkupContent)
    system = compile_battery(tmp_path / "memos").questions["h02"].system
    sha = hashlib.sha256(system.encode("utf-8")).hexdigest()
    first = system.split("\n")[0]
    assert question.contents.value.startswith(
        f"**question h02**: SYSTEM prompt of {len(system.encode('utf-8'))} bytes, "
        f"sha256 `{sha}`\n\n```\n{first}\n"
    )
    nothing = await client.text_document_hover_async(
        lsp.HoverParams(text_document=_doc(uri), position=lsp.Position(line=2, character=12))
    )
    assert nothing is None


async def test_document_symbols_one_per_question(client: LanguageClient, tmp_path: Path) -> None:
    rubric = write_memos(tmp_path, RUBRIC + 'question h03 {\n  prompt "half typed\n')
    uri = await open_file(client, rubric)
    await diagnostics_for(client, uri)
    symbols = await client.text_document_document_symbol_async(
        lsp.DocumentSymbolParams(text_document=_doc(uri))
    )
    assert symbols is not None
    found = [
        (s.name, s.range.start.line, s.range.end.line, s.selection_range.start.character) for s in symbols
    ]
    assert found == [("h01", 0, 4, 9), ("h02", 6, 10, 9), ("h03", 11, 12, 9)]


async def test_definition_from_the_manifest(client: LanguageClient, tmp_path: Path) -> None:
    write_memos(tmp_path)
    (tmp_path / "memos" / "questions" / "b.rubric").write_text(RUBRIC.replace("h0", "h1"), encoding="utf-8")
    manifest = tmp_path / "memos" / "battery.yaml"
    uri = await open_file(client, manifest, language="yaml")
    await diagnostics_for(client, uri)

    async def targets(line: int, character: int) -> list[str]:
        found = await client.text_document_definition_async(
            lsp.DefinitionParams(
                text_document=_doc(uri), position=lsp.Position(line=line, character=character)
            )
        )
        assert found is None or isinstance(found, list)
        return [Path(lsp_uri.uri.removeprefix("file://")).name for lsp_uri in found or []]  # type: ignore[union-attr]

    assert await targets(2, 12) == ["memos.policy"]
    assert await targets(3, 14) == ["a.rubric", "b.rubric"]
    assert await targets(1, 10) == ["scorer.yaml"]
    assert await targets(0, 2) == []


async def test_formatting_is_fmt(client: LanguageClient, tmp_path: Path) -> None:
    messy = 'question h01 {\n    prompt   "Which stages make up the pipeline?"\n gold "Ingest, Index" }\n'
    rubric = write_memos(tmp_path, messy)
    uri = await open_file(client, rubric)
    await diagnostics_for(client, uri)
    edits = await client.text_document_formatting_async(
        lsp.DocumentFormattingParams(
            text_document=_doc(uri), options=lsp.FormattingOptions(tab_size=2, insert_spaces=True)
        )
    )
    assert edits is not None and len(edits) == 1
    assert (
        edits[0].new_text
        == 'question h01 {\n  prompt "Which stages make up the pipeline?"\n  gold "Ingest, Index"\n}\n'
    )
    assert edits[0].range == lsp.Range(
        start=lsp.Position(line=0, character=0), end=lsp.Position(line=3, character=0)
    )


async def test_code_action_from_the_hint(client: LanguageClient, tmp_path: Path) -> None:
    rubric = write_memos(tmp_path, RUBRIC.replace('  gold "Ada"', '  gloden "Ada"'))
    uri = await open_file(client, rubric)
    found = await diagnostics_for(client, uri)
    unknown = next(d for d in found if d.code == "E201")
    actions = await client.text_document_code_action_async(
        lsp.CodeActionParams(
            text_document=_doc(uri), range=unknown.range, context=lsp.CodeActionContext(diagnostics=[unknown])
        )
    )
    assert actions is not None
    first = actions[0]
    assert isinstance(first, lsp.CodeAction) and first.title == "Replace 'gloden' with 'gold'"
    assert first.is_preferred is True and first.edit is not None and first.edit.changes is not None
    (edit,) = first.edit.changes[uri]
    assert edit.new_text == "gold" and edit.range == lsp.Range(
        start=lsp.Position(line=8, character=2), end=lsp.Position(line=8, character=8)
    )
