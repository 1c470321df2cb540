"""`tabench import openai-evals` of a hosted Evals export (the `/evals` API, shut down on
2026-11-30): SOURCE files are

- the items: a data-source JSONL, one `{"item": {...}}` row per line (a row without `item` is the
  item; the dashboard's output-items export, a row per item and run with `data_source_idx`, is
  read as one question per item), a run whose `data_source.source` is `file_content` (the
  rows inline), or the API's output items (`.../runs/{run}/output_items`: `datasource_item`,
  `datasource_item_id`, and `sample.input`, the messages the model was sent, as the prompt when
  no run template is given);
- the eval as JSON (`GET /evals/{id}`: its `testing_criteria`), the criteria list, or one grader;
- optionally a run as JSON (`GET /evals/{id}/runs/{run}`), whose `data_source.input_messages`
  template is the prompt (`{{ item.FIELD }}` put in as literal text). Without one, the prompt is
  the item's `input`, `prompt` or `question` field.

A message's `content` is text, an `input_text` object, or a list of parts (the API takes all
three); an image or audio part cannot be a rubric's text and is counted as not carried over.

    gold       the item field a `string_check` (`eq`, `like`, `ilike`) or `text_similarity`
               criterion's `reference` names (`{{ item.FIELD }}`); else the first item field a
               `label_model` / `score_model` grader's messages name that is not the prompt's
    scoring    each `label_model` / `score_model` grader's messages (their text, templates as
               written), with the labels that pass or the threshold
    match      a `string_check` on the gold: `eq` reads a number or a choice letter as one, else
               the whole answer; `like` / `ilike` the gold inside the answer (a regex check)
    id         the item's `id` field, else ITEMS.N: N the row's line in a JSONL file (its
               `data_source_idx` + 1 in an output-items export), its place in a run's inline list
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from ...core.errors import UsageError
from ...core.evals_output_items import data_source_place, item_name, listed_output_items, row_lines
from ...core.question_ids import QuestionIds
from .checks import closed_check, text_check
from .sources import Imported, ImportedQuestion, Skipped, chat_text, jsonl_rows, read_source

#: `{{ item.FIELD }}` in a hosted Evals template.
ITEM_FIELD = re.compile(r"\{\{\s*item\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
#: Where a row of a run's inline items begins (`{"item": {...}}`), to name its line.
ROW_START = re.compile(r'"item"\s*:')
#: The item fields a prompt is taken from when no run template is given, in order.
PROMPT_FIELDS = ("input", "prompt", "question")
REFERENCE_CRITERIA = ("string_check", "text_similarity")
MODEL_CRITERIA = ("label_model", "score_model")
#: Every grader type the API took: a JSON file that is one of these is one criterion.
GRADER_TYPES = (*REFERENCE_CRITERIA, *MODEL_CRITERIA, "python", "multi")


@dataclass(frozen=True)
class Row:
    """One item row: the file it is in, its line there, and the number its default id takes (the
    line in a JSONL file, the place in a run's inline list)."""

    source: Path
    line: int
    place: int
    row: object


def import_hosted(sources: list[Path], imported: Imported) -> None:
    """Read a hosted export (items as JSONL, a run or output items; the eval's JSON; a run's JSON)
    into `imported`."""
    criteria: list[dict[str, object]] = []
    template: list[dict[str, object]] | None = None
    rows: list[Row] = []
    elsewhere: list[str] = []
    for source in (s for s in sources if s.suffix.lower() == ".json"):
        text = read_source(source, "eval JSON")
        document = _json(source, text)
        criteria.extend(_criteria_in(document))
        if isinstance(document, dict):
            messages = _template(document, imported)
            template = messages if messages is not None else template
            rows.extend(_inline_rows(source, text, document, elsewhere))
            listed = listed_output_items(text, document)
            rows.extend(Row(source, line, place, row) for place, (line, row) in enumerate(listed, 1))
    for source in (s for s in sources if s.suffix.lower() == ".jsonl"):
        rows.extend(
            Row(source, line, line, row) for line, row in jsonl_rows(source, imported, "data-source file")
        )
    if not rows:
        where = (
            f" (the run's items are {elsewhere[0]}: export them as a .jsonl and give it too)"
            if elsewhere
            else ""
        )
        raise UsageError(
            "a hosted Evals export needs its items: a data-source .jsonl, a run with them inline, or a"
            f" run's output items{where}"
        )
    reference, scoring, operation = _criteria(criteria, imported)
    ids = QuestionIds()
    items_read: dict[tuple[Path, int], str] = {}
    #: The skips of output-item rows, by their item's place: a row of one run that cannot be
    #: written (a failed run's, that sent no prompt) is no skip once another run's row writes it.
    held: dict[tuple[Path, int], list[Skipped]] = {}
    for found in rows:
        item = found.row.get("item", found.row) if isinstance(found.row, dict) else None
        if not isinstance(item, dict):
            imported.skip(found.source, found.line, "not an object with an `item` object")
            continue
        numbered, key = _output_item(found, item, items_read, imported)
        before = len(imported.skipped)
        written = numbered is not None and _item(
            numbered, item, template, reference, scoring, operation, imported, ids
        )
        if written and key is not None:
            items_read[key] = json.dumps(item, sort_keys=True)
        elif key is not None:
            held.setdefault(key, []).extend(imported.skipped[before:])
    for key in held.keys() & items_read.keys():
        for skipped in held[key]:
            imported.skipped.remove(skipped)
            imported.mapped["a row of another run for an item already read -> the same question"] += 1


def _output_item(
    found: Row, item: dict[str, object], items_read: dict[tuple[Path, int], str], imported: Imported
) -> tuple[Row | None, tuple[Path, int] | None]:
    """A row of an output-items export carries `data_source_idx`, the item's place in the data
    source: it numbers the question (N + 1, the same in every run's export), and a row of another
    run with an item already written is that question (None). A different item at the same place
    (a run on another data source) keeps its line. Also the key to note the item under once its
    question is written."""
    place = data_source_place(found.row)
    if place is None:
        return found, None
    key = (found.source, place)
    if key not in items_read:
        return Row(found.source, found.line, place, found.row), key
    if items_read[key] != json.dumps(item, sort_keys=True):
        return found, None
    imported.mapped["a row of another run for an item already read -> the same question"] += 1
    return None, None


def _json(path: Path, text: str) -> object:
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise UsageError(f"{path}: not JSON ({exc})") from None


def _criteria_in(document: object) -> list[dict[str, object]]:
    """The criteria a JSON file holds: an eval's `testing_criteria`, a list of them, or one grader."""
    if isinstance(document, dict) and document.get("type") in GRADER_TYPES:
        return [document]
    found = document.get("testing_criteria") if isinstance(document, dict) else document
    return [c for c in found if isinstance(c, dict)] if isinstance(found, list) else []


def _data_source(document: dict[str, object]) -> dict[str, object]:
    source = document.get("data_source", document)
    return source if isinstance(source, dict) else {}


def _template(document: dict[str, object], imported: Imported) -> list[dict[str, object]] | None:
    messages = _data_source(document).get("input_messages")
    template = messages.get("template") if isinstance(messages, dict) else None
    if not isinstance(template, list):
        return None
    return _as_chat(template, imported, "the run's template")


def _inline_rows(source: Path, text: str, document: dict[str, object], elsewhere: list[str]) -> list[Row]:
    """A run's items given inline (`file_content`), each with the line its `"item"` key is on
    when the file's `"item"` keys are exactly its rows (else line 1). A run whose items live
    elsewhere (an uploaded file, stored completions) is named in `elsewhere`."""
    items = _data_source(document).get("source")
    if not isinstance(items, dict):
        return []
    content = items.get("content")
    if items.get("type") != "file_content" or not isinstance(content, list):
        kind = items.get("type")
        if kind == "file_id" and isinstance(items.get("id"), str):
            elsewhere.append(f"in the uploaded file {items['id']}")
        else:
            elsewhere.append(f"{kind} the service kept" if isinstance(kind, str) else "not inline")
        return []
    lines = row_lines(text, ROW_START, len(content))
    return [
        Row(source, line, place, row) for place, (line, row) in enumerate(zip(lines, content, strict=True), 1)
    ]


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
            grader_input = criterion.get("input")
            if isinstance(grader_input, list):
                grader_input = _as_chat(grader_input, imported, f"{kind} grader")
            text = chat_text(grader_input)
            if text:
                model_fields.extend(ITEM_FIELD.findall(text))
                scoring.append(text + _passing(criterion))
        else:
            imported.unmapped[f"{kind} criterion: runs code or a model of its own (left behind)"] += 1
    if reference is None and model_fields:
        reference = next((f for f in model_fields if f not in PROMPT_FIELDS), model_fields[0])
    return reference, ("\n\n".join(scoring) if scoring else None), operation


def _as_chat(messages: list[object], imported: Imported, where: str) -> list[dict[str, object]]:
    """Messages as `role` and text `content`: the API took content as text, an `input_text`
    object or a list of parts; a part with no text (an image, audio) is counted as not carried
    over, and a message left with no text is dropped."""
    chat: list[dict[str, object]] = []
    for message in (m for m in messages if isinstance(m, dict)):
        content = message.get("content")
        parts = content if isinstance(content, list) else [content]
        texts: list[str] = []
        for part in parts:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                texts.append(part["text"])
            else:
                kind = part.get("type", "non-text") if isinstance(part, dict) else "non-text"
                imported.unmapped[f"{kind} part of a message in {where}: a rubric holds text only"] += 1
        if texts:
            chat.append({"role": message.get("role", "user"), "content": "\n\n".join(texts)})
    return chat


def _passing(criterion: dict[str, object]) -> str:
    labels = criterion.get("passing_labels")
    if isinstance(labels, list) and labels:
        return "\n\nPassing labels: " + ", ".join(str(label) for label in labels)
    threshold = criterion.get("pass_threshold")
    return f"\n\nPass threshold: {threshold}" if isinstance(threshold, int | float) else ""


def _item(
    found: Row,
    item: dict[str, object],
    template: list[dict[str, object]] | None,
    reference: str | None,
    scoring: str | None,
    operation: str | None,
    imported: Imported,
    ids: QuestionIds,
) -> bool:
    """Write the question of one item row; False when it is skipped (and named)."""
    values = {key: value if isinstance(value, str) else json.dumps(value) for key, value in item.items()}
    prompt, how = _prompt(found, values, template, imported)
    if not prompt or not prompt.strip():
        imported.skip(
            found.source,
            found.line,
            "no prompt: no run template, no sample input, and no input, prompt or question field",
        )
        return False
    gold = values.get(reference) if reference else None
    if not gold or not gold.strip():
        imported.skip(
            found.source, found.line, f"no gold: the criteria reference {reference or 'no item field'}"
        )
        return False
    imported.mapped[how] += 1
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
    question = ImportedQuestion(
        id=ids.make(item_name(item, found.source.stem, found.place)),
        prompt=prompt,
        gold=gold,
        origin=f"{found.source.name}:{found.line}",
        scoring=scoring,
        match=check,
    )
    imported.add(found.source.stem, question)
    return True


def _prompt(
    found: Row, values: dict[str, str], template: list[dict[str, object]] | None, imported: Imported
) -> tuple[str | None, str]:
    """The prompt of an item and how it was found: the run's template filled in, else the
    messages an output item says the model was sent (`sample.input`; the dashboard's export
    calls them `trajectory`), else the item's own prompt field."""
    if template is not None:
        rendered = [
            dict(m, content=ITEM_FIELD.sub(lambda f: values.get(f.group(1), f.group()), str(m["content"])))
            for m in template
        ]
        return chat_text(rendered), "input_messages template + item -> prompt"
    sample = found.row.get("sample") if isinstance(found.row, dict) else None
    sent = (
        next((m for m in (sample.get("input"), sample.get("trajectory")) if isinstance(m, list) and m), None)
        if isinstance(sample, dict)
        else None
    )
    if sent is not None:
        return chat_text(
            _as_chat(sent, imported, "an output item's sample")
        ), "the sample's input messages -> prompt"
    return next((values[f] for f in PROMPT_FIELDS if f in values), None), "item prompt field -> prompt"
