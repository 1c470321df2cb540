"""What an editor asks about a battery's files, answered from the battery language alone (the
language server, `tabench_dsl.lsp`, turns these answers into the protocol's messages).

Every function takes the buffers the editor holds (`open_texts`, path -> text) and reads them in
place of the files on disk (`files.texts_in_place_of_files`). Lines and columns are 1-based and
count characters, as every `SpecError` does. Nothing here raises on a half-typed or hostile file:
a file that does not parse gives its syntax error as its problem, and no symbols past it.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..core.closed_match import MATCH_KINDS
from ..core.errors import SpecError, SpecErrors, TabenchError
from ..core.nodes import EXEMPLAR_KINDS
from ..core.scorer import FACET_NAMES
from .files import MANIFEST, MAX_SPEC_BYTES, texts_in_place_of_files, too_large
from .manifest import MANIFEST_KEYS
from .manifest_judge import JUDGE_KEYS
from .parse import FIELDS, parse_policy, parse_rubric
from .problems import Problem, coded_problems

#: How many folders up from a file its battery's manifest is looked for.
MANIFEST_DEPTH = 12

#: A question's header line: `question ID {` (the id as written, whatever it is).
QUESTION_LINE = re.compile(r"^[\t \f]*question[\t \f]+([^\s{}\"#]+)")

#: What each field means and how it renders, for hovers.
FIELD_DOCS: dict[str, str] = {
    "prompt": '`prompt "text"` (required, once): the question asked; the `question` of the question object.',
    "gold": '`gold "text"` (required, once): the gold answer; `answer_gold` in the prompt, and a T1 key.',
    "accept": '`accept "text"` (any number): an accepted variant; `accepted_variants`, and a T1 key.',
    "trap": '`trap "text"` (once): the honesty trap; `honesty_trap` in the prompt.',
    "structure": '`structure "text"` (once): the expected shape; `output_structure` in the prompt.',
    "scoring": '`scoring "text"` (once): how to score; `scoring` in the prompt.',
    "guide": '`guide "text"` (once): the facet guide as written (not with `facet` lines).',
    "facet": '`facet NAME "text"` (any number): one `NAME: text` line of the facet guide.',
    "exemplar": '`exemplar KIND "answer" why "reason" [expect pass|fail]`: a graded example in the '
    "exemplars list; KIND is correct, partial or incorrect; `expect` is for calibrate only.",
    "t1": "`t1 off` or `t1 on`: switches T1, the mechanical tier, for this question; never rendered.",
    "tags": '`tags "name" ...` (once): labels for slicing the totals; never rendered.',
    "match": '`match number 42 [within 0.5]`, `match choice "B" [among "ABCD"]` or `match regex "..."`, '
    "then `[decides]` (once): a mechanical check of a closed answer after T1; a match passes without "
    "a judge call, and with `decides` a reading that differs fails; never rendered.",
}


@dataclass(frozen=True)
class QuestionSpan:
    """Where a question block stands: its id, its first and last line, the id's column."""

    id: str
    line: int
    end_line: int
    id_column: int


def manifest_for(path: str | Path) -> Path | None:
    """The `battery.yaml` of the battery `path` belongs to: in its folder or one above it."""
    here = Path(path).resolve()
    for folder in [here.parent, *here.parent.parents][:MANIFEST_DEPTH]:
        candidate = folder / MANIFEST
        if candidate.is_file():
            return candidate
    return None


def document_problems(path: str, text: str, open_texts: Mapping[str, str]) -> list[Problem]:
    """The problems of the file at `path` (its text `text`) as `lint` reports them in its battery,
    with the editor's buffers in place of the files; a file outside any battery is checked alone
    (its syntax)."""
    return problems_of_open_files(path, text, open_texts).get(path, [])


