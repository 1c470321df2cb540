"""The files an import writes, as text: a rubric file per source eval and the manifest.

A rubric comes out in the canonical layout `tabench fmt` writes (it is passed through the
formatter, which also checks that it reads back as the same questions), each question under a
comment naming the item it came from. A text of several lines is written as a `\"\"\"` string when
it reads back unchanged that way (docs/language.md section 4.3), else as a one-line string with
`\\n` escapes; every other text is a canonical one-line string.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...core.question_ids import QuestionIds
from ..format_rubric import INDENT, canonical_string
from ..formatting import format_text
from ..line_limits import MAX_LINE_CHARS
from ..string_literals import decode_long_string
from .sources import Imported, ImportedQuestion

#: The indentation of a long string's lines inside a question.
_BODY = INDENT * 2


def string_literal(value: str) -> str:
    """`value` as a rubric string: `\"\"\"` over several lines when that reads back as `value`."""
    if "\n" in value and "\r" not in value:
        lines = value.split("\n")
        body = "\n".join(_BODY + line if line.strip() else "" for line in lines)
        raw = f'"""\n{body}\n{_BODY}"""'
        if (
            '"""' not in value
            and not value.endswith('"')
            and all(len(line) < MAX_LINE_CHARS - len(_BODY) for line in lines)
            and decode_long_string(raw) == value
            and all(ch == "\n" or ch == "\t" or ch >= " " for ch in value)
        ):
            return raw
    return canonical_string(value)


def rubric_text(questions: Sequence[ImportedQuestion], path: str) -> str:
    """The rubric file holding `questions`, formatted as `tabench fmt` writes it."""
    blocks = []
    for question in questions:
        lines = [f"# from {_comment(question.origin)}", f"question {question.id} {{"]
        lines.append(f"{INDENT}prompt {string_literal(question.prompt)}")
        lines.append(f"{INDENT}gold {string_literal(question.gold)}")
        lines.extend(f"{INDENT}accept {string_literal(text)}" for text in question.accept)
        if question.scoring is not None and question.scoring.strip():
            lines.append(f"{INDENT}scoring {string_literal(question.scoring)}")
        if question.match is not None:
            lines.append(f"{INDENT}match {question.match.field_text()}")
        lines.append("}")
        blocks.append("\n".join(lines))
    return format_text("\n\n".join(blocks) + "\n", path)


def _comment(text: str) -> str:
    """`text` fit for one comment line: no line breaks, no control characters."""
    return "".join(ch if ch >= " " else " " for ch in text)[:200]


def manifest_text(name: str, scorer: str, command: str) -> str:
    """The manifest of an imported battery (`command` is the import, as a comment)."""
    return (
        f"# Imported by: {_comment(command)}\n"
        f"name: {name}\n"
        f"scorer: {scorer}\n"
        "rubrics: [questions/*.rubric]\n"
        "t1: true\n"
    )


def battery_texts(imported: Imported, *, name: str, scorer: str, command: str, folder: str) -> dict[str, str]:
    """Every file of the battery `imported` makes, by its path inside the battery's folder
    (`folder` names it in a message): the manifest and one rubric file per source eval, under
    `questions/`, named after the eval as question ids are made (valid, unique)."""
    texts = {"battery.yaml": manifest_text(name, scorer, command)}
    stems = QuestionIds()
    for stem, questions in imported.rubrics.items():
        relative = f"questions/{stems.make(stem)}.rubric"
        texts[relative] = rubric_text(questions, f"{folder}/{relative}")
    return texts
