"""The tabench language server (`tabench lsp`): needs the optional extra `lsp` (pygls)."""
