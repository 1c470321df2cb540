"""`tabench lsp`: a language server over stdio (pygls 2) for `.rubric`, `.policy` and `battery.yaml`.

It pushes diagnostics on open, change and save (lint's problems, codes and spans, with the
editor's unsaved buffers read in place of the files), and answers completion, hover, document
symbols, go to definition (from the manifest to the files it names), formatting (`tabench fmt`)
and code actions (the closest allowed word for an unknown one: `gloden` -> `gold`).

The answers come from `language.editing` and `language.manifest_links`; this module only turns
them into the protocol's types. Every handler is guarded: whatever a half-typed or hostile file
makes a handler raise becomes a log message to the client and an empty answer, never the end of
the server.
"""

from __future__ import annotations

import asyncio

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer

from ..core.version import __version__
from . import features
from .documents import DocumentLines, diagnostic, guarded, open_texts

#: How long a change waits for a later one before its document is linted, in seconds.
SETTLE_SECONDS = 0.02


def build_server() -> LanguageServer:
    """The tabench language server, its features registered."""
    server = LanguageServer(
        "tabench", __version__, text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental
    )
    _register_sync(server)
    features.register(server)
    return server


def publish(ls: LanguageServer, uri: str) -> None:
    """Lint the document at `uri` in its battery and push its diagnostics, and those of the other
    open documents of that battery (a problem may span two files)."""
    from ..language.editing import problems_of_open_files

    doc = ls.workspace.get_text_document(uri)
    if not doc.path:
        return
    texts = open_texts(ls)
    by_path = {d.path: d for d in ls.workspace.text_documents.values() if d.path}
    for path, problems in problems_of_open_files(doc.path, doc.source, texts).items():
        target = by_path.get(path, doc)
        lines = DocumentLines(target)
        ls.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(
                uri=target.uri, diagnostics=[diagnostic(lines, p) for p in problems], version=target.version
            )
        )


def _register_sync(server: LanguageServer) -> None:
    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    @guarded(None)
    def did_open(ls: LanguageServer, params: lsp.DidOpenTextDocumentParams) -> None:
        publish(ls, params.text_document.uri)

    @guarded(None)
    def publish_now(ls: LanguageServer, uri: str) -> None:
        publish(ls, uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    async def did_change(ls: LanguageServer, params: lsp.DidChangeTextDocumentParams) -> None:
        # A burst of keystrokes is linted once, after its last change: each change waits a moment,
        # and one that a later change has overtaken leaves the publishing to that one.
        await asyncio.sleep(SETTLE_SECONDS)
        uri, version = params.text_document.uri, params.text_document.version
        current = ls.workspace.get_text_document(uri).version
        if current is not None and version is not None and current > version:
            return
        publish_now(ls, uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    @guarded(None)
    def did_save(ls: LanguageServer, params: lsp.DidSaveTextDocumentParams) -> None:
        publish(ls, params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    @guarded(None)
    def did_close(ls: LanguageServer, params: lsp.DidCloseTextDocumentParams) -> None:
        ls.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[])
        )


def serve() -> None:
    """Run the server over stdin and stdout until the client says exit."""
    build_server().start_io()