def problems_of_open_files(path: str, text: str, open_texts: Mapping[str, str]) -> dict[str, list[Problem]]:
    """After an edit of `path` (now `text`): the problems of it and of every other open file of
    its battery (a duplicate id comes and goes in both files), by path, from one lint run."""
    texts = {**open_texts, path: text}
    manifest = manifest_for(path)
    if manifest is None:
        return {path: coded_problems(_alone(path, text), texts={path: text})}
    from .lint import lint_battery

    read: set[str] = set()
    try:
        with texts_in_place_of_files(texts) as read:
            found = lint_battery(manifest)
    except TabenchError:
        found = []
    real = {os.path.realpath(p): p for p in texts}
    # The edited file first: a client that waits for one notification gets its own.
    by_file: dict[str, list[SpecError]] = {path: []}
    by_file.update({p: [] for p in texts if p != path and os.path.realpath(p) in read})
    for problem in found:
        owner = real.get(os.path.realpath(problem.path))
        if owner is not None:
            by_file.setdefault(owner, []).append(problem)
    out = {}
    for owner, errors in by_file.items():
        outside = os.path.realpath(owner) not in read and owner.endswith((".rubric", ".policy"))
        if outside and not errors:  # not a file of the battery: its syntax, alone
            errors = _alone(owner, texts[owner])
        out[owner] = coded_problems(errors, texts={e.path: texts[owner] for e in errors})
    return out


def _alone(path: str, text: str) -> list[SpecError]:
    """The syntax problem of a rubric or policy file read on its own (none, or the first)."""
    if too_large(text):
        limit = MAX_SPEC_BYTES // (1024 * 1024)
        return [
            SpecError(
                f"the file is larger than {limit} MiB; lint reads no more of it", path=path, line=1, col=1
            )
        ]
    try:
        if path.endswith(".policy"):
            parse_policy(text, path)
        elif path.endswith(".rubric"):
            parse_rubric(text, path)
    except SpecError as exc:
        return [_with_line(exc, text)]
    return []


def _with_line(error: SpecError, text: str) -> SpecError:
    lines = text.split("\n")
    line = lines[error.line - 1] if 0 < error.line <= len(lines) else None
    return SpecError(
        error.message,
        path=error.path,
        line=error.line,
        col=error.col,
        hint=error.hint,
        source_line=line,
        severity=error.severity,
    )


def question_spans(text: str) -> list[QuestionSpan]:
    """Every `question ID {` block of a rubric text, found line by line (so a file that does not
    parse still shows the questions before and after its mistake)."""
    lines = text.split("\n")
    starts = []
    for number, line in enumerate(lines, start=1):
        match = QUESTION_LINE.match(line)
        if match:
            starts.append((number, match.group(1), match.start(1) + 1))
    spans = []
    for i, (number, qid, column) in enumerate(starts):
        end = starts[i + 1][0] - 1 if i + 1 < len(starts) else len(lines)
        while end > number and not lines[end - 1].strip(" \t\f\r"):
            end -= 1
        spans.append(QuestionSpan(qid, number, end, column))
    return spans


def word_at(line: str, column: int) -> tuple[int, int, str]:
    """The bare word (or key) around 1-based `column` of `line`: its start and end columns (end
    exclusive) and its text ("" when there is none)."""
    for match in re.finditer(r"[^\s{}\"#:,\[\]]+", line):
        if match.start() + 1 <= column <= match.end() + 1:
            return match.start() + 1, match.end() + 1, match.group()
    return column, column, ""


def facets_for(path: str, open_texts: Mapping[str, str]) -> tuple[str, ...]:
    """The facet names the battery of `path` allows: its scorer's `facets:` (tabench-1.1's when the
    battery or its scorer cannot be read)."""
    manifest = manifest_for(path)
    if manifest is None:
        return FACET_NAMES
    from .battery import read_battery

    try:
        with texts_in_place_of_files(open_texts):
            loaded = read_battery(manifest)
    except TabenchError:
        return FACET_NAMES
    return loaded.scorer.settings.facets if loaded.scorer is not None else FACET_NAMES


