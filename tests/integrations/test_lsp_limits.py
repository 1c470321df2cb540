"""`tabench lsp` holds an editor's buffer to `lint`'s limits: a rubric buffer over 8 MiB gets the
diagnostic lint gives such a file, and no symbols; the server keeps answering."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsp_session import RUBRIC, diagnostics_for, lsp_client_fixture, open_file, write_memos
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

client = lsp_client_fixture()

#: Each test starts the server as a subprocess.
pytestmark = pytest.mark.slow


async def test_a_buffer_over_8_mib_is_refused_like_a_file(client: LanguageClient, tmp_path: Path) -> None:
    rubric = write_memos(tmp_path)
    huge = RUBRIC + "#" * (8 * 1024 * 1024)
    uri = await open_file(client, rubric, huge)
    found = await diagnostics_for(client, uri)
    assert [d.message for d in found if "larger than 8 MiB" in d.message], [d.message for d in found]
    symbols = await client.text_document_document_symbol_async(
        lsp.DocumentSymbolParams(text_document=lsp.TextDocumentIdentifier(uri=uri))
    )
    assert not symbols
