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

A plan given its `answers` up front can replay a resume over the very inputs of one that graded
nothing (`plan_outcome`): it then reads neither the results file's done pairs nor the answers, and
says what that run said; a resume that grades nothing keeps its outcome for the next.

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
from ..store.results_index import Extent, measure
from ..store.resume_checks import ScanAhead, refuse_mixed_resume
from ..store.standing_verdicts import done_pairs
from .answer_counts import count_answers
from .answer_slice import SliceFlags, answer_slice, count_selected
from .answers import AnswerProblem, AnswerReader
from .missing_answers import MissingAnswers
from .plan_outcome import (
    KeptMissing,
    Outcome,
    ReplayedReader,
    Told,
    keep_outcome,
    load_outcome,
    one_jsonl_file,
    outcome_name,
)
from .resume_skip import ResumeSkip

#: The answers files a plan is given: one path or several.
Paths = str | Path | Sequence[str | Path]


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
    keep its index beside it, and reading the answers a scan of them (a dry run writes nothing).
    `answers`: the answers files `selected` and `reader` will be given, when known up front (a
    resume of them may then replay a kept outcome, `plan_outcome`). `first_read`: what reads the
    results file first, once the resume is not refused and has no kept outcome, before its done
    pairs are read (the command's one read for them and its totals, `cli.grade_resume`).
    `scan_ahead`: the scan of `out` for the rules that graded it, begun before `compiled` was
    (`store.resume_checks.ScanAhead`)."""

    def __init__(
        self,
        compiled: CompiledBattery,
        out: Path | None,
        options: PlanOptions | None = None,
        *,
        keep_index: bool = True,
        answers: Paths | None = None,
        first_read: Callable[[Path], None] | None = None,
        scan_ahead: ScanAhead | None = None,
    ) -> None:
        options = PlanOptions() if options is None else options
        if out is None and (options.resume or options.regrade_changed):
            raise UsageError("resuming needs the results file the grading appends to (out)")
        self.compiled = compiled
        self.options = options
        self.keep_index = keep_index
        self.chosen = answer_slice(options.slice, compiled.questions, missing_as_fail=options.missing_as_fail)
        if options.resume and out is not None:  # refused before the index is read or written
            refuse_mixed_resume(out, compiled, keep=keep_index, ahead=scan_ahead)
        elif scan_ahead is not None:
            scan_ahead.cancel()
        self._keeping = self._kept_outcome(out, answers)
        #: The kept outcome this plan replays (`plan_outcome`), or None.
        self.replayed = None if self._keeping is None else self._keeping.found
        if options.resume and out is not None and self.replayed is None and first_read is not None:
            first_read(out)
        self.unanswered = MissingAnswers(
            self.chosen,
            compiled,
            out,
            record=options.missing_as_fail,
            resume=options.resume,
            keep_index=keep_index,
            replayed=None if self.replayed is None else self.replayed.missing_questions(),
        )
        skip: Set[tuple[str, str]] = set()
        if options.resume and out is not None and self.replayed is None:
            skip = self.unanswered.skip(done_pairs(out, keep=keep_index))
        #: What `regrade_changed` takes back out of the done pairs (None: not asked for).
        self.regraded: Regraded | None = None
        if self.replayed is not None and self.replayed.regraded is not None:
            self.regraded = Regraded(*self.replayed.regraded)
        elif options.regrade_changed and out is not None and self.replayed is None:
            changed = changed_pairs(out, {qid: q.sha256 for qid, q in compiled.questions.items()})
            self.regraded = Regraded(len(changed), len({question for _, question in changed}))
            skip = skip - changed
        #: The pairs graded no more (`resume`).
        self.skip = skip
        self.done = ResumeSkip(skip, self.chosen, self.unanswered.coverage, lambda count: None)

    def _kept_outcome(self, out: Path | None, answers: Paths | None) -> _Keeping | None:
        """The kept outcome of a resume over these inputs and what keeping this one's needs; None
        when there is none to keep (not a resume of one JSONL file into an existing one, or with
        `--limit`)."""
        path = one_jsonl_file(answers)
        if path is None or out is None or not self.options.resume or self.chosen.limit is not None:
            return None
        if not out.is_file():
            return None
        name = outcome_name(self.compiled, self.options, path)
        found = load_outcome(out, name, path)
        return None if found is None else _Keeping(out, name, path, *found)

    def _replays(self, paths: Paths) -> bool:
        return self._keeping is not None and one_jsonl_file(paths) == self._keeping.answers

    def selected(
        self,
        paths: Paths,
        *,
        system_from: str | None = None,
        question_from: str | None = None,
    ) -> int:
        """How many answers of the answers files `paths` the slice takes (its limit aside): read
        when the slice filters them, so that a `--system` no answer is from, or a `--tag` no
        answered question carries, is an error like an unknown `--question`
        (`answer_slice.count_selected`), else only counted."""
        keeping = self._keeping if self._replays(paths) else None
        if keeping is not None and keeping.found is not None and keeping.found.selected is not None:
            return keeping.found.selected
        if not self.chosen.filters:
            found = count_answers(list(paths) if not isinstance(paths, str | Path) else paths)
        else:
            quiet = AnswerReader(  # reports nothing: the grading's own reader says each bad line once
                paths, self.compiled.questions, system_from=system_from, question_from=question_from
            )
            found = count_selected(quiet, self.chosen, self.compiled.questions)
        if keeping is not None:
            keeping.selected = found
        return found

    def expected(self, answers: int) -> int:
        """How many of `answers` answers (an upper bound) the grading takes at most: with a limit,
        the limit and the done pairs, which pass it and count as skipped (a progress total)."""
        limit = self.chosen.limit
        return answers if limit is None else min(answers, limit + len(self.skip))

    def reader(
        self,
        paths: Paths,
        *,
        on_problem: Callable[[AnswerProblem], None] | None = None,
        on_warning: Callable[[AnswerProblem], None] | None = None,
        system_from: str | None = None,
        question_from: str | None = None,
    ) -> AnswerReader:
        """The reader of the answers files `paths`, which takes the done pairs out as it reads
        (`resume_skip`: a resumed run pays nothing more for them, `answers_scan`); a kept
        outcome's replay (`plan_outcome`) when the plan has one for `paths`."""
        keeping = self._keeping if self._replays(paths) else None
        if keeping is not None and keeping.found is not None:
            return ReplayedReader(
                keeping.found, paths, self.compiled.questions, on_problem=on_problem, on_warning=on_warning
            )
        if keeping is not None:  # what the reader reports, heard for the outcome kept after
            on_problem, on_warning = (
                keeping.hearing(on_problem, warning=False),
                keeping.hearing(on_warning, warning=True),
            )
        done = self.done if self.skip else None
        reader = AnswerReader(
            paths,
            self.compiled.questions,
            on_problem=on_problem,
            on_warning=on_warning,
            system_from=system_from,
            question_from=question_from,
            done=done,
            keep_scans=done is not None and self.keep_index,
        )
        if keeping is not None:
            keeping.reader = reader
        return reader

    def answers(
        self, read: Iterable[Answer], *, on_skipped: Callable[[int], None] | None = None
    ) -> Iterator[Answer]:
        """The answers to grade of those `read` (by `reader`, or given as they are: then the done
        pairs are taken out here), in their order; `on_skipped` hears how many were skipped as done,
        always before the next answer to grade."""
        if on_skipped is not None:
            self.done.on_skipped = on_skipped
        if isinstance(read, ReplayedReader):
            return self._replay(read)
        if self.skip and not isinstance(read, AnswerReader):
            read = self.done.taken_out(read)
        chosen = self.chosen.select(self.unanswered.watch(self.done.told(read)), self.skip)
        keeping = self._keeping
        return chosen if keeping is None or keeping.reader is not read else keeping.watch(chosen)

    def _replay(self, read: ReplayedReader) -> Iterator[Answer]:
        """No answer: the reader's reports, then the skipped answers told in one go."""
        yield from read
        self.done.count = read.outcome.skipped
        if read.outcome.skipped:
            self.done.on_skipped(read.outcome.skipped)

    @property
    def skipped(self) -> int:
        """The answers of the slice skipped as done so far."""
        return self.done.count

    def finish(self, writer: RecordSink, on_record: Callable[[Record], None]) -> None:
        """After the grading: find what is missing and, with `missing_as_fail`, write its records;
        then keep the outcome of a resume that graded nothing (`plan_outcome`)."""
        self.unanswered.finish(writer, on_record)
        keeping = self._keeping
        if keeping is None or keeping.found is not None or not self.keep_index:
            return
        if keeping.reader is None or not keeping.read_all or keeping.graded:
            return
        read_from = keeping.answers_before
        if read_from is None or measure(keeping.answers) != read_from:
            return  # written to while it was read
        regraded = None if self.regraded is None else (self.regraded.answers, self.regraded.questions)
        outcome = Outcome(
            read_from,
            keeping.reader.count,
            keeping.selected,
            self.done.count,
            keeping.told,
            {system: KeptMissing.of(left) for system, left in self.unanswered.by_system.items()},
            regraded,
        )
        keep_outcome(keeping.out, keeping.name, keeping.before, outcome)


class _Keeping:
    """A plan's kept outcome (`found`, None when there is none), and what keeping its own needs:
    the results file `out` and its extent `before` the run, the outcome's `name`, the `answers`
    file and its extent before it was read, what its reader reported (`told`), the progress total
    (`selected`), and whether every answer was read (`read_all`) and any was graded (`graded`)."""

    def __init__(self, out: Path, name: str, answers: str, before: Extent, found: Outcome | None) -> None:
        self.out, self.name, self.answers, self.before, self.found = out, name, answers, before, found
        self.answers_before = measure(answers)
        self.told: list[Told] = []
        self.selected: int | None = None
        self.reader: AnswerReader | None = None
        self.read_all = False
        self.graded = False

    def hearing(
        self, then: Callable[[AnswerProblem], None] | None, *, warning: bool
    ) -> Callable[[AnswerProblem], None]:
        """`then`, with each problem (or warning) it hears noted for the outcome first."""

        def heard(problem: AnswerProblem) -> None:
            self.told.append(Told(warning, problem.line, problem.message, problem.col))
            if then is not None:
                then(problem)

        return heard

    def watch(self, answers: Iterator[Answer]) -> Iterator[Answer]:
        for answer in answers:
            self.graded = True
            yield answer
        self.read_all = True
