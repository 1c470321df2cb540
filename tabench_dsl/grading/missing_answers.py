"""`grade`'s account of unanswered questions: which it names, which `--missing-as-fail` records.

The grading itself never learns what is missing (it sees answers, not their absence); `grade` wraps
the answers it reads in a `Coverage` (grading/missing.py), and after the run names, per system, the
questions of the slice it has no answer to, writing their `fail` records when asked.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence, Set
from datetime import UTC, datetime
from pathlib import Path

from ..core.compiled import CompiledBattery
from ..core.display import shown
from ..core.records import Answer, Record
from ..store.results import RecordSink
from .answer_slice import AnswerSlice
from .missing import Coverage, missing_line, missing_records, recorded_missing

#: Systems named one a line on stderr; `grade --json` lists every one.
MAX_SYSTEM_LINES = 20


class MissingAnswers:
    """The coverage of one `grade` run and the missing records an earlier run of it wrote."""

    def __init__(
        self,
        chosen: AnswerSlice,
        compiled: CompiledBattery,
        out: Path | None,
        *,
        record: bool,
        resume: bool,
        keep_index: bool = True,
        replayed: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        """`record`: `--missing-as-fail`; `resume`: `--resume` (an earlier run's missing records, read
        through the results' index, which is kept only with `keep_index`). `replayed`: what is
        missing, as a run over the same inputs found it (`plan_outcome`): nothing is read then, and
        nothing written (that run wrote nothing, so every missing record was there already)."""
        questions = compiled.questions
        if chosen.questions is None and chosen.tagged is None:  # every question: no test of each
            self.questions = list(questions)
        else:
            self.questions = [qid for qid in questions if chosen.wants_question(qid)]
        #: None with `--limit`: the file is not read to its end, so nothing can be called missing;
        #: None when `replayed`: no answer is read.
        systems = set(chosen.systems) if chosen.systems is not None else None
        watched = chosen.limit is None and replayed is None
        self.coverage = Coverage(self.questions, systems) if watched else None
        self.record = record
        self.compiled = compiled
        #: Pairs whose standing record is a missing answer's (`--resume`): never written twice,
        #: and an answer given for one since is graded over it.
        self.replayed = replayed
        reads = resume and out is not None and replayed is None
        self.already = recorded_missing(out, keep=keep_index) if reads and out is not None else set()
        self.by_system: Mapping[str, Sequence[str]] = {}
        self.written = 0

    def skip(self, done: Set[tuple[str, str]]) -> Set[tuple[str, str]]:
        """`--resume`'s done pairs without the missing ones, so a late answer to one is graded."""
        return done - self.already if self.already else done

    def watch(self, answers: Iterable[Answer]) -> Iterable[Answer]:
        """The answers read, noted before the slice options filter them."""
        return answers if self.coverage is None else self.coverage.watch(answers)

    def finish(self, writer: RecordSink, on_record: Callable[[Record], None]) -> None:
        """After the grading: find what is missing and, with `--missing-as-fail`, write its records
        (each passed to `on_record`, as a graded one is)."""
        if self.replayed is not None:
            self.by_system = self.replayed
            return
        if self.coverage is None:
            return
        self.by_system = self.coverage.missing()
        if not self.record:
            return
        time = datetime.now(UTC).isoformat(timespec="seconds")  # as the grader stamps its records
        compiled = self.compiled
        records = missing_records(
            self.by_system, compiled.questions, battery=compiled.name, time=time, already=self.already
        )
        for record in records:
            writer.write(record)
            self.written += 1
            on_record(record)

    def lines(self) -> list[str]:
        """One line per system with questions missing (the first `MAX_SYSTEM_LINES`), for stderr,
        names shown safely."""
        of = len(self.questions)
        lines = [
            shown(missing_line(system, left, of, recorded=self.record), lines=True)
            for system, left in list(self.by_system.items())[:MAX_SYSTEM_LINES]
        ]
        more = len(self.by_system) - MAX_SYSTEM_LINES
        if more > 0:
            lines.append(f"... and {more} more system(s) with questions missing (grade --json lists them)")
        return lines

    def as_json(self) -> dict:
        """The `"run"` entries of `grade --json`: each system's missing questions and how many
        missing records this run wrote."""
        missing = {system: list(left) for system, left in self.by_system.items()}
        return {"missing": missing, "missing_recorded": self.written}
