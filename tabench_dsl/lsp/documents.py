"""What the language server's handlers share: positions and ranges in the client's units, the
diagnostics of lint's problems, the open documents' texts, and the guard that turns a handler's
failure into a log line and an empty answer."""

from __future__ import annotations

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

from ..language.files import too_large
from ..language.problems import Problem

F = TypeVar("F", bound=Callable[..., Any])

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


class DocumentLines:
    """A document's lines, split once for every position of one answer. pygls splits the whole
    document again on each `TextDocument.lines` (and on each position it converts), so converting
    positions one by one from the document is quadratic in a rubric with a warning a question."""

    def __init__(self, doc: TextDocument) -> None:
        self.lines = doc.lines
        self._codec = doc.position_codec

    def position(self, line: int, column: int) -> lsp.Position:
        """A 1-based line and character column as the client counts (UTF-16 units by default)."""
        if not self.lines:
            return lsp.Position(line=0, character=0)
        index = min(max(line - 1, 0), len(self.lines) - 1)
        text = self.lines[index].rstrip("\r\n")
        character = min(max(column - 1, 0), len(text))
        return self._codec.position_to_client_units(self.lines, ServerTextPosition(index, character))

    def range(self, line: int, column: int, end_line: int, end_column: int) -> lsp.Range:
        return lsp.Range(start=self.position(line, column), end=self.position(end_line, end_column))


def diagnostic(lines: DocumentLines, problem: Problem) -> lsp.Diagnostic:
    """A lint problem as the protocol's diagnostic; its hint travels in `data` for code actions."""
    return lsp.Diagnostic(
        range=lines.range(problem.line, problem.column, problem.end_line, problem.end_column),
        message=problem.message if not problem.hint else f"{problem.message}\nhint: {problem.hint}",
        severity=_SEVERITY.get(problem.severity, lsp.DiagnosticSeverity.Error),
        code=problem.code,
        source="tabench",
        data={"message": problem.message, "hint": problem.hint},
    )


def oversized(doc: TextDocument) -> bool:
    """Whether the buffer is over the size `lint` reads of a file (`files.MAX_SPEC_BYTES`): its
    diagnostic says so, and no other feature reads it."""
    return too_large(doc.source)


def open_texts(ls: LanguageServer) -> dict[str, str]:
    return {doc.path: doc.source for doc in ls.workspace.text_documents.values() if doc.path}


def cursor(doc: TextDocument, position: lsp.Position) -> tuple[int, int, str]:
    """The 1-based line and character column of `position`, and that line's text."""
    lines = doc.lines
    at = doc.position_codec.position_from_client_units(lines, position)
    text = lines[at.line].rstrip("\r\n") if at.line < len(lines) else ""
    return at.line + 1, at.character + 1, text


def path_uri(path: Path) -> str:
    """A file's URI."""
    return path.resolve().as_uri()
