"""A resume that found nothing to grade, kept so that the same resume again reads nothing.

`grade --resume` run again over the very inputs of a run that graded nothing (the same results
file, byte for byte, the same answers file, battery and options) finds nothing to grade again, and
says the same: how many answers the file holds, how many were skipped as done, its bad lines and
warnings, each system's missing questions. Working that out means the done pairs of the whole
results file and every answer's pair (seconds at ten million records); what it came to is small.
So a plan that read one JSONL answers file to its end, graded nothing and wrote nothing keeps its
`Outcome` in the results index (`store.results_index`), and the next plan over the same inputs
replays it (`ReplayedReader`) instead of reading either file.

The rules are the index's: the outcome is bound to the exact bytes of the results file
(`load_at` its `Extent` as measured now: a file appended to, cut or rewritten since is another
file), signed, and named (`outcome_name`) by everything else it was worked out from: the answers
file's own `Extent` (its size, inode, modification time and hashes of its bytes, checked as the
results file's are) and real path, the battery's name, scorer, T1 rule and question ids (with their
prompts' hashes for `regrade_changed`, their tags for a `--tag` slice), the plan's options and the
code's identity. Anything else (no index, another file, a damaged value) plans as ever. Deleting
the index loses nothing but the time.

Decided: only a resume of one JSONL answers file without `--limit` keeps or replays an outcome
(what `answers_scan` keeps a scan for; `--limit` stops reading part-way, so its count is not the
file's); an outcome is kept only when the run wrote nothing to the results file, so the file it is
bound to is the one the next run finds.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

import msgspec

from ..core.evals_output_items import is_output_items
from ..core.version import __version__
from ..store.results_index import Extent, measure, open_index
from .answers import AnswerProblem, AnswerReader
from .answers_csv import is_csv
from .answers_scan import scannable
from .inspect_log import is_inspect_log
from .missing import NAMED
from .promptfoo_results import is_promptfoo_results

if TYPE_CHECKING:
    from ..core.compiled import CompiledBattery
    from ..core.records import Answer

#: The index's name for this value, before its inputs' hash (one outcome is kept at a time).
KIND = "resume-outcome"
#: Bumped when what an outcome holds or means changes.
OUTCOME_VERSION = 2


class Told(msgspec.Struct, array_like=True, frozen=True):
    """A bad line (or, `warning`, an ignored key) the reader reported, in the order it did."""

    warning: bool
    line: int
    message: str
    col: int | None = None


class KeptMissing(msgspec.Struct, array_like=True, frozen=True):
    """One system's missing questions as an outcome keeps them: how many (`count`), the first
    `NAMED` (what `grade` names on stderr) and every one (`every`, their msgpack list), decoded
    only when asked for (`grade --json`): at ten million records, a million names."""

    count: int
    head: list[str]
    every: msgspec.Raw

    @classmethod
    def of(cls, questions: Sequence[str]) -> KeptMissing:
        every = msgspec.Raw(msgspec.msgpack.encode(list(questions)))
        return cls(len(questions), list(questions[:NAMED]), every)


class MissingQuestions(Sequence[str]):
    """A system's missing questions read back from a `KeptMissing`: its length and first `NAMED`
    as kept, the rest decoded the first time anything beyond them is asked for."""

    def __init__(self, kept: KeptMissing) -> None:
        self._kept = kept
        self._every: list[str] | None = None

    def _all(self) -> list[str]:
        if self._every is None:
            self._every = msgspec.msgpack.decode(self._kept.every, type=list[str])
        return self._every

    def __len__(self) -> int:
        return self._kept.count

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    @overload
    def __getitem__(self, at: int) -> str: ...

    @overload
    def __getitem__(self, at: slice) -> list[str]: ...

    def __getitem__(self, at: int | slice) -> str | list[str]:
        head = self._kept.head
        if isinstance(at, slice) and (len(head) == self._kept.count or _within(at, len(head))):
            return head[at]  # the names kept apart: none decoded
        return self._all()[at]


def _within(at: slice, size: int) -> bool:
    """Whether slice `at` of a list takes only from its first `size` items (its start side)."""
    return at.step is None and (at.start or 0) >= 0 and at.stop is not None and 0 <= at.stop <= size


class Outcome(msgspec.Struct, array_like=True, frozen=True):
    """What a resume that graded nothing found: the answers file it read (`answers`, its extent),
    how many good answers it held (`count`), how many of them the slice takes (`selected`, the
    progress total; None when it was not counted), how many it skipped as done (`skipped`), what
    the reader reported (`told`), each system's questions of the slice it has no answer to
    (`missing`, `KeptMissing`), and what `regrade_changed` took back (`regraded`: answers,
    questions; None when not asked for)."""

    answers: Extent
    count: int
    selected: int | None
    skipped: int
    told: list[Told]
    missing: dict[str, KeptMissing]
    regraded: tuple[int, int] | None = None

    def missing_questions(self) -> dict[str, Sequence[str]]:
        """Each system's missing questions, as `MissingAnswers` gives them."""
        return {system: MissingQuestions(kept) for system, kept in self.missing.items()}


