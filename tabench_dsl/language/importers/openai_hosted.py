"""`tabench import openai-evals` of a hosted Evals export (the `/evals` API, shut down on
2026-11-30): SOURCE files are

- a data-source JSONL, one `{"item": {...}}` row per line (a row without `item` is the item);
- the eval as JSON (`GET /evals/{id}`: its `testing_criteria`), or the criteria list alone;
- optionally a run as JSON (`GET /evals/{id}/runs/{run}`), whose `data_source.input_messages`
  template is the prompt (`{{ item.FIELD }}` put in as literal text). Without one, the prompt is
  the item's `input`, `prompt` or `question` field.

    gold       the item field a `string_check` (`eq`, `like`, `ilike`) or `text_similarity`
               criterion's `reference` names (`{{ item.FIELD }}`); else the first item field a
               `label_model` / `score_model` grader's messages name that is not the prompt's
    scoring    each `label_model` / `score_model` grader's messages (their text, templates as
               written), with the labels that pass or the threshold
    match      a `string_check` on the gold: `eq` reads a number or a choice letter as one, else
               the whole answer; `like` / `ilike` the gold inside the answer (a regex check)
    id         the item's `id` field, else ITEMS.LINE (the row's line)
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from ...core.errors import UsageError
from .checks import closed_check, text_check
from .question_ids import QuestionIds
from .sources import Imported, ImportedQuestion, chat_text, jsonl_rows, read_source

#: `{{ item.FIELD }}` in a hosted Evals template.
ITEM_FIELD = re.compile(r"\{\{\s*item\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
#: The item fields a prompt is taken from when no run template is given, in order.
PROMPT_FIELDS = ("input", "prompt", "question")
REFERENCE_CRITERIA = ("string_check", "text_similarity")
MODEL_CRITERIA = ("label_model", "score_model")


def import_hosted(sources: list[Path], imported: Imported) -> None:
    """Read a hosted export (data JSONL files, the eval's JSON, a run's JSON) into `imported`."""
    criteria: list[dict[str, object]] = []
    template: list[dict[str, object]] | None = None
    for source in (s for s in sources if s.suffix.lower() == ".json"):
        document = _json(source)
        if isinstance(document, list):
            criteria.extend(c for c in document if isinstance(c, dict))
        elif isinstance(document, dict):
            found = document.get("testing_criteria")
            if isinstance(found, list):
                criteria.extend(c for c in found if isinstance(c, dict))
            messages = _template(document)
            template = messages if messages is not None else template
    data = [s for s in sources if s.suffix.lower() == ".jsonl"]
    if not data:
        raise UsageError("a hosted Evals export needs its data-source .jsonl file")
    reference, scoring, operation = _criteria(criteria, imported)
    ids = QuestionIds()
    for source in data:
        for line, row in jsonl_rows(source, imported, "data-source file"):
            item = row.get("item", row)
            if not isinstance(item, dict):
                imported.skip(source, line, "`item` is not an object")
                continue
            _item(source, line, item, template, reference, scoring, operation, imported, ids)


def _json(path: Path) -> object:
    try:
        return json.loads(read_source(path, "eval JSON"))
    except (ValueError, RecursionError) as exc:
        raise UsageError(f"{path}: not JSON ({exc})") from None


def _template(document: dict[str, object]) -> list[dict[str, object]] | None:
    source = document.get("data_source", document)
    messages = source.get("input_messages") if isinstance(source, dict) else None
    template = messages.get("template") if isinstance(messages, dict) else None
    return [m for m in template if isinstance(m, dict)] if isinstance(template, list) else None


def _criteria(
    criteria: list[dict[str, object]], imported: Imported
) -> tuple[str | None, str | None, str | None]:
    """The item field holding the gold, the scoring text, and the `string_check` operation on it."""
    reference: str | None = None
    model_fields: list[str] = []
    scoring: list[str] = []
    operation: str | None = None
    for criterion in criteria:
        kind = criterion.get("type")
        if kind in REFERENCE_CRITERIA:
            found = ITEM_FIELD.search(str(criterion.get("reference", "")))
            if found and reference is None:
                reference = found.group(1)
            if kind == "string_check" and criterion.get("operation") in ("eq", "like", "ilike"):
                operation = str(criterion["operation"])
            elif kind == "string_check":
                imported.unmapped[
                    f"string_check {criterion.get('operation')!r}: the judge grades instead"
                ] += 1
            if kind == "text_similarity":
                imported.unmapped["text_similarity's metric and threshold: the judge grades instead"] += 1
        elif kind in MODEL_CRITERIA:
            text = chat_text(_as_chat(criterion.get("input")))
            if text:
                model_fields.extend(ITEM_FIELD.findall(text))
                scoring.append(text + _passing(criterion))
        else:
            imported.unmapped[f"{kind} criterion: runs code or a model of its own (left behind)"] += 1
    if reference is None and model_fields:
        reference = next((f for f in model_fields if f not in PROMPT_FIELDS), model_fields[0])
    return reference, ("\n\n".join(scoring) if scoring else None), operation


def _as_chat(value: object) -> object:
    if isinstance(value, list):
        return [
            {
                "role": m.get("role", "user"),
                "content": m["content"] if isinstance(m.get("content"), str) else "",
            }
            for m in value
            if isinstance(m, dict)
        ]
    return value


def _passing(criterion: dict[str, object]) -> str:
    labels = criterion.get("passing_labels")
    if isinstance(labels, list) and labels:
        return "\n\nPassing labels: " + ", ".join(str(label) for label in labels)
    threshold = criterion.get("pass_threshold")
    return f"\n\nPass threshold: {threshold}" if isinstance(threshold, int | float) else ""


def _item(
    source: Path,
    line: int,
    item: dict[str, object],
    template: list[dict[str, object]] | None,
    reference: str | None,
    scoring: str | None,
    operation: str | None,
    imported: Imported,
    ids: QuestionIds,
) -> None:
    values = {key: value if isinstance(value, str) else json.dumps(value) for key, value in item.items()}
    if template is not None:
        rendered = [
            dict(
                m,
                content=ITEM_FIELD.sub(
                    lambda f: values.get(f.group(1), f.group()), str(m.get("content", ""))
                ),
            )
            for m in template
        ]
        prompt = chat_text(rendered)
    else:
        prompt = next((values[f] for f in PROMPT_FIELDS if f in values), None)
    if not prompt or not prompt.strip():
        imported.skip(source, line, "no prompt: no run template, and no input, prompt or question field")
        return
    gold = values.get(reference) if reference else None
    if not gold or not gold.strip():
        imported.skip(source, line, f"no gold: the criteria reference {reference or 'no item field'}")
        return
    imported.mapped[
        "input_messages template + item -> prompt" if template else "item prompt field -> prompt"
    ] += 1
    imported.mapped[f"item.{reference} (the criteria's reference) -> gold"] += 1
    if scoring is not None:
        imported.mapped["label_model / score_model grader prompts -> scoring"] += 1
    check = None
    if operation == "eq":
        check = closed_check(gold) or text_check([gold], how="whole")
    elif operation is not None:
        check = text_check([gold], how="substring", ignore_case=operation == "ilike")
    if check is not None:
        imported.mapped[f"string_check {operation} -> match {check.kind}"] += 1
    item_id = item.get("id")
    name = str(item_id) if isinstance(item_id, str | int) else f"{source.stem}.{line}"
    question = ImportedQuestion(
        id=ids.make(name),
        prompt=prompt,
        gold=gold,
        origin=f"{source.name}:{line}",
        scoring=scoring,
        match=check,
    )
    imported.add(source.stem, question)
