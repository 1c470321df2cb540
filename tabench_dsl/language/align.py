"""New exemplars written into a battery's rubric files, as `tabench align` proposes them.

Each exemplar goes on its own line after the last exemplar of its question (before the closing
`}` of a question that has none), in the layout `tabench fmt` writes: indented two spaces,
`exemplar KIND "answer" why "why"`, each string in its canonical one-line form
(`format_rubric.canonical_string`). Nothing else of the file changes, so the patch is the new
lines alone.

An exemplar is not placed, and the reason said, when its question is not in the battery, when the
question already has an exemplar with the same answer (or one placed before it in this patch has),
or when the question already received `max_per_question` new exemplars. One placed where its
question's block could not be read back with it as the last new exemplar (a field sharing a line
with the closing `}`) is left out too, with the advice to run `tabench fmt` first. An exemplar
expected to fail that T1 would pass (warning W104, `lint.t1_would_pass`) is placed, and marked, so
that no one reads it as a fix: T1 passes such an answer before the judge sees any exemplar.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from pathlib import Path

import msgspec

from ..core.errors import TabenchError
from ..core.nodes import Battery, Question
from .editing import question_spans
from .format_rubric import INDENT, canonical_string
from .formatting import read_formattable
from .lint import t1_would_pass
from .parse import parse_rubric


class NewExemplar(msgspec.Struct, frozen=True):
    """An exemplar to add to `question`, and where it comes from (the answer's system, the person
    who judged it and their verdict)."""

    question: str
    kind: str
    answer: str
    why: str
    system: str = ""
    reviewer: str = ""
    person_verdict: str = ""

    @property
    def expect(self) -> str | None:
        """`pass` for a partial answer a person passed (a partial exemplar expects fail unless told)."""
        return "pass" if self.kind == "partial" and self.person_verdict == "pass" else None


class PlacedExemplar(msgspec.Struct, frozen=True):
    """A new exemplar as placed: its file, the line it takes in the patched file, and whether T1
    would pass its answer while it expects fail (W104)."""

    exemplar: NewExemplar
    path: str
    line: int
    t1_passes: bool


class LeftOut(msgspec.Struct, frozen=True):
    """A new exemplar not placed, and why."""

    exemplar: NewExemplar
    reason: str


class RubricPatch(msgspec.Struct):
    """The exemplars placed and left out, and each changed rubric file's text before and after."""

    placed: list[PlacedExemplar] = msgspec.field(default_factory=list)
    left_out: list[LeftOut] = msgspec.field(default_factory=list)
    files: dict[str, tuple[str, str]] = msgspec.field(default_factory=dict)

    @property
    def texts(self) -> dict[str, str]:
        """Each changed file's patched text, by path."""
        return {path: after for path, (_, after) in self.files.items()}


def exemplar_line(exemplar: NewExemplar) -> str:
    """The exemplar's field line as `tabench fmt` writes it, without its line break."""
    answer, why = canonical_string(exemplar.answer), canonical_string(exemplar.why)
    expect = "" if exemplar.expect is None else f" expect {exemplar.expect}"
    return f"{INDENT}exemplar {exemplar.kind} {answer} why {why}{expect}"