def one_jsonl_file(paths: object) -> str | None:
    """The one JSONL answers file `paths` names (a path, or a list of one), or None: what an
    outcome is kept for."""
    if isinstance(paths, list | tuple) and len(paths) == 1:
        paths = paths[0]
    if not isinstance(paths, str | Path):
        return None
    path = str(paths)
    if not scannable(path):
        return None
    if is_csv(path) or is_inspect_log(path) or is_promptfoo_results(path) or is_output_items(path):
        return None
    return path


def outcome_name(compiled: CompiledBattery, options: msgspec.Struct, answers: str, *extra: object) -> str:
    """The index's name for the outcome of `compiled` graded with plan `options` from the answers
    file `answers` (module docstring): a hash of every input but the files' bytes."""
    questions = compiled.questions
    ids = list(questions)
    named: list[object] = [OUTCOME_VERSION, __version__, _code(), os.path.realpath(answers)]
    named += [compiled.name, compiled.scorer, compiled.t1, compiled.t1_rule, ids, *extra]
    named.append(msgspec.json.encode(options).decode())
    if getattr(options, "regrade_changed", False):
        named.append([questions[qid].sha256 for qid in ids])
    if getattr(getattr(options, "slice", None), "tags", None):
        named.append([list(questions[qid].tags) for qid in ids])
    return f"{KIND}:" + hashlib.sha256(msgspec.json.encode(named)).hexdigest()


def load_outcome(out: Path, name: str, answers: str) -> tuple[Extent, Outcome | None] | None:
    """The results file's extent now and the outcome kept under `name` for it, when the answers
    file is the one it was worked out from (else None in its place); None when `out` cannot be
    measured or has no index (then nothing is kept either)."""
    now = measure(out)
    index = open_index(out)
    if now is None or index is None:
        return None
    body = index.load_at(name, now)
    if body is None:
        return now, None
    try:
        outcome = msgspec.msgpack.decode(body, type=Outcome)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return now, None
    return now, (outcome if measure(answers) == outcome.answers else None)


def keep_outcome(out: Path, name: str, before: Extent, outcome: Outcome) -> None:
    """Keep `outcome` for `out` when the file is still as it was measured `before` the run (the
    run wrote nothing to it), and the answers file as it was read (best effort, as the index)."""
    index = open_index(out)
    if index is not None and measure(out) == before:
        index.store(name, before, msgspec.msgpack.encode(outcome))


class ReplayedReader(AnswerReader):
    """The reader of an answers file whose `Outcome` is kept: it reports what the outcome says the
    file's reading reported, counts its good answers, and yields none (every one is done)."""

    def __init__(self, outcome: Outcome, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.outcome = outcome

    def __iter__(self) -> Iterator[Answer]:
        for told in self.outcome.told:
            if told.warning:
                if self.on_warning is not None:
                    self.on_warning(AnswerProblem(self.path, told.line, told.message))
                continue
            self.problems += 1
            if self.on_problem is not None:
                self.on_problem(AnswerProblem(self.path, told.line, told.message, told.col))
        self.count = self.outcome.count
        return iter(())


def _code() -> list[str]:
    """What identifies the planning code beside tabench's version: the modules whose rules an
    outcome follows (size and time: a source checkout changes without a new version)."""
    package = Path(__file__).resolve().parents[1]
    parts = []
    for module in (
        "grading/plan.py",
        "grading/plan_outcome.py",
        "grading/answers.py",
        "grading/answer_slice.py",
        "grading/missing.py",
        "grading/missing_answers.py",
        "grading/resume_skip.py",
        "store/standing_verdicts.py",
        "store/prompt_changes.py",
        "core/jsonl.py",
        "core/records.py",
    ):
        info = (package / module).stat()
        parts.append(f"{module}:{info.st_size}:{info.st_mtime_ns}")
    return parts
