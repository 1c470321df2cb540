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
import contextlib
import functools
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.workspace import TextDocument
from pygls.workspace.position_codec import ServerTextPosition

from ..core.version import __version__
from ..language.problems import Problem

F = TypeVar("F", bound=Callable[..., Any])

#: How long a change waits for a later one before its document is linted, in seconds.
SETTLE_SECONDS = 0.02

#: The protocol's severities by tabench's.
_SEVERITY = {"error": lsp.DiagnosticSeverity.Error, "warning": lsp.DiagnosticSeverity.Warning}


def guarded(default: Any) -> Callable[[F], F]:
    """A handler that logs what it raises to the client and answers `default` instead."""

    def wrap(handler: F) -> F:
        @functools.wraps(handler)
        def run(ls: LanguageServer, params: Any) -> Any:
            try:
                return handler(ls, params)
            except Exception:  # the server outlives any one request
                message = f"tabench lsp: {handler.__name__} failed:\n{traceback.format_exc(limit=8)}"
                with contextlib.suppress(Exception):  # not even the log could be sent: nothing more to do
                    ls.window_log_message(lsp.LogMessageParams(type=lsp.MessageType.Error, message=message))
                return default

        return run  # type: ignore[return-value]

    return wrap


def client_position(doc: TextDocument, line: int, column: int) -> lsp.Position:
    """A 1-based line and character column as the client counts (UTF-16 units by default)."""
    lines = doc.lines
    if not lines:
        return lsp.Position(line=0, character=0)
    index = min(max(line - 1, 0), len(lines) - 1)
    text = lines[index].rstrip("\r\n")
    character = min(max(column - 1, 0), len(text))
    return doc.position_to_client_units(ServerTextPosition(index, character))


def text_range(doc: TextDocument, line: int, column: int, end_line: int, end_column: int) -> lsp.Range:
    return lsp.Range(start=client_position(doc, line, column), end=client_position(doc, end_line, end_column))


def diagnostic(doc: TextDocument, problem: Problem) -> lsp.Diagnostic:
    """A lint problem as the protocol's diagnostic; its hint travels in `data` for code actions."""
    return lsp.Diagnostic(
        range=text_range(doc, problem.line, problem.column, problem.end_line, problem.end_column),
        message=problem.message if not problem.hint else f"{problem.message}\nhint: {problem.hint}",
        severity=_SEVERITY.get(problem.severity, lsp.DiagnosticSeverity.Error),
        code=problem.code,
        source="tabench",
        data={"message": problem.message, "hint": problem.hint},
    )


def open_texts(ls: LanguageServer) -> dict[str, str]:
    return {doc.path: doc.source for doc in ls.workspace.text_documents.values() if doc.path}


def cursor(doc: TextDocument, position: lsp.Position) -> tuple[int, int, str]:
    """The 1-based line and character column of `position`, and that line's text."""
    at = doc.position_from_client_units(position)
    lines = doc.lines
    text = lines[at.line].rstrip("\r\n") if at.line < len(lines) else ""
    return at.line + 1, at.character + 1, text


def build_server() -> LanguageServer:
    """The tabench language server, its features registered."""
    server = LanguageServer(
        "tabench", __version__, text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental
    )
    _register_sync(server)
    from . import features

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
        ls.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(
                uri=target.uri, diagnostics=[diagnostic(target, p) for p in problems], version=target.version
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


def path_uri(path: Path) -> str:
    """A file's URI."""
    return path.resolve().as_uri()
