"""`--structured`, `--judge-param KEY=JSON` and `--judge-header NAME=VALUE`: what the user adds to
every judge request, on grade and calibrate (live or `--batch`).

They come from the command line only: a battery is someone else's data, and a body field or a header
spends the user's money or carries their secrets (the manifest reader refuses both). A header's
value is a secret: no message here repeats it, and grading cuts it from everything it records.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Iterable, Mapping

from ..core.display import shown
from ..core.errors import UsageError
from ..core.redact import MIN_SECRET_LENGTH, SECRET_VARIABLES, too_short

#: Body fields a `--judge-param` may not set: the prompt itself, and streaming (replies are read whole).
RESERVED_PARAMS = frozenset({"messages", "system", "stream"})
#: Headers a `--judge-header` may not set: HTTP's own framing.
RESERVED_HEADERS = frozenset({"content-type", "content-length", "host", "transfer-encoding", "connection"})
#: An HTTP header name (RFC 9110's token).
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+\Z")


def add_request_options(parser: argparse.ArgumentParser) -> None:
    """Add `--structured`, `--judge-param` and `--judge-header` to a grade or calibrate parser."""
    add = parser.add_argument
    add(
        "--structured",
        choices=("off", "auto", "on"),
        default=None,
        help="send the scorer's reply schema (compile --part schema) for constrained decoding: on, "
        "auto (dropped for the run when the server refuses it) or off (default: the manifest's "
        "judge.structured, else off); the reply is decoded and checked as always",
    )
    add(
        "--judge-param",
        action="append",
        default=[],
        metavar="KEY=JSON",
        help="add a field to every judge request body (repeatable; the value is JSON: "
        "service_tier='\"flex\"', top_p=0.9); part of the reply cache key",
    )
    add(
        "--judge-header",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="add a header to every judge request (repeatable); the value is kept secret like a key",
    )


def request_options(args: argparse.Namespace):
    """The `request_shape.RequestOptions` of the command line; `UsageError` naming the flag for a
    malformed or reserved entry (a header's value is never repeated)."""
    from ..grading.judges.request_shape import RequestOptions

    options = RequestOptions(
        structured=args.structured,
        params=dict(parse_param(text) for text in args.judge_param),
        headers=tuple(parse_header(text) for text in args.judge_header),
    )
    warn_short_secrets(options.headers, os.environ)
    return options


def warn_short_secrets(headers: Iterable[tuple[str, str]], env: Mapping[str, str]) -> None:
    """Say on stderr which header values and keys are too short to be kept secret
    (`redact.too_short`): they are sent, but left in replies and records, never cut out of them."""
    named = [(f"--judge-header {name}", value) for name, value in headers]
    named += [(name, env.get(name, "")) for name in SECRET_VARIABLES]
    for name in too_short(named):
        print(
            f"tabench: warning: {shown(name)}: the value is shorter than {MIN_SECRET_LENGTH} characters, "
            "too short to tell from ordinary text: it is sent, but not cut from replies and records "
            "(use a longer secret, or treat it as public)",
            file=sys.stderr,
        )


def parse_param(text: str) -> tuple[str, object]:
    """`KEY=JSON` as (key, value); `UsageError` when it is not one or names a reserved field."""
    key, equals, value = text.partition("=")
    key = key.strip()
    if not equals or not key:
        raise UsageError(f"--judge-param {shown(text)!r} is not KEY=JSON (top_p=0.9)")
    if key in RESERVED_PARAMS:
        raise UsageError(f"--judge-param may not set {key!r}: tabench writes it")
    try:
        return key, json.loads(value)
    except ValueError as exc:
        hint = f"; a string is quoted: {key}='\"{value}\"'" if value and value[0] not in '[{"' else ""
        raise UsageError(f"--judge-param {key}: the value is not JSON ({exc}){shown(hint)}") from None


def parse_header(text: str) -> tuple[str, str]:
    """`NAME=VALUE` as (name, value); `UsageError` naming only the name (the value is secret)."""
    name, equals, value = text.partition("=")
    name = name.strip()
    if not equals or not _HEADER_NAME.match(name):
        raise UsageError("--judge-header takes NAME=VALUE with NAME an HTTP header name (X-Title=tabench)")
    if name.lower() in RESERVED_HEADERS:
        raise UsageError(f"--judge-header may not set {name}: tabench writes it")
    if any(c in value for c in "\r\n\0"):
        raise UsageError(f"--judge-header {name}: the value may not hold a line break or NUL")
    return name, value.strip()
