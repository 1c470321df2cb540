"""What an importer reads and gives back: the questions, where each came from, and what could not
come over; and the readers of source files (JSONL, CSV, YAML, a named text file), which hold them
to the limits of data someone else wrote.

A source is data. Nothing in it is run (a JavaScript or Python assert, a `file://` script), a file
it names is read only when it lies inside the source's own folder (a `file://../x` or an absolute
path elsewhere is named and skipped), and a Git LFS pointer (the `openai/evals` registry keeps its
samples in LFS) is reported as such rather than read as an empty dataset.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import stat
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from ...core.closed_match import MatchCheck
from ...core.errors import SpecError, UsageError
from ..files import SURROGATE, decode_spec_bytes
from ..line_limits import MAX_LINE_CHARS
from ..yaml_io import yaml_problem

#: The largest source file an import reads (a dataset of a few hundred thousand questions).
MAX_SOURCE_BYTES = 256 * 1024 * 1024
#: How a Git LFS pointer file starts.
LFS_POINTER = "version https://git-lfs.github.com/spec/"


class LfsPointer(UsageError):
    """A source file that is a Git LFS pointer: the data was never fetched."""


@dataclass(frozen=True)
class ImportedQuestion:
    """One question as a rubric will write it; `origin` (`file:line`) is written as a comment
    above it, so a reader can find the item it came from."""

    id: str
    prompt: str
    gold: str
    origin: str
    accept: tuple[str, ...] = ()
    scoring: str | None = None
    match: MatchCheck | None = None


@dataclass(frozen=True)
class Skipped:
    """An item that did not come over: where it is and why."""

    path: str
    line: int
    reason: str

    def render(self) -> str:
        return f"{self.path}:{self.line}: {self.reason}"


@dataclass
class Imported:
    """What one import read: the questions of each rubric file to write (by file stem, in order),
    the source fields mapped (`"ideal[0] -> gold"`: how many items), what was left behind and
    why (counted), and the items skipped."""

    rubrics: dict[str, list[ImportedQuestion]] = field(default_factory=dict)
    mapped: Counter[str] = field(default_factory=Counter)
    unmapped: Counter[str] = field(default_factory=Counter)
    skipped: list[Skipped] = field(default_factory=list)

    @property
    def questions(self) -> int:
        return sum(len(questions) for questions in self.rubrics.values())

    def add(self, rubric: str, question: ImportedQuestion) -> None:
        """Keep `question` for the rubric file `rubric`, unless a text of it cannot be written in
        a rubric file (then it is skipped, at its origin)."""
        problem = _unwritable(question)
        if problem is not None:
            path, _, line = question.origin.rpartition(":")
            self.skip(path, int(line) if line.isdigit() else 1, problem)
            return
        self.rubrics.setdefault(rubric, []).append(question)

    def skip(self, path: str | Path, line: int, reason: str) -> None:
        self.skipped.append(Skipped(str(path), line, reason))


def _unwritable(question: ImportedQuestion) -> str | None:
    """Why a text of `question` cannot be written in a rubric file, or None."""
    texts = [question.prompt, question.gold, *question.accept, question.scoring or ""]
    if any(SURROGATE.search(text) for text in texts):
        return "a text holds half a character (a lone surrogate escape); fix the source"
    if any(len(line) > MAX_LINE_CHARS // 2 for text in texts for line in text.split("\n")):
        return f"a text has a line over {MAX_LINE_CHARS // 2:,} characters, too long for a rubric line"
    return None


def read_source(path: str | Path, what: str) -> str:
    """The UTF-8 text of the source file at `path`; `UsageError` for one that is missing, not a
    regular file, too large or a Git LFS pointer, `SpecError` at the first byte that is not UTF-8."""
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            raise UsageError(f"{path}: not a regular file")
        if info.st_size > MAX_SOURCE_BYTES:
            raise UsageError(f"{path}: larger than {MAX_SOURCE_BYTES >> 20} MiB; split it")
        with open(path, "rb") as f:
            data = f.read(MAX_SOURCE_BYTES + 1)
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot be read ({exc.strerror})") from None
    text = decode_spec_bytes(data, path, what)
    if text.startswith(LFS_POINTER):
        raise LfsPointer(
            f"{path} is a Git LFS pointer, not the {what}: fetch the data first (`git lfs pull`)"
        )
    return text


def jsonl_rows(path: str | Path, imported: Imported, what: str) -> Iterator[tuple[int, dict[str, object]]]:
    """The objects of a JSONL file with their line numbers; a line that is not a JSON object is
    skipped and named."""
    for number, line in enumerate(read_source(path, what).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except (json.JSONDecodeError, RecursionError) as exc:
            imported.skip(path, number, f"not JSON ({getattr(exc, 'msg', 'nested too deeply')})")
            continue
        if not isinstance(row, dict):
            imported.skip(path, number, "not a JSON object")
            continue
        yield number, row


def csv_rows(path: str | Path, what: str) -> Iterator[tuple[int, dict[str, str]]]:
    """The rows of a CSV file with a header, each with the line it starts at."""
    text = read_source(path, what)
    if csv.field_size_limit() < MAX_SOURCE_BYTES:
        csv.field_size_limit(MAX_SOURCE_BYTES)  # a long prompt in one cell is data, not an error
    reader = csv.reader(io.StringIO(text, newline=""))
    header: list[str] | None = None
    line = 1
    try:
        for row in reader:
            start, line = line, reader.line_num + 1
            if header is None:
                header = [name.strip() for name in row]
                continue
            if not any(cell.strip() for cell in row):
                continue
            yield start, dict(zip(header, row, strict=False))
    except csv.Error as exc:
        raise UsageError(f"{path}:{line}: not CSV ({exc})") from None


class _CoreSchemaLoader(yaml.SafeLoader):
    """PyYAML's safe loader with YAML 1.2's booleans: `true`/`false` only. The tools whose files
    are imported read YAML 1.2 (promptfoo's js-yaml), where `body: Yes` is the text `Yes`."""


_CoreSchemaLoader.yaml_implicit_resolvers = {
    first: [(tag, pattern) for tag, pattern in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_CoreSchemaLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)


def yaml_document(path: str | Path, what: str) -> object:
    """The YAML document at `path` (YAML 1.2 booleans), checked for nesting, aliases and
    surrogates first."""
    text = read_source(path, what)
    problem = yaml_problem(text, str(path))
    if problem is not None:
        raise problem
    try:
        return yaml.load(text, Loader=_CoreSchemaLoader)  # a safe loader
    except Exception as exc:  # PyYAML's errors name the line: a positioned message for the user
        mark = getattr(exc, "problem_mark", None)
        line, col = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
        raise SpecError(
            f"{what} is not valid YAML: {getattr(exc, 'problem', exc)}", path=str(path), line=line, col=col
        ) from None


def inside_file(reference: str, folder: Path) -> Path | None:
    """The file a `file://` reference (or a relative path) names, when it lies inside `folder`
    (links followed); None for one elsewhere, a glob, or a URL of another kind."""
    name = reference.removeprefix("file://")
    if "://" in name or any(ch in name for ch in "*?["):
        return None
    target = Path(os.path.realpath(folder / name))
    root = Path(os.path.realpath(folder))
    return target if target.is_relative_to(root) and target.is_file() else None


def inside_files(reference: str, folder: Path) -> list[Path]:
    """The files a `file://` reference names inside `folder`: the one file, or, for a glob
    (`file://tests/*.yaml`), each file it matches there, in sorted order; files outside `folder`
    (through `..` or a link) are left out."""
    name = reference.removeprefix("file://")
    if "://" in name or not any(ch in name for ch in "*?["):
        found = inside_file(reference, folder)
        return [found] if found is not None else []
    if Path(name).is_absolute():
        return []
    matches = sorted(str(p.relative_to(folder)) for p in folder.glob(name))
    return [file for match in matches if (file := inside_file(match, folder)) is not None]


def chat_text(value: object) -> str | None:
    """A prompt given as text or as a chat list (`[{"role", "content"}]`) as one text: one user
    message alone is its content; several messages are `role: content` paragraphs. None when the
    value is neither."""
    if isinstance(value, str):
        return value
    if not isinstance(value, list) or not value:
        return None
    parts = []
    for message in value:
        if not isinstance(message, dict):
            return None
        content = message.get("content")
        if not isinstance(content, str):
            return None
        speaker = message.get("name") or message.get("role") or "user"  # few-shot: `example_user`
        parts.append((str(speaker), content))
    if len(parts) == 1 and parts[0][0] == "user":
        return parts[0][1]
    return "\n\n".join(f"{role}: {content}" for role, content in parts)
