"""The scorer's reply contract as a JSON Schema: what `structured` sends and `compile --part schema`
prints.

The SYSTEM prompt asks for one JSON object, `{"verdict": "pass" or "fail", "reason": "...",
"facets": {NAME: bool, ...}}`. `reply_schema` states that contract in the subset of JSON Schema that
constrained decoders accept (OpenAI's strict mode, vLLM, SGLang, llama.cpp's server, Ollama, LM
Studio, Anthropic's structured outputs): every property required, `additionalProperties: false`,
the keys in the order the prompt shows them (a grammar-constrained decoder writes them in that
order), the facets exactly the scorer's. The decoder (`grading.verdict`) stays the authority on
every reply: the schema only makes a malformed one less likely.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import msgspec

#: The name the schema goes by in a request (`response_format.json_schema.name`, the forced tool).
SCHEMA_NAME = "tabench_verdict"
#: The verdicts a judge may give.
VERDICTS: tuple[str, ...] = ("pass", "fail")


def reply_schema(facets: Sequence[str]) -> dict[str, Any]:
    """The JSON Schema of a reply naming `facets` (the scorer's, in its order)."""
    return {
        "type": "object",
        "properties": {
            "verdict": {"type": "string", "enum": list(VERDICTS)},
            "reason": {"type": "string"},
            "facets": {
                "type": "object",
                "properties": {name: {"type": "boolean"} for name in facets},
                "required": list(facets),
                "additionalProperties": False,
            },
        },
        "required": ["verdict", "reason", "facets"],
        "additionalProperties": False,
    }


def schema_text(facets: Sequence[str]) -> str:
    """`reply_schema(facets)` as indented JSON, keys in the prompt's order (what `compile --part
    schema` prints)."""
    return msgspec.json.format(msgspec.json.encode(reply_schema(facets)), indent=2).decode("utf-8")


def schema_digest(schema: dict[str, Any]) -> str:
    """The sha256 (hex) of `schema` as compact JSON: how the reply cache key names it."""
    return hashlib.sha256(msgspec.json.encode(schema)).hexdigest()
