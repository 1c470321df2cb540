"""JSON Schemas (draft-07, what YAML editors read) for `battery.yaml` and `scorer.yaml`, built from
the loaders' own key tables: `tabench schema battery|scorer` prints them, `tabench new` writes the
battery's next to its manifest.

Each key of `manifest.MANIFEST_KEYS`, `JUDGE_KEYS`, `PANEL_JUDGE_KEYS`, `core.price.PRICE_KEYS` and
`core.scorer.SECTIONS` / `SECTION_KEYS` gets its fragment from the tables below. A key the loader
reads that has no fragment yet is still allowed (with an empty schema, so an editor never flags
what tabench accepts) and `missing_fragments()` names it: a test fails on it, so a new manifest key
comes with its schema. The schema is a help for editors; the loader is the authority (lint reports
what no schema can say: duplicate keys, files that do not exist, regular expressions that do not
compile).
"""

from __future__ import annotations

from typing import Any

from ..core.price import PRICE_KEYS, REQUIRED_PRICE_KEYS
from ..core.scorer import SECTION_KEYS, SECTIONS
from ..core.tiers import DEFAULT_T1_RULE, T1_RULES
from .judge_reasoning import EFFORTS, MIN_BUDGET
from .manifest import BATTERY_NAME, MANIFEST_KEYS, REQUIRED_KEYS
from .manifest_judge import JUDGE_KEYS, PANEL_JUDGE_KEYS, PANEL_RULES, STRUCTURED_VALUES
from .manifest_lint import WARNING_CODES
from .scorer import FACET_NAME, TEMPLATE_NAME

#: The JSON Schema dialect: draft-07 is the newest that yaml-language-server reads.
DIALECT = "http://json-schema.org/draft-07/schema#"

#: A YAML scalar the manifest reads as text: YAML may read `1.0` or `true` as a number or a bool,
#: and the manifest takes the text as written; empty is not a value.
_TEXT: dict[str, Any] = {"type": ["string", "number", "boolean"], "minLength": 1}
#: One or more file names or patterns.
_FILES: dict[str, Any] = {"oneOf": [_TEXT, {"type": "array", "items": _TEXT}]}
#: A number of dollars per million tokens (finite, 0 or more).
_DOLLARS: dict[str, Any] = {"type": "number", "minimum": 0, "maximum": 1e308}


def _price() -> dict[str, Any]:
    described = {
        "input": "USD per million fresh input tokens",
        "cached_input": "USD per million input tokens read from the provider's prompt cache",
        "output": "USD per million output tokens",
        "cache_write": "USD per million input tokens written to the provider's prompt cache",
    }
    return {
        "type": "object",
        "description": "What the judge costs, in USD per million tokens; never part of a prompt.",
        "properties": {key: {**_DOLLARS, "description": described.get(key, "")} for key in PRICE_KEYS},
        "required": list(REQUIRED_PRICE_KEYS),
        "additionalProperties": False,
    }


#: The schema of each `judge:` key (and of a panel judge's keys).
JUDGE_FRAGMENTS: dict[str, dict[str, Any]] = {
    "model": {**_TEXT, "description": "The model name sent to the judge."},
    "temperature": {"type": "number", "description": "Sampling temperature."},
    "max_tokens": {"type": "integer", "minimum": 1, "description": "The reply length limit."},
    "backend": {
        **_TEXT,
        "description": "builtin, openai:MODEL, anthropic:MODEL, an http(s):// base URL, "
        "or replay:RESULTS.jsonl.",
    },
    "price": _price(),
    "panel": {},  # filled in by `battery_schema` (it needs the panel judge's keys)
    "rule": {"enum": list(PANEL_RULES), "description": "How a panel's votes make its verdict."},
    "prompt_cache": {"type": "boolean", "description": "Use the provider's prompt cache (default true)."},
    "structured": {
        # YAML reads a bare on/off as true/false; the loader takes both.
        "enum": [*STRUCTURED_VALUES, True, False],
        "description": "Send the reply contract as a JSON Schema: off (default), auto or on.",
    },
    "reasoning": {
        "type": "object",
        "description": "A reasoning judge's effort (OpenAI) or extended-thinking budget (Anthropic).",
        "properties": {
            "effort": {"enum": list(EFFORTS), "description": "OpenAI's reasoning_effort."},
            "budget_tokens": {
                "type": "integer",
                "minimum": MIN_BUDGET,
                "description": "Anthropic's thinking budget; max_tokens must be above it.",
            },
        },
        "additionalProperties": False,
    },
}


def _lint_codes(description: str) -> dict[str, Any]:
    code = {"enum": list(WARNING_CODES)}
    return {"anyOf": [code, {"type": "array", "items": code}], "description": description}


#: The schema of each top-level manifest key.
MANIFEST_FRAGMENTS: dict[str, dict[str, Any]] = {
    "name": {
        **_TEXT,
        "pattern": BATTERY_NAME.pattern.removesuffix("\\Z").join("^$"),
        "description": "The battery's name.",
    },
    "scorer": {
        **_TEXT,
        "description": "A shipped scorer's name (tabench-1.1) or the path of a scorer folder.",
    },
    "policies": {**_FILES, "description": "Policy files, rendered in the order given."},
    "rubrics": {**_FILES, "description": "Glob patterns of rubric files (** matches any depth)."},
    "t1": {
        "oneOf": [
            {"type": "boolean"},
            {
                "type": "object",
                "properties": {"rule": {"enum": list(T1_RULES)}},
                "required": ["rule"],
                "additionalProperties": False,
            },
        ],
        "description": f"T1, the mechanical tier that only passes: true (rule {DEFAULT_T1_RULE}), false, or "
        "{rule: v1 | v2} (default true).",
    },
    "t1_trap": {
        "type": "boolean",
        "description": "T1 sends an answer carrying the trap's own words to the judge (default true).",
    },
    "judge": {},  # filled in by `battery_schema`
    "reasoning_tags": {
        "type": "array",
        "description": "The [open, close] pairs of reasoning blocks cut from answers; [] cuts none.",
        "items": {
            "type": "array",
            "items": {"type": "string", "minLength": 1, "pattern": "^\\S+$"},
            "minItems": 2,
            "maxItems": 2,
        },
    },
    "lint": {
        "type": "object",
        "description": "Warning codes lint turns off (ignore) or shows only as a count (count).",
        "properties": {
            "ignore": _lint_codes("Warning codes never reported."),
            "count": _lint_codes("Warning codes the text output counts without listing them."),
        },
        "additionalProperties": False,
    },
}


