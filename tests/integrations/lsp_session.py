"""The language server under test: `python -m tabench_dsl lsp` as a subprocess, driven over stdio
by pytest-lsp's client; and the battery it is opened on."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

ROOT = Path(__file__).resolve().parents[2]

MANIFEST = "name: memos\nscorer: tabench-1.1\npolicies: [memos.policy]\nrubrics: [questions/*.rubric]\n"
POLICY = "S1: Answer from the memos only.\n"
RUBRIC = """\
question h01 {
  prompt "Which stages make up the pipeline?"
  gold "Ingest, Index"
  exemplar correct "Ingest, Index." why "both named"
}

question h02 {
  prompt "Who wrote the memo?"
  gold "Ada"
  exemplar correct "Ada." why "named"
}
"""


def write_memos(root: Path, rubric: str = RUBRIC) -> Path:
    """The battery the server is opened on, under `root/memos`; its rubric's path."""
    folder = root / "memos"
    (folder / "questions").mkdir(parents=True, exist_ok=True)
    (folder / "battery.yaml").write_text(MANIFEST, encoding="utf-8")
    (folder / "memos.policy").write_text(POLICY, encoding="utf-8")
    (folder / "questions" / "a.rubric").write_text(rubric, encoding="utf-8")
    return folder / "questions" / "a.rubric"


SERVER = ClientServerConfig(
    server_command=[sys.executable, "-m", "tabench_dsl", "lsp"],
    server_env={**os.environ, "PYTHONPATH": str(ROOT)},
)


def lsp_client_fixture():
    """A pytest-lsp fixture: an initialized session with VS Code's capabilities."""

    @pytest_lsp.fixture(config=SERVER)
    async def client(lsp_client: LanguageClient):
        await lsp_client.initialize_session(
            lsp.InitializeParams(capabilities=client_capabilities("visual-studio-code"), root_uri=None)
        )
        yield
        await lsp_client.shutdown_session()

    return client


async def open_file(
    client: LanguageClient, path: Path, text: str | None = None, language: str = "tabench"
) -> str:
    """Open `path` in the client (its text from disk unless given); its URI."""
    uri = path.resolve().as_uri()
    body = path.read_text(encoding="utf-8") if text is None else text
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            text_document=lsp.TextDocumentItem(uri=uri, language_id=language, version=1, text=body)
        )
    )
    return uri


async def diagnostics_for(client: LanguageClient, uri: str) -> list[lsp.Diagnostic]:
    """Wait for the next diagnostics the server pushes, and give those of `uri`."""
    await client.wait_for_notification(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    return list(client.diagnostics.get(uri, []))
