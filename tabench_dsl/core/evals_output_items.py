"""The output items of OpenAI's hosted Evals (the `/evals` API, shut down on 2026-11-30): the one
reader of their format. `tabench import openai-evals` reads their items as questions
(`language/importers/openai_hosted`), `grade --answers` their samples as answers
(`grading/answers`), and both name an item's question by the same rule (`item_name`).

Two shapes hold them:

- the API's list, `GET /evals/{eval}/runs/{run}/output_items` saved as `.json`: `{"object":
  "list", "data": [...]}` (or one output item), each `eval.run.output_item` with `run_id`,
  `datasource_item_id` (the item's place in the data source, from 0), `datasource_item` and a
  `sample` whose `output` is the messages the model answered with;
- the dashboard's export, `.jsonl`: a row per item and run with `run_id`, `data_source_idx`,
  `item` and a `sample` whose `outputs` are the messages.

As answers:

    system    the run's id (`run_id`): each run is one system, so two runs of one model stay apart
    question  the id the import gives the item from the same file: its own `id` field, else
              FILE.N (N = the item's place in the data source + 1, the same in every run's rows)
    answer    the text of the sample's output messages (several: one paragraph each)

A row without a sample, whose sample ended in an error, or whose messages hold no text has no
answer: the reader says why, and the row is not graded.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterator
from pathlib import Path

from .question_ids import id_base
from .records import Answer

#: The `object` of one output item in the API's answers.
OUTPUT_ITEM = "eval.run.output_item"
#: Where an output item's item begins in the API's list, to name its line.
OUTPUT_ITEM_START = re.compile(r'"datasource_item"\s*:')
#: How much of a file is read to tell whether it holds output items.
_HEAD_BYTES = 4096
#: The start of the API's list of output items, or of one output item.
_API_HEAD = re.compile(rb'\A(?:\xef\xbb\xbf)?\s*\{\s*"object"\s*:\s*"(?:list|eval\.run\.output_item)"')


def is_output_items(path: str | Path) -> bool:
    """True when `path` starts as the API's output items (`.json`) or the dashboard's export
    (`.jsonl`, a first row naming `run_id` and `data_source_idx`) do."""
    suffix = Path(path).suffix.lower()
    if suffix not in (".json", ".jsonl"):
        return False
    try:
        with open(path, "rb") as f:
            head = f.read(_HEAD_BYTES)
    except OSError:
        return False
    if suffix == ".json":
        return _API_HEAD.match(head) is not None and OUTPUT_ITEM.encode() in head
    first = head.lstrip(b"\xef\xbb\xbf \t\r\n").split(b"\n", 1)[0]
    return first.startswith(b"{") and b'"data_source_idx"' in first and b'"run_id"' in first


def row_lines(text: str, start: re.Pattern[str], count: int) -> list[int]:
    """The lines `start` is found on in `text`, when it is found once per row; else line 1 each."""
    found, line, at = [], 1, 0
    for match in start.finditer(text):  # counted on from the last match: linear in the text
        line, at = line + text.count("\n", at, match.start()), match.start()
        found.append(line)
    return found if len(found) == count else [1] * count


def listed_output_items(text: str, document: object) -> list[tuple[int, dict[str, object]]]:
    """The API's output items (a list of them, or one) as the export's rows (`run_id`,
    `data_source_idx`, `item`, `sample`), each with the line its item is on."""
    if not isinstance(document, dict):
        return []
    listed = document.get("data") if document.get("object") == "list" else [document]
    outputs = [
        o
        for o in (listed if isinstance(listed, list) else [])
        if isinstance(o, dict) and o.get("object") == OUTPUT_ITEM
    ]
    lines = row_lines(text, OUTPUT_ITEM_START, len(outputs))
    rows = [
        {
            "run_id": o.get("run_id"),
            "data_source_idx": o.get("datasource_item_id"),
            "item": o.get("datasource_item"),
            "sample": o.get("sample"),
        }
        for o in outputs
    ]
    return list(zip(lines, rows, strict=True))


def data_source_place(row: object) -> int | None:
    """The question number a row's `data_source_idx` gives its item (the index + 1), or None."""
    index = row.get("data_source_idx") if isinstance(row, dict) else None
    if not isinstance(index, int) or isinstance(index, bool) or index < 0:
        return None
    return index + 1