def _object(fragments: dict[str, dict[str, Any]], keys: tuple[str, ...], **more: Any) -> dict[str, Any]:
    """An object schema allowing exactly `keys`, each with its fragment (an empty one when none)."""
    return {
        "type": "object",
        "properties": {key: fragments.get(key, {}) for key in keys},
        "additionalProperties": False,
        **more,
    }


def battery_schema() -> dict[str, Any]:
    """The JSON Schema of a battery's `battery.yaml`."""
    panel_judge = _object(JUDGE_FRAGMENTS, PANEL_JUDGE_KEYS, required=["backend"])
    judge_fragments = {
        **JUDGE_FRAGMENTS,
        "panel": {"type": "array", "minItems": 2, "items": panel_judge, "description": "A judge panel."},
    }
    judge = _object(judge_fragments, JUDGE_KEYS, description="Defaults for the judge call.")
    fragments = {**MANIFEST_FRAGMENTS, "judge": judge}
    return {
        "$schema": DIALECT,
        "title": "tabench battery manifest (battery.yaml)",
        **_object(fragments, MANIFEST_KEYS, required=list(REQUIRED_KEYS)),
    }


#: A scorer.yaml value YAML reads as null: the loader leaves the key unset.
_NULL: dict[str, Any] = {"type": "null"}
#: A text that is not empty nor blank.
_NON_BLANK: dict[str, Any] = {"type": "string", "pattern": "\\S"}
#: A list of regular expressions (their syntax is lint's to check).
_PATTERNS: dict[str, Any] = {"type": "array", "items": {"type": "string"}}


def _or_null(schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [schema, _NULL]}


#: The schema of each key of each scorer.yaml mapping section.
SECTION_FRAGMENTS: dict[str, dict[str, dict[str, Any]]] = {
    "templates": {
        key: _or_null({"type": "string", "pattern": TEMPLATE_NAME.pattern.removesuffix("\\Z").join("^$")})
        for key in ("system", "user", "stern")
    },
    "judge": {
        "temperature": _or_null({"type": "number", "minimum": 0, "maximum": 2}),
        "max_tokens": _or_null({"type": "integer", "minimum": 1}),
        "model": _or_null(_NON_BLANK),
        "backend": _or_null(_NON_BLANK),
    },
    "builtin": {
        key: _or_null({"type": "string", "pattern": "^[^\\n]*\\S[^\\n]*$"})
        for key in ("question_start", "question_end", "answer_start")
    },
    "contradiction": {
        **{
            key: _or_null(_PATTERNS)
            for key in (
                "pass_shaped",
                "fail_shaped",
                "negators",
                "qualifiers",
                "qualifiers_after",
                "mitigators",
                "contrast",
                "concessive",
                "neutral",
            )
        },
        "window": _or_null({"type": "integer", "minimum": 0}),
    },
}

#: The schema of each scorer.yaml section that is not a mapping of keys.
SCORER_FRAGMENTS: dict[str, dict[str, Any]] = {
    "name": _or_null(_NON_BLANK),
    "facets": _or_null(
        {
            "type": "array",
            "minItems": 1,
            "uniqueItems": True,
            "items": {"type": "string", "pattern": FACET_NAME.pattern.removesuffix("\\Z").join("^$")},
        }
    ),
    "injection": _or_null(_PATTERNS),
}


def scorer_schema() -> dict[str, Any]:
    """The JSON Schema of a scorer's `scorer.yaml`."""
    sections: dict[str, dict[str, Any]] = {}
    for section in SECTIONS:
        if section in SECTION_KEYS:
            sections[section] = _or_null(_object(SECTION_FRAGMENTS.get(section, {}), SECTION_KEYS[section]))
        else:
            sections[section] = SCORER_FRAGMENTS.get(section, {})
    return {
        "$schema": DIALECT,
        "title": "tabench scorer settings (scorer.yaml)",
        "anyOf": [{"type": "object", "properties": sections, "additionalProperties": False}, _NULL],
    }


def missing_fragments() -> list[str]:
    """The keys the loaders read that have no fragment here yet, as `where.key`."""
    missing = [f"manifest.{k}" for k in MANIFEST_KEYS if k not in MANIFEST_FRAGMENTS]
    missing += [f"judge.{k}" for k in (*JUDGE_KEYS, *PANEL_JUDGE_KEYS) if k not in JUDGE_FRAGMENTS]
    for section in SECTIONS:
        if section in SECTION_KEYS:
            known = SECTION_FRAGMENTS.get(section, {})
            missing += [f"scorer.{section}.{k}" for k in SECTION_KEYS[section] if k not in known]
        elif section not in SCORER_FRAGMENTS:
            missing.append(f"scorer.{section}")
    return sorted(set(missing))


SCHEMAS = {"battery": battery_schema, "scorer": scorer_schema}
