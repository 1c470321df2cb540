"""`tabench import inspect`: an Inspect AI dataset file (`.jsonl` or `.csv`), read as Inspect's
`json_dataset` / `csv_dataset` read it into `Sample`s with the default field names:

    input      the prompt (text, or a chat list: `role: content` paragraphs, one user message
               alone as its text)
    target     the gold; a list: the first is the gold, the rest accepted variants
    id         the question id; without one, the sample's place in the file (1-based), the id
               Inspect gives a sample that has none, so an Inspect log's answers name the same
               questions (`grade --answers LOG`)
    choices    a multiple-choice question: the choices are put under the prompt as `A) ...`
               lines, as Inspect's `multiple_choice` solver shows them, and a target letter
               becomes `match choice "B" among "ABCD"`
    metadata   not part of a question (named in the summary)

`--field input=question` (any of the fields above) reads a field from another column, as Inspect's
`FieldSpec` does. A CSV cell of `target` or `choices` holding a JSON list is read as that list, as
Inspect does; a `choices` cell that is not JSON is split at commas.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path

from ...core.closed_match import ALL_LETTERS, MatchCheck
from ...core.errors import UsageError
from ...core.question_ids import QuestionIds
from .checks import closed_check
from .sources import Imported, ImportedQuestion, chat_text, csv_rows, jsonl_rows

#: The fields a `Sample` is built from; any other is metadata.
SAMPLE_FIELDS = ("input", "target", "id", "choices", "metadata", "files", "setup", "sandbox")


def import_dataset(
    sources: list[Path], imported: Imported, *, fields: Mapping[str, str] | None = None
) -> None:
    """Read each dataset file in `sources` into `imported`; `fields` maps a `Sample` field to the
    column it is read from (Inspect's `FieldSpec`: `{"input": "question", "target": "answer"}`)."""
    unknown = sorted(set(fields or ()) - set(SAMPLE_FIELDS))
    if unknown:
        raise UsageError(f"--field {unknown[0]}=...: a Sample field is one of " + ", ".join(SAMPLE_FIELDS))
    ids = QuestionIds()
    for source in sources:
        for position, (line, row) in enumerate(_rows(source, imported), start=1):
            if fields:
                row = _renamed(row, fields)
            _sample(source, position, line, row, imported, ids)


def _renamed(row: dict[str, object], fields: Mapping[str, str]) -> dict[str, object]:
    """`row` with each column `fields` names under the Sample field it stands for."""
    columns = set(fields.values())
    renamed = {key: value for key, value in row.items() if key not in columns and key not in fields}
    for field, column in fields.items():
        if column in row:
            renamed[field] = row[column]
    return renamed


def _rows(source: Path, imported: Imported) -> Iterator[tuple[int, dict[str, object]]]:
    if source.suffix.lower() == ".csv":
        for line, cells in csv_rows(source, "dataset file"):
            yield line, {key: _cell(key, value) for key, value in cells.items()}
    else:
        yield from jsonl_rows(source, imported, "dataset file")


def _cell(key: str, value: str) -> object:
    if key in ("target", "choices") and value.lstrip().startswith("["):
        try:
            return json.loads(value)
        except ValueError:
            return value
    if key == "choices":
        return [part.strip() for part in value.split(",")]
    return value


def _sample(
    source: Path, position: int, line: int, row: dict[str, object], imported: Imported, ids: QuestionIds
) -> None:
    prompt = chat_text(row.get("input"))
    targets = _texts(row.get("target"))
    if prompt is None or not prompt.strip():
        imported.skip(source, line, "no `input` text or chat list")
        return
    if not targets:
        imported.skip(source, line, "no `target` to grade against")
        return
    sample_id = row.get("id")
    name = str(sample_id) if isinstance(sample_id, str | int) and str(sample_id).strip() else str(position)
    imported.mapped["input -> prompt"] += 1
    imported.mapped["target -> gold"] += 1
    check = None
    choices = _texts(row.get("choices"))
    if choices:
        letters = ALL_LETTERS[: len(choices)]
        prompt += "\n\n" + "\n".join(
            f"{letter}) {text}" for letter, text in zip(letters, choices, strict=False)
        )
        imported.mapped["choices -> prompt lines and match choice"] += 1
        letter = targets[0].strip().upper()
        if len(letter) == 1 and letter in letters:
            check = MatchCheck("choice", letter, among=letters)
            targets[0] = f"{letter}) {choices[letters.index(letter)]}"  # the judge sees what was chosen
    else:
        check = closed_check(targets[0])
        if check is not None:
            imported.mapped[f"closed target -> match {check.kind}"] += 1
    for key in row:
        if key not in SAMPLE_FIELDS or key in ("metadata", "files", "setup", "sandbox"):
            imported.unmapped[f"{key}: metadata and sandbox fields are not part of a question"] += 1
    accept = tuple(dict.fromkeys(t for t in targets[1:] if t.strip() and t != targets[0]))
    question = ImportedQuestion(
        id=ids.make(name),
        prompt=prompt,
        gold=targets[0],
        origin=f"{source.name}:{line}",
        accept=accept,
        match=check,
    )
    imported.add(source.stem, question)


def _texts(value: object) -> list[str]:
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, int | float) and not isinstance(value, bool):
        return [str(value)]
    if isinstance(value, list):
        return [str(v) for v in value if isinstance(v, str | int | float) and not isinstance(v, bool)]
    return []