def item_name(item: dict[str, object], stem: str, place: int) -> str:
    """The name a question of `item` is made from: its own `id`, else `STEM.PLACE` (the file's
    name without suffix, and the item's number in it)."""
    item_id = item.get("id")
    return str(item_id) if isinstance(item_id, str | int) else f"{stem}.{place}"


def sample_answer(row: dict[str, object]) -> tuple[str | None, str]:
    """The answer a row's sample holds, or None and why it holds none."""
    sample = row.get("sample")
    if not isinstance(sample, dict):
        return None, "no sample: the export holds no output for this row"
    error = sample.get("error")
    if error:
        message = error.get("message") if isinstance(error, dict) else error
        return None, f"the sample ended in an error ({str(message).strip()[:200]})"
    messages = sample["output"] if "output" in sample else sample.get("outputs")
    texts = (
        [text for message in messages if (text := _text(message)) is not None]
        if isinstance(messages, list)
        else []
    )
    if not texts:
        return None, "no text in the sample's output messages"
    return "\n\n".join(texts), ""


def _text(message: object) -> str | None:
    """A message's text: its `content` as text, or the text of its parts (an `output_text` part)."""
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
        return "".join(parts) if parts else None
    return None


def output_answers(path: str | Path, text: str) -> Iterator[tuple[int, Answer | str]]:
    """The answers of the output items file at `path`, whose text is `text`, each with its line:
    an `Answer`, or why the row has none. `ValueError` for a `.json` file that is not JSON."""
    stem = Path(path).stem
    if Path(path).suffix.lower() == ".json":
        rows: list[tuple[int, object, str]] = [
            (n, row, "") for n, row in listed_output_items(text, json.loads(text))
        ]
    else:
        rows = list(_export_rows(text))
    #: The item first seen at each place: a different item there later (a run on another data
    #: source) is numbered by its line, as the import numbers it.
    first_items: dict[int, str] = {}
    for line, row, problem in rows:
        item = row.get("item") if isinstance(row, dict) else None
        run = row.get("run_id") if isinstance(row, dict) else None
        if (
            problem
            or not isinstance(row, dict)
            or not isinstance(item, dict)
            or not isinstance(run, str)
            or not run
        ):
            yield line, problem or "not an output item (no `item` object and `run_id`)"
            continue
        place = data_source_place(row) or line
        seen = json.dumps(item, sort_keys=True)
        if first_items.setdefault(place, seen) != seen:
            place = line
        answer, why = sample_answer(row)
        if answer is None:
            yield line, f"{why}; not graded"
            continue
        yield line, Answer(run, id_base(item_name(item, stem, place)), answer)


def naming_hint(path: str | Path, answers: list[Answer], questions: Collection[str]) -> str | None:
    """What to do when no answer of the output items at `path` names a question of the battery
    (one imported from another file of the export, whose name its ids carry); None otherwise."""
    if not answers or any(answer.question in questions for answer in answers):
        return None
    return (
        f"no question of the battery is named as this file names its items ({answers[0].question!r}: "
        f"the item's id, else {Path(path).stem}.N): import this file to grade its answers "
        f"(`tabench import openai-evals {Path(path).name} EVAL.json --out DIR`)"
    )


def _export_rows(text: str) -> Iterator[tuple[int, object, str]]:
    """The rows of the dashboard's export with their lines, and why a line is none ("" for a row)."""
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line), ""
        except (ValueError, RecursionError) as exc:
            yield number, None, f"not JSON ({getattr(exc, 'msg', 'nested too deeply')})"
