"""`tabench lsp`: the language server, over stdin and stdout (the optional extra `lsp`)."""

from __future__ import annotations

import argparse

from .command_help import add_command


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = add_command(
        sub,
        "lsp",
        help="run the language server for .rubric, .policy and battery.yaml over stdio",
        description="Run the tabench language server over stdin and stdout, for editors: diagnostics "
        "as lint reports them, completion, hover, document symbols, go to definition, formatting and "
        "quick fixes. Needs the optional extra lsp (pygls).",
        exit_codes=((0, "the client ended the session"),),
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ..core.extras import require

    require("pygls", extra="lsp", purpose="tabench lsp")
    from ..lsp.server import serve

    serve()
    return 0