def plan_patch(battery: Battery, exemplars: Iterable[NewExemplar], *, max_per_question: int) -> RubricPatch:
    """Place each exemplar in turn (module docstring); nothing is written."""
    patch = RubricPatch()
    seen: dict[str, set[str]] = {}
    added: dict[str, int] = {}
    texts: dict[str, str] = {}
    for exemplar in exemplars:
        question = battery.question(exemplar.question)
        reason = _reason_left_out(question, exemplar, seen, added.get(exemplar.question, 0), max_per_question)
        if question is None or reason is not None:
            patch.left_out.append(LeftOut(exemplar, reason or "no such question in the battery"))
            continue
        path = question.pos.path
        if path not in texts:
            texts[path] = read_formattable(Path(path))
            patch.files[path] = (texts[path], texts[path])
        placed = _place(texts[path], path, question.id, exemplar)
        if placed is None:
            patch.left_out.append(
                LeftOut(
                    exemplar, "its question's block could not take it: run `tabench fmt` on the file first"
                )
            )
            continue
        texts[path], line = placed
        seen[question.id].add(_answer_key(exemplar.answer))
        added[question.id] = added.get(question.id, 0) + 1
        expected = exemplar.expect or ("pass" if exemplar.kind == "correct" else "fail")
        w104 = expected == "fail" and t1_would_pass(
            question, exemplar.answer, t1=battery.t1, t1_trap=battery.t1_trap, t1_rule=battery.t1_rule
        )
        patch.placed.append(PlacedExemplar(exemplar, path, line, w104))
    patch.files = {
        path: (before, texts[path]) for path, (before, _) in patch.files.items() if before != texts[path]
    }
    return patch


def unified_patch(patch: RubricPatch) -> str:
    """A unified diff of every changed rubric file (`a/PATH` and `b/PATH`, as `git apply` reads)."""
    out: list[str] = []
    for path, (before, after) in sorted(patch.files.items()):
        out.extend(
            difflib.unified_diff(
                before.splitlines(keepends=True),
                after.splitlines(keepends=True),
                fromfile=f"a/{path}",
                tofile=f"b/{path}",
            )
        )
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in out)


def _answer_key(answer: str) -> str:
    """Two answers are the same exemplar when they differ only in white space and letter case."""
    return " ".join(answer.split()).casefold()


def _reason_left_out(
    question: Question | None, exemplar: NewExemplar, seen: dict[str, set[str]], added: int, most: int
) -> str | None:
    if question is None:
        return None
    answers = seen.setdefault(question.id, {_answer_key(e.answer) for e in question.exemplars})
    key = _answer_key(exemplar.answer)
    if key in answers:
        return "the question has an exemplar with this answer already"
    if added >= most:
        return f"the question has {most} new exemplar(s) already (--max-per-question)"
    return None


def _place(text: str, path: str, qid: str, exemplar: NewExemplar) -> tuple[str, int] | None:
    """`text` with the exemplar's line inserted in question `qid`, and that line's number; None
    when the question's block, read back, does not end its exemplars with the new one."""
    lines = text.splitlines(keepends=True)
    parsed = {q.id: q for q in parse_rubric(text, path).questions}
    question = parsed.get(qid)
    span = next((s for s in question_spans(text) if s.id == qid), None)
    if question is None or span is None:
        return None
    written = [f.pos.line for f in question.fields if f.name == "exemplar"]
    if written:
        at = max(written)  # 1-based line of the last exemplar's keyword
        quotes = lines[at - 1].count('"""')
        while quotes % 2 and at < len(lines):  # a long string still open: the field ends where it closes
            at += 1
            quotes += lines[at - 1].count('"""')
        after = at
    else:
        after = span.end_line - 1  # before the closing brace
    ending = "\r\n" if lines and lines[max(after - 1, 0)].endswith("\r\n") else "\n"
    if after > 0 and not lines[after - 1].endswith("\n"):
        return None
    new_lines = [*lines[:after], exemplar_line(exemplar) + ending, *lines[after:]]
    patched = "".join(new_lines)
    try:
        read_back = {q.id: q for q in parse_rubric(patched, path).questions}.get(qid)
    except TabenchError:  # not read back: the line went somewhere a field cannot stand
        return None
    fields = [] if read_back is None else [f for f in read_back.fields if f.name == "exemplar"]
    expect = [] if exemplar.expect is None else ["expect", exemplar.expect]
    if not fields or [arg.value for arg in fields[-1].args] != [
        exemplar.kind,
        exemplar.answer,
        "why",
        exemplar.why,
        *expect,
    ]:
        return None
    return patched, after + 1