def rubric_completions(line_before: str, inside_question: bool, facets: tuple[str, ...]) -> list[str]:
    """The words that may come next after `line_before` (the line up to the cursor) in a rubric."""
    words = re.findall(r'"""[^"]*"""|"(?:[^"\\]|\\.)*"|[^\s"]+', line_before)
    ends_word = bool(line_before) and not line_before[-1].isspace()
    done = words[:-1] if ends_word else words
    if not inside_question:
        return ["question"] if not done else []
    if not done:
        return list(FIELDS)
    head = done[0].lstrip("{").strip() or (done[1] if len(done) > 1 else "")
    if head == "exemplar":
        if len(done) == 1:
            return list(EXEMPLAR_KINDS)
        if len(done) == 3:
            return ["why"]
        if len(done) == 5:
            return ["expect"]
        if len(done) == 6 and done[5] == "expect":
            return ["pass", "fail"]
    if head == "facet" and len(done) == 1:
        return list(facets)
    if head == "t1" and len(done) == 1:
        return ["off", "on"]
    if head == "match":
        return _match_completions(done)
    return []


def _match_completions(done: list[str]) -> list[str]:
    """The words that may follow `match KIND VALUE` so far (`done`: the words before the cursor)."""
    if len(done) == 1:
        return list(MATCH_KINDS)
    options = {"number": ["within", "decides"], "choice": ["among", "decides"], "regex": ["decides"]}
    if len(done) in (3, 5) and done[-1] != "decides":
        return options.get(done[1], []) if len(done) == 3 else ["decides"]
    return []


def inside_question(lines: list[str], line: int) -> bool:
    """Whether 1-based `line` stands inside a question block (after an unclosed `{`)."""
    depth = 0
    for text in lines[: line - 1]:
        code = re.sub(r'"(?:[^"\\\n]|\\.)*"|#.*', "", text)
        depth += code.count("{") - code.count("}")
    return depth > 0


def manifest_completions(line_before: str) -> list[str]:
    """Manifest keys for a key position in battery.yaml (top level, or inside `judge:`)."""
    if ":" in line_before:
        return []
    return list(JUDGE_KEYS) if line_before[:1] in (" ", "\t") else list(MANIFEST_KEYS)


def question_hover(path: str, qid: str, open_texts: Mapping[str, str]) -> str | None:
    """What a question id's hover shows: its compiled SYSTEM prompt's size, sha256 and first lines;
    why it does not compile, when it does not."""
    manifest = manifest_for(path)
    if manifest is None:
        return None
    from .battery import load_battery
    from .render import compile_battery

    try:
        with texts_in_place_of_files({**open_texts}):
            compiled = compile_battery(load_battery(manifest))
    except SpecErrors as exc:
        return f"question `{qid}`: the battery does not compile yet ({len(exc.errors)} problem(s))"
    except TabenchError as exc:
        return f"question `{qid}`: the battery does not compile yet ({str(exc).splitlines()[0]})"
    question = compiled.questions.get(qid)
    if question is None:
        return None
    system = question.system.encode("utf-8")
    head = "\n".join(question.system.split("\n")[:8])
    return (
        f"**question {qid}**: SYSTEM prompt of {len(system)} bytes, "
        f"sha256 `{hashlib.sha256(system).hexdigest()}`\n\n```\n{head}\n```"
    )


#: A hint that lists the words that are allowed: `fields are a, b, c`, `keys are ...`.
_LISTING = re.compile(r"\b(?:fields|keys|facets|kinds) are (.+)$")
#: The word a message quotes: `unknown field 'gloden'`.
_QUOTED = re.compile(r"'([^']*)'")


def replacements(message: str, hint: str | None) -> tuple[str, list[str]]:
    """For a problem that names a word not allowed and lists those that are (an unknown field, key,
    facet or exemplar kind): the word and the allowed words closest to it, best first."""
    quoted = _QUOTED.search(message)
    listing = _LISTING.search(hint or "")
    if not message.startswith("unknown") or quoted is None or listing is None:
        return "", []
    allowed = [word.strip() for word in listing.group(1).split(",")]
    return quoted.group(1), difflib.get_close_matches(quoted.group(1), allowed, n=3, cutoff=0.5)
