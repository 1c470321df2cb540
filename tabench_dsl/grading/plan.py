"""What a grading grades, decided once, before the first answer is read: `GradingPlan`.

A plan is built from a compiled battery, the results file and `PlanOptions` (the slice: questions,
tags, systems, a shard, `limit`; `resume`, `missing_as_fail`, `regrade_changed`). It checks the
slice against the battery (`answer_slice`), reads the results file once for the pairs already done
(`--resume`: the pairs whose standing record is final, less the missing answers an earlier run
recorded, so a late answer to one is graded, and less, with `regrade_changed`, the pairs graded
under another SYSTEM prompt than the battery's now), and then gives the answers to grade of those
read (`answers`): the done pairs taken out as they are read (`resume_skip`), the rest noted for the
account of missing answers (`missing_answers`), the slice and `limit` applied. After the grading,
`finish` records the missing answers (`missing_as_fail`).

`tabench grade`, its dry run and the library's `grade` / `agrade` all follow the plan; the command
line only parses its flags into `PlanOptions`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence, Set
from pathlib import Path

import msgspec

from ..core.compiled import CompiledBattery
from ..core.errors import UsageError
from ..core.records import Answer, Record
from ..store.prompt_changes import changed_pairs
from ..store.results import RecordSink
from ..store.resume_checks import refuse_mixed_resume
from ..store.standing_verdicts import done_pairs
from .answer_counts import count_answers
from .answer_slice import SliceFlags, answer_slice, count_selected
from .answers import AnswerProblem, AnswerReader
from .missing_answers import MissingAnswers
from .resume_skip import ResumeSkip


class PlanOptions(msgspec.Struct, frozen=True):
    """What a grading takes of the answers: the slice (`SliceFlags`: `--question`, `--tag`,
    `--system`, `--shard`, `--limit`), `resume` (the pairs already done in the results file are
    graded no more), `missing_as_fail` (a question of the slice a system did not answer is recorded
    `fail`) and `regrade_changed` (with `resume`: a done pair whose question's prompt changed is
    graded again)."""

    slice: SliceFlags = msgspec.field(default_factory=SliceFlags)
    resume: bool = False
    missing_as_fail: bool = False
    regrade_changed: bool = False


class Regraded(msgspec.Struct, frozen=True):
    """What `regrade_changed` gives back to grading: `answers` done pairs of `questions` questions."""

    answers: int
    questions: int


class GradingPlan:
    """What one grading of `compiled` grades (module docstring), with its records going to `out`
    (None: nowhere, then nothing can be resumed). `keep_index`: whether reading the results file may
    keep its index beside it, and reading the answers a scan of them (a dry run writes nothing)."""

    def __init__(
        self,
        compiled: CompiledBattery,
        out: Path | None,
        options: PlanOptions | None = None,
        *,
        keep_index: bool = True,
    ) -> None:
        options = PlanOptions() if options is None else options
        if out is None and (options.resume or options.regrade_changed):
            raise UsageError("resuming needs the results file the grading appends to (out)")
        self.compiled = compiled
        self.options = options
        self.keep_index = keep_index
        self.chosen = answer_slice(options.slice, compiled.questions, missing_as_fail=options.missing_as_fail)
        if options.resume and out is not None:  # refused before the index is read or written
            refuse_mixed_resume(out, compiled, keep=keep_index)
        self.unanswered = MissingAnswers(
            self.chosen,
            compiled,
            out,
            record=options.missing_as_fail,
            resume=options.resume,
            keep_index=keep_index,
        )
        skip: Set[tuple[str, str]] = set()
        if options.resume and out is not None:
            skip = self.unanswered.skip(done_pairs(out, keep=keep_index))
        #: What `regrade_changed` takes back out of the done pairs (None: not asked for).
        self.regraded: Regraded | None = None
        if options.regrade_changed and out is not None:
            changed = changed_pairs(out, {qid: q.sha256 for qid, q in compiled.questions.items()})
            self.regraded = Regraded(len(changed), len({question for _, question in changed}))
            skip = skip - changed
        #: The pairs graded no more (`resume`).
        self.skip = skip
        self.done = ResumeSkip(skip, self.chosen, self.unanswered.coverage, lambda count: None)

    def selected(
        self,
        paths: str | Path | Sequence[str | Path],
        *,
        system_from: str | None = None,
        question_from: str | None = None,
    ) -> int:
        """How many answers of the answers files `paths` the slice takes (its limit aside): read
        when the slice filters them, so that a `--system` no answer is from, or a `--tag` no
        answered question carries, is an error like an unknown `--question`
        (`answer_slice.count_selected`), else only counted."""
        if not self.chosen.filters:
            return count_answers(list(paths) if not isinstance(paths, str | Path) else paths)
        quiet = AnswerReader(  # reports nothing: the grading's own reader says each bad line once
            paths, self.compiled.questions, system_from=system_from, question_from=question_from
        )
        return count_selected(quiet, self.chosen, self.compiled.questions)

    def expected(self, answers: int) -> int:
        """How many of `answers` answers (an upper bound) the grading takes at most: with a limit,
        the limit and the done pairs, which pass it and count as skipped (a progress total)."""
        limit = self.chosen.limit
        return answers if limit is None else min(answers, limit + len(self.skip))

    def reader(
        self,
        paths: str | Path | Sequence[str | Path],
        *,
        on_problem: Callable[[AnswerProblem], None] | None = None,
        on_warning: Callable[[AnswerProblem], None] | None = None,
        system_from: str | None = None,
        question_from: str | None = None,
    ) -> AnswerReader:
        """The reader of the answers files `paths`, which takes the done pairs out as it reads
        (`resume_skip`: a resumed run pays nothing more for them, `answers_scan`)."""
        done = self.done if self.skip else None
        return AnswerReader(
            paths,
            self.compiled.questions,
            on_problem=on_problem,
            on_warning=on_warning,
            system_from=system_from,
            question_from=question_from,
            done=done,
            keep_scans=done is not None and self.keep_index,
        )

    def answers(
        self, read: Iterable[Answer], *, on_skipped: Callable[[int], None] | None = None
    ) -> Iterator[Answer]:
        """The answers to grade of those `read` (by `reader`, or given as they are: then the done
        pairs are taken out here), in their order; `on_skipped` hears how many were skipped as done,
        always before the next answer to grade."""
        if on_skipped is not None:
            self.done.on_skipped = on_skipped
        if self.skip and not isinstance(read, AnswerReader):
            read = self.done.taken_out(read)
        return self.chosen.select(self.unanswered.watch(self.done.told(read)), self.skip)

    @property
    def skipped(self) -> int:
        """The answers of the slice skipped as done so far."""
        return self.done.count

    def finish(self, writer: RecordSink, on_record: Callable[[Record], None]) -> None:
        """After the grading: find what is missing and, with `missing_as_fail`, write its records."""
        self.unanswered.finish(writer, on_record)
