"""The key a reviewer decides an answer by: the question's gold, accepted variants, trap and scoring.

Read from the compiled SYSTEM prompt (the question object between the scorer's `builtin:` markers,
as the judge was shown it), so the decision panel shows exactly the key the judge applied when the
prompt's sha256 is the one the record was graded with, and says so when it is today's battery's
instead. `tabench adjudicate` and the viewer show the same four texts.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

from ...core.compiled import CompiledBattery
from ...core.records import Record

#: The question object's keys (language.render.question_object) -> the key's fields.
_FIELDS = {
    "answer_gold": "gold",
    "accepted_variants": "accept",
    "honesty_trap": "trap",
    "scoring": "scoring",
}


class QuestionKey(msgspec.Struct, frozen=True):
    """What an answer is judged against, and where that was read (`source`): `graded` (the prompt
    the record was graded with), `battery` (today's battery, whose prompt differs) or `gold` (the
    gold alone: the prompt holds no question block between the scorer's markers)."""

    gold: str
    accept: tuple[str, ...] = ()
    trap: str | None = None
    scoring: str | None = None
    source: str = "graded"


def question_key(record: Record, compiled: CompiledBattery | None) -> QuestionKey | None:
    """The key of `record`'s question in the battery given; None without it (or the question)."""
    if compiled is None:
        return None
    question = compiled.questions.get(record.question)
    if question is None:
        return None
    source = "graded" if question.sha256 == record.prompt_sha256 else "battery"
    block = question_block(question.system, compiled)
    if block is None:
        return QuestionKey(gold=question.gold, accept=question.accept, source="gold")
    values = {field: block.get(name) for name, field in _FIELDS.items()}
    accept = values["accept"] if isinstance(values["accept"], list) else []
    return QuestionKey(
        gold=values["gold"] if isinstance(values["gold"], str) else question.gold,
        accept=tuple(str(item) for item in accept),
        trap=values["trap"] if isinstance(values["trap"], str) else None,
        scoring=values["scoring"] if isinstance(values["scoring"], str) else None,
        source=source,
    )


def question_block(system: str, compiled: CompiledBattery) -> dict[str, Any] | None:
    """The question object of a SYSTEM prompt, between the scorer's `question_start` and
    `question_end` lines; None when the scorer's template has no such block."""
    markers = compiled.settings.builtin
    start = system.find(markers.question_start)
    if start < 0:
        return None
    start += len(markers.question_start)
    end = system.find(markers.question_end, start)
    if end < 0:
        return None
    try:
        block = json.loads(system[start:end])
    except (ValueError, RecursionError):  # a results file's prompt nested too deep is no question
        return None
    return block if isinstance(block, dict) else None
