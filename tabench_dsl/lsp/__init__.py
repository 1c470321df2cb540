"""The tabench language server (`tabench lsp`): needs the optional extra `lsp` (pygls).

Its modules and how they fit: docs/architecture.md.
"""
