"""What the user adds to every request of an HTTP judge: the structured-verdict schema
(`--structured`, `judge: {structured: ...}`), free-form body fields (`--judge-param KEY=JSON`) and
headers (`--judge-header NAME=VALUE`).

`RequestOptions` is what the command line (and, for `structured` only, the manifest) says;
`RequestShape` is one judge's working copy of it. A battery is someone else's data, so body fields
and headers come from the command line only (the manifest reader refuses them): `n: 50` or
`service_tier: priority` spends the user's money. Header values are secrets, like a key: they are
kept only here, cut from every message and reply (`secrets`), and only their sha256 enters the reply
cache key (`digest`).

`structured` is `off` (the default: nothing is sent), `on` (the scorer's reply schema is sent in the
protocol's form, `HttpJudge.structured_fields`) or `auto` (sent, and when the server refuses it, a
400 or 422 naming the field, asked again without it for the rest of the run, said once through the
judge's `notice`). The decoder and the contradiction check stay the authority on every reply either way.

`digest` is "" when nothing is added, so the reply cache keys of a plain grading stay what they
were; otherwise it names the structured mode, the schema, the body fields and the headers' hashes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any, Literal

import msgspec

#: Body fields that set a reply's token budget (Chat Completions, its newer name, the Responses API).
BUDGET_FIELDS: tuple[str, ...] = ("max_tokens", "max_completion_tokens", "max_output_tokens")
#: Body fields that ask for several replies to one request, each billed.
COPIES_FIELDS: tuple[str, ...] = ("n", "best_of")

#: The values `structured` takes.
STRUCTURED_MODES: tuple[str, ...] = ("off", "auto", "on")
Structured = Literal["off", "auto", "on"]
#: What a refusal of the structured form names, in any of the protocols (`refused`).
STRUCTURED_FIELDS: tuple[bytes, ...] = (
    b"response_format",
    b"json_schema",
    b"output_config",
    b"output_format",
    b"tool_choice",
)
#: The statuses a server refuses a field it does not know with (400; 422 from FastAPI-style servers).
REFUSAL_STATUSES = frozenset({400, 422})


class RequestOptions(msgspec.Struct, frozen=True):
    """The command line's additions to every judge request: `structured` (None: not said, then the
    manifest's, else off), `params` merged into the body, `headers` added to the request (values
    secret)."""

    structured: Structured | None = None
    params: dict[str, Any] = msgspec.field(default_factory=dict)
    headers: tuple[tuple[str, str], ...] = ()


class RequestShape:
    """One judge's additions to its requests, as `RequestOptions` and the scorer's `schema` say.

    `sending` is whether the schema goes with the next request; `auto` turns it off for good after a
    refusal (`refused`)."""

    def __init__(
        self,
        options: RequestOptions | None = None,
        schema: dict[str, Any] | None = None,
        *,
        structured: str = "off",
    ) -> None:
        options = options or RequestOptions()
        self.mode = structured if structured in STRUCTURED_MODES else "off"
        self.schema = schema if self.mode != "off" else None
        self.sending = self.schema is not None
        self.params = dict(options.params)
        self.headers = dict(options.headers)
        self.digest = shape_digest(self.mode, self.schema, self.params, self.headers)

    @property
    def secrets(self) -> tuple[str, ...]:
        """The header values: cut from every message, reply and record like a key."""
        return tuple(value for value in self.headers.values() if value)

    def extend(self, body: dict[str, Any], structured: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        """Add the structured form (`structured(schema)`, the protocol's fields) while it is sent,
        then the user's body fields, which win over tabench's own (the user asked for them)."""
        if self.sending and self.schema is not None:
            body.update(structured(self.schema))
        if self.params:
            body.update(self.params)

    def reply_tokens(self, max_tokens: int) -> int:
        """The most reply tokens a request with these body fields can be billed for, when the judge's
        own budget is `max_tokens`: the largest budget a field names (a server may honour any of
        them), times the replies asked for (`n`, `best_of`). What `--max-cost` reserves."""
        budget = max([max_tokens, *(_count(self.params.get(name)) for name in BUDGET_FIELDS)])
        copies = max([1, *(_count(self.params.get(name)) for name in COPIES_FIELDS)])
        return budget * copies

    def refused(self, status: int, payload: bytes, backend: str) -> str | None:
        """Under `auto`, when this refusal (a 400 or 422 naming the structured form) turned the
        schema off for the rest of the run, the line saying so (once: the schema is off after it);
        the request is then made again. None otherwise."""
        if self.mode != "auto" or not self.sending or status not in REFUSAL_STATUSES:
            return None
        if not any(name in payload for name in STRUCTURED_FIELDS):
            return None
        self.sending = False
        return (
            f"the {backend} judge refused the structured verdict schema (HTTP {status}); "
            "asking without it for the rest of the run (--structured auto)"
        )


def _count(value: Any) -> int:
    """A body field's whole number as a server would read it (an int, a float, a string of
    digits); 0 for anything else."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return max(0, value)
    if isinstance(value, float) and value == value and value not in (float("inf"), float("-inf")):
        return max(0, int(-(-value // 1)))
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return 0


def shape_digest(
    mode: str, schema: dict[str, Any] | None, params: dict[str, Any], headers: dict[str, str]
) -> str:
    """The sha256 (hex) naming what a `RequestShape` adds, for the reply cache key; "" when it adds
    nothing. Header values enter only as their sha256."""
    if mode == "off" and not params and not headers:
        return ""
    hashed = {
        name.lower(): hashlib.sha256(value.encode("utf-8")).hexdigest() for name, value in headers.items()
    }
    canonical = msgspec.json.Encoder(order="sorted").encode(
        {"structured": mode, "schema": schema, "params": params, "headers": hashed}
    )
    return hashlib.sha256(canonical).hexdigest()
