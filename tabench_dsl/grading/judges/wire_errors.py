"""What a judge server's error body says, in every common shape: `error_message`, `refused_field`,
`money_error`.

Providers and the servers that copy them send their reasons in different places:

    {"error": {"message": M, "type": T, "code": C, "param": P}}    OpenAI, and compatibles
    {"type": "error", "error": {"type": T, "message": M}}          Anthropic
    {"error": M}                                                   Ollama, some gateways
    {"message": M}                                                 gateways, proxies
    {"detail": M} / {"detail": [{"loc": [...], "msg": M, ...}]}   FastAPI servers (422)
    {"object": "error", "message": {"detail": [...]}, ...}        Mistral (422 extra_forbidden)

`error_message` reads any of them into one line (`type: message`, each `detail` entry as
`loc.path: msg`), so a 4xx always says why. `refused_field` is the rule for "the server refused
this field, ask again without it": a 400 or a 422 that names the field with a word of refusal
(unsupported, not supported, deprecated, not permitted, extra_forbidden, ...), in its message, its
`param` or a `detail` entry's `loc`; a value out of range ("must be a number from 0 to 1") is not a
refusal of the field. `money_error` tells a refusal for want of credit (OpenAI's 429
`insufficient_quota`, Anthropic's 400 "credit balance is too low", HTTP 402), which no retry and
no wait can get past.

Pure functions over the body's bytes: no backend state, so every backend (and the structured
output's own "refused, ask without it" rule) shares them.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

#: Words that, beside a field's name, say the server refused the field itself (not its value's range).
_REFUSAL = re.compile(
    r"unsupported|not\s+supported|does\s+not\s+support|deprecated|not\s+permitted|not\s+allowed"
    r"|extra[_\s]+(?:inputs?|forbidden)|unrecognized|unknown\s+(?:field|parameter|argument)"
    r"|not\s+(?:a\s+)?valid\s+(?:field|parameter)|only\s+the\s+default",
    re.IGNORECASE,
)
#: Error codes and types that mean the account has no credit left to spend.
MONEY_CODES = frozenset(
    {
        "insufficient_quota",
        "billing_hard_limit_reached",
        "billing_not_active",
        "billing_error",
        "insufficient_credits",
        "insufficient_balance",
        "payment_required",
    }
)
#: Messages that mean the same where no code says it (Anthropic's credit-balance 400, gateways).
_MONEY_WORDS = re.compile(
    r"credit\s+balance\s+is\s+too\s+low|insufficient\s+(?:credits?|balance|funds|quota)"
    r"|exceeded\s+your\s+current\s+quota|purchase\s+credits|billing\s+details",
    re.IGNORECASE,
)
#: The deepest an error body is read (Mistral's detail entries stand four levels down).
_MAX_DEPTH = 8
#: HTTP Payment Required.
PAYMENT_REQUIRED = 402
#: Statuses on which a server refuses a request's form (a field it does not take).
FORM_REFUSALS = frozenset({400, 422})


class ErrorReading(msgspec.Struct, frozen=True):
    """What an error body says: its `message` as one line, and the codes, types, params and
    `detail` locations found in it (lower-cased), for the rules below."""

    message: str = ""
    codes: frozenset[str] = frozenset()
    params: frozenset[str] = frozenset()


def read_error(payload: bytes) -> ErrorReading:
    """The reading of an error body in any shape of the module docstring; a body that is not JSON
    gives its first 200 bytes as the message (none when it is an HTML page)."""
    try:
        body = msgspec.json.decode(payload)
    except (msgspec.DecodeError, RecursionError):  # a hostile body nested past any reason
        text = payload[:200].decode("utf-8", "replace").strip()
        return ErrorReading(message=text if text and not text.startswith("<") else "")
    parts: list[str] = []
    codes: set[str] = set()
    params: set[str] = set()
    _walk(body, parts, codes, params)
    message = "; ".join(dict.fromkeys(p for p in parts if p))
    return ErrorReading(message=message, codes=frozenset(codes), params=frozenset(params))


def _walk(node: Any, parts: list[str], codes: set[str], params: set[str], depth: int = 0) -> None:
    """Collect the messages, codes and parameter names of one body node (nested `error`,
    `message` and `detail` included, down to `_MAX_DEPTH` levels: no shape nests deeper)."""
    if depth > _MAX_DEPTH:
        return
    depth += 1
    if isinstance(node, str):
        parts.append(node)
        return
    if isinstance(node, list):
        for item in node[:20]:
            _walk(item, parts, codes, params, depth)
        return
    if not isinstance(node, dict):
        return
    for name in ("type", "code"):
        value = node.get(name)
        if isinstance(value, str) and value != "error":
            codes.add(value.lower())
    param = node.get("param")
    if isinstance(param, str):
        params.add(param.lower())
    loc = node.get("loc")
    if isinstance(loc, list):
        names = [str(x) for x in loc if str(x) != "body"]
        params.update(n.lower() for n in names)
        msg = node.get("msg")
        if isinstance(msg, str):
            kind = node.get("type")
            parts.append(f"{'.'.join(names)}: {msg}" + (f" ({kind})" if isinstance(kind, str) else ""))
        return
    message = node.get("message", node.get("msg"))
    error = node.get("error")
    detail = node.get("detail")
    if isinstance(message, str):
        kind = node.get("type") if isinstance(node.get("type"), str) else node.get("code")
        label = kind if isinstance(kind, str) and kind not in ("error", "") else ""
        parts.append(f"{label}: {message}" if label and label not in message else message)
    elif message is not None:
        _walk(message, parts, codes, params, depth)
    for inner in (error, detail):
        if inner is not None:
            _walk(inner, parts, codes, params, depth)


def error_message(payload: bytes) -> str:
    """The reason an error body gives, as one line (empty when it gives none)."""
    return read_error(payload).message


def refused_field(status: int, payload: bytes, field: str) -> bool:
    """Whether the reply (`status`, `payload`) is a server refusing the request field `field` itself:
    a 400 or 422 naming it with a word of refusal (module docstring). The caller then asks again
    without the field, for the rest of the run."""
    if status not in FORM_REFUSALS or field.encode() not in payload:
        return False
    reading = read_error(payload)
    named = field.lower() in reading.params or re.search(rf"\b{re.escape(field)}\b", reading.message)
    if not named:
        return False
    if reading.codes & {"unsupported_value", "unsupported_parameter", "extra_forbidden"}:
        return True
    return bool(_REFUSAL.search(reading.message))


def money_error(status: int, payload: bytes) -> bool:
    """Whether the reply is a refusal for want of credit or quota: HTTP 402, a money code
    (`MONEY_CODES`: OpenAI's 429 `insufficient_quota`, ...) or a message that says so (Anthropic's
    400 "Your credit balance is too low"). No retry or wait gets past one."""
    if status == PAYMENT_REQUIRED:
        return True
    if status < 400 or status >= 500:
        return False
    reading = read_error(payload)
    return bool(reading.codes & MONEY_CODES) or bool(_MONEY_WORDS.search(reading.message))
