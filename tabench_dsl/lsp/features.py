"""The language server's requests: completion, hover, document symbols, go to definition,
formatting and code actions. Each handler is `server.guarded`: a failure is a log line and an
empty answer."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer

from .documents import DocumentLines, cursor, guarded, open_texts, oversized, path_uri


def _is_manifest(path: str) -> bool:
    return Path(path).name == "battery.yaml"


def register(server: LanguageServer) -> None:
    """Register every request handler on `server`."""

    @server.feature(lsp.TEXT_DOCUMENT_COMPLETION, lsp.CompletionOptions(trigger_characters=[" "]))
    @guarded(None)
    def completion(ls: LanguageServer, params: lsp.CompletionParams) -> lsp.CompletionList | None:
        return _completion(ls, params)

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    @guarded(None)
    def hover(ls: LanguageServer, params: lsp.HoverParams) -> lsp.Hover | None:
        return _hover(ls, params)

    @server.feature(lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    @guarded([])
    def symbols(ls: LanguageServer, params: lsp.DocumentSymbolParams) -> list[lsp.DocumentSymbol]:
        return _symbols(ls, params)

    @server.feature(lsp.TEXT_DOCUMENT_DEFINITION)
    @guarded(None)
    def definition(ls: LanguageServer, params: lsp.DefinitionParams) -> list[lsp.Location] | None:
        return _definition(ls, params)

    @server.feature(lsp.TEXT_DOCUMENT_FORMATTING)
    @guarded(None)
    def formatting(ls: LanguageServer, params: lsp.DocumentFormattingParams) -> list[lsp.TextEdit] | None:
        return _formatting(ls, params)

    @server.feature(
        lsp.TEXT_DOCUMENT_CODE_ACTION, lsp.CodeActionOptions(code_action_kinds=[lsp.CodeActionKind.QuickFix])
    )
    @guarded([])
    def code_actions(ls: LanguageServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
        return _code_actions(params)


def _completion(ls: LanguageServer, params: lsp.CompletionParams) -> lsp.CompletionList | None:
    from ..language.editing import facets_for, inside_question, manifest_completions, rubric_completions

    doc = ls.workspace.get_text_document(params.text_document.uri)
    if oversized(doc):
        return None
    line, column, text = cursor(doc, params.position)
    before = text[: column - 1]
    if doc.path.endswith(".rubric"):
        lines = [t.rstrip("\r\n") for t in doc.lines]
        inside = inside_question(lines, line) or (before.lstrip().startswith("question ") and "{" in before)
        words = rubric_completions(before, inside, facets_for(doc.path, open_texts(ls)))
        kind = lsp.CompletionItemKind.Keyword
    elif _is_manifest(doc.path):
        words, kind = manifest_completions(before), lsp.CompletionItemKind.Property
    else:
        return None
    return lsp.CompletionList(
        is_incomplete=False, items=[lsp.CompletionItem(label=w, kind=kind) for w in words]
    )


def _hover(ls: LanguageServer, params: lsp.HoverParams) -> lsp.Hover | None:
    from ..language.editing import FIELD_DOCS, QUESTION_LINE, question_hover, word_at

    doc = ls.workspace.get_text_document(params.text_document.uri)
    if not doc.path.endswith(".rubric") or oversized(doc):
        return None
    line, column, text = cursor(doc, params.position)
    start, end, word = word_at(text, column)
    header = QUESTION_LINE.match(text)
    value = None
    if header is not None and header.start(1) + 1 == start:
        value = question_hover(doc.path, word, open_texts(ls))
    elif word in FIELD_DOCS and text[: start - 1].strip(" \t\f{") == "":
        value = FIELD_DOCS[word]
    if value is None:
        return None
    return lsp.Hover(
        contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=value),
        range=DocumentLines(doc).range(line, start, line, end),
    )


def _symbols(ls: LanguageServer, params: lsp.DocumentSymbolParams) -> list[lsp.DocumentSymbol]:
    from ..language.editing import question_spans

    doc = ls.workspace.get_text_document(params.text_document.uri)
    if not doc.path.endswith(".rubric") or oversized(doc):
        return []
    lines = doc.source.split("\n")
    positions = DocumentLines(doc)
    found = []
    for span in question_spans(doc.source):
        end_column = len(lines[span.end_line - 1]) + 1
        found.append(
            lsp.DocumentSymbol(
                name=span.id,
                kind=lsp.SymbolKind.Class,
                range=positions.range(span.line, 1, span.end_line, end_column),
                selection_range=positions.range(
                    span.line, span.id_column, span.line, span.id_column + len(span.id)
                ),
            )
        )
    return found


def _definition(ls: LanguageServer, params: lsp.DefinitionParams) -> list[lsp.Location] | None:
    from ..language.manifest_links import linked_files

    doc = ls.workspace.get_text_document(params.text_document.uri)
    if not _is_manifest(doc.path):
        return None
    line, column, _ = cursor(doc, params.position)
    start = lsp.Range(start=lsp.Position(line=0, character=0), end=lsp.Position(line=0, character=0))
    targets = linked_files(Path(doc.path), doc.source, line, column)
    return [lsp.Location(uri=path_uri(target), range=start) for target in targets] or None


def _formatting(ls: LanguageServer, params: lsp.DocumentFormattingParams) -> list[lsp.TextEdit] | None:
    from ..core.errors import SpecError
    from ..language.formatting import format_text

    doc = ls.workspace.get_text_document(params.text_document.uri)
    if not doc.path.endswith((".rubric", ".policy")) or oversized(doc):
        return None
    try:
        formatted = format_text(doc.source, doc.path)
    except SpecError:
        return None  # a file with a syntax error is not formatted; its diagnostic says why
    if formatted == doc.source:
        return []
    end = lsp.Position(line=len(doc.lines), character=0)
    whole = lsp.Range(start=lsp.Position(line=0, character=0), end=end)
    return [lsp.TextEdit(range=whole, new_text=formatted)]


def _code_actions(params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
    from ..language.editing import replacements

    actions = []
    for diag in params.context.diagnostics:
        if diag.source != "tabench" or not isinstance(diag.data, dict):
            continue
        word, choices = replacements(str(diag.data.get("message", "")), diag.data.get("hint"))
        for choice in choices:
            edit = lsp.TextEdit(range=diag.range, new_text=choice)
            actions.append(
                lsp.CodeAction(
                    title=f"Replace '{word}' with '{choice}'",
                    kind=lsp.CodeActionKind.QuickFix,
                    diagnostics=[diag],
                    is_preferred=choice == choices[0],
                    edit=lsp.WorkspaceEdit(changes={params.text_document.uri: [edit]}),
                )
            )
    return actions
