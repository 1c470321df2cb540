"""The static report: one self-contained HTML page of a run, to share or keep as a CI artifact.

Same totals and charts as the viewer, then the answers themselves, the ones that need a reader
first (adjudicate, error, fail, then pass). The page is review/templates/report.html.j2, rendered in
the review pages' sandboxed, autoescaping environment (`templating`): every piece of text from the
results or the battery is shown as text (`display.shown`: a bidi override or a control character is
seen as an escape instead of acting) and escaped. CSS and SVG are inline and nothing is fetched; a
few lines of inline script add filters, and the page reads the same without them. Its
Content-Security-Policy allows that style and that script by the hashes `templating.Inline` computes
from the very text inlined. A very large run is cut to `max_answers` answers, and the page says so.

Every report carries `REPORT_MARKER` in its head: `report --html` overwrites an existing file only
when it finds the marker there (`is_report_file`), so it never writes over a file it did not write.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Callable
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

import msgspec

from ..core.compiled import CompiledQuestion
from ..core.records import CAUSE_TEXTS, Attempt, PanelVote, Record
from ..core.safe_open import open_for_rewrite
from ..store.light_records import LightRecord
from .diff import Diff, diff_records, summary_lines
from .templating import Inline, inline, markup, render
from .totals import Totals, compute_totals
from .totals_tables import judge_caption, kappa_text, usage_caption
from .viewer.charts import COLOURS, lay_out, outcome_chart
from .viewer.run import Run, prompts_for

#: Answers shown in full by default; the rest are counted, not shown.
MAX_ANSWERS = 1000
#: Rows of the per-question table shown at most.
MAX_QUESTION_ROWS = 500
#: Flipped verdicts listed at most when a second grading is compared (`--compare`).
MAX_FLIPS = 500
#: Written in the head of every report, right after the charset: how tabench knows a page is its own.
REPORT_MARKER = '<meta name="generator" content="tabench report">'
#: How far into a file `is_report_file` looks for the marker.
_MARKER_WITHIN = 1024
#: Bad lines of the results file listed one by one; the rest are counted.
_MAX_PROBLEMS = 20
_ORDER = {"adjudicate": 0, "error": 1, "fail": 2, "pass": 3}


def is_report_file(path: str | Path) -> bool:
    """True when `path` is an HTML report tabench wrote (its head carries `REPORT_MARKER`)."""
    try:
        with open(path, "rb") as f:
            head = f.read(_MARKER_WITHIN)
    except OSError:
        return False
    return head.lower().startswith(b"<!doctype html>") and REPORT_MARKER.encode() in head


class _Vote(msgspec.Struct, frozen=True):
    """One panel judge's vote as the page shows it: the judge's name, outcome, reason, attempts."""

    judge: str
    verdict: str
    cause: str
    reason: str
    attempts: list[tuple[str, str]]


class _Answer(msgspec.Struct, frozen=True):
    """One answer as the page shows it: the record and what is looked up or worded for it first.

    `attempts` pairs each judge attempt's one-line heading with its raw reply. `linked` says the
    page carries the answer's SYSTEM prompt (a battery was given and has the question); `drift`
    explains why that prompt may differ from the one the judge saw.
    """

    record: Record
    cause_text: str
    facets: str
    attempts: list[tuple[str, str]]
    linked: bool
    drift: str | None
    #: With a judge panel, each judge's vote; with a T1 audit, the judge's verdict ("" when none).
    votes: list[_Vote] = []
    audit: str = ""
    audit_line: str = ""
    #: What was cut from the answer before grading, worded ("" when nothing was): the page shows
    #: the final answer graded.
    reasoning: str = ""


def _votes(votes: list[PanelVote]) -> list[_Vote]:
    return [
        _Vote(
            vote.judge.describe(), vote.verdict, vote.cause or "", vote.reason, _attempt_rows(vote.attempts)
        )
        for vote in votes
    ]


def _attempt_rows(attempts: list[Attempt]) -> list[tuple[str, str]]:
    return [
        (_attempt_heading(i, a), "(no reply)" if a.raw is None else a.raw)
        for i, a in enumerate(attempts, start=1)
    ]


def _answer(record: Record, run: Run) -> _Answer:
    prompts = prompts_for(record, run.compiled)
    audit = record.audited
    return _Answer(
        record=record,
        cause_text=CAUSE_TEXTS.get(record.cause, "") if record.cause else "",
        facets=", ".join(name for name, seen in record.facets.items() if seen),
        attempts=_attempt_rows(record.attempts),
        linked=prompts.system is not None,
        drift=prompts.drift if run.compiled is not None else None,
        votes=_votes(record.votes),
        audit="" if audit is None else audit.verdict,
        audit_line=""
        if audit is None
        else f"T1 audit: {audit.judge.describe()} says {audit.verdict}: {audit.reason or '(no reason)'}",
        reasoning="" if record.reasoning_cut is None else record.reasoning_cut.describe(),
    )


def _attempt_heading(number: int, attempt: Attempt) -> str:
    """`2. stern · 360 ms · 853 tokens · cache hit`: what one judge attempt cost and how it ended.

    Worded here rather than in the template: a report of 20,000 answers prints a heading for each
    attempt, and one value prints much faster than six.
    """
    bits = [f"{number}. {attempt.kind}", f"{attempt.latency_ms:.0f} ms", f"{attempt.tokens.total:,} tokens"]
    if attempt.cache_hit:
        bits.append("cache hit")
    if attempt.transport_retries:
        bits.append(f"{attempt.transport_retries} transport retries")
    if attempt.error:
        bits.append(f"error: {attempt.error}")
    return " · ".join(bits)


def _reading_order(record: Record) -> tuple[int, str, str]:
    verdict = record.decision.verdict if record.decision else record.verdict
    return (_ORDER.get(verdict, 9), record.system, record.question)


def _as_is(record: Record) -> Record:
    return record


class FairCut:
    """The records `listed_answers` chooses, chosen as they come, in any order (`add` each
    standing record once): `limit` records in reading order, chosen verdict by verdict and
    round-robin over the systems, so a cut report shows every system's undecided and failed answers,
    not the first system's only.

    Each (verdict, system) queue keeps the `limit` first of its records in question order, which is
    all the choice ever takes from it: never more than `limit` records a queue, whatever the number
    of records added (a limit below 1 keeps every record, as it lists every answer). Each is kept
    with the place it was given (`add`'s `at`: a streamed read gives its line's offset, so that
    the page reads whole only the lines it shows, `chosen_at`)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.count = 0
        self.queues: dict[tuple[int, str], list[tuple[Record, int]]] = {}

    def add(self, record: Record | LightRecord, at: int = -1, make: Callable[[Any], Record] = _as_is) -> None:
        """Add one standing record (or a light one, and `make`, which makes the `Record` to keep
        of it, called only for a record kept: at a million records most are not)."""
        self.count += 1
        decision = record.decision  # `_reading_order`'s first two, without a call: a million come
        verdict = record.verdict if decision is None else decision.verdict
        queue = self.queues.setdefault((_ORDER.get(verdict, 9), record.system), [])
        if len(queue) < self.limit or self.limit < 1:
            held = (make(record), at)
            if queue and record.question < queue[-1][0].question:
                bisect.insort(queue, held, key=_question)
            else:
                queue.append(held)  # the usual case: a system's records come in question order
        elif record.question < queue[-1][0].question:
            bisect.insort(queue, (make(record), at), key=_question)
            queue.pop()

    def merge(self, other: FairCut) -> None:
        """Add what `other` took (of other pairs): what a cut keeps does not depend on the order
        its records come in."""
        kept = [held for queue in other.queues.values() for held in queue]
        self.count += other.count - len(kept)
        for record, at in kept:
            self.add(record, at)

    def trim(self) -> None:
        """Drop what no merge can make chosen: a range's cut sent to be merged with others' holds
        a thousand records, not a thousand a queue. The choice takes the ranks one after another
        and each rank's queues a round at a time, so a record is chosen only when fewer than
        `limit` come before it; a merge never takes away a record that comes before one here (it
        adds records to the ranks before, to its queue before it, and queues to its round), so one
        with `limit` records before it here is never chosen, however merged, and what a merge of
        trimmed cuts chooses is what the untrimmed ones' would (`count` is kept whole: it says
        whether every record is chosen)."""
        if self.limit < 1:
            return
        before = 0  # the records of the ranks before
        for rank in sorted({key[0] for key in self.queues}):
            keys = sorted(key for key in self.queues if key[0] == rank)  # a round's order
            queues = [self.queues[key] for key in keys]
            wanted = self.limit - before
            depth = _depth([len(queue) for queue in queues], wanted)
            if depth is not None:  # rounds up to `depth` take `wanted`: the rest is never chosen
                taken = sum(min(len(queue), depth - 1) for queue in queues) if depth else wanted
                for queue in queues:  # the last round: its first `wanted - taken` records
                    in_last_round = len(queue) >= depth > 0 and taken < wanted
                    taken += in_last_round
                    del queue[depth if in_last_round else max(depth - 1, 0) :]
            before += sum(map(len, queues))
        self.queues = {key: queue for key, queue in self.queues.items() if queue}

    def chosen(self) -> list[Record]:
        """The records chosen, in reading order."""
        return [record for record, _ in self.chosen_at()]

    def chosen_at(self) -> list[tuple[Record, int]]:
        """The records chosen, in reading order, each with the place `add` was given."""
        if self.count <= self.limit or self.limit < 1:
            return sorted((held for queue in self.queues.values() for held in queue), key=_held_order)
        chosen: list[tuple[Record, int]] = []
        for rank in sorted({key[0] for key in self.queues}):
            queues = [self.queues[key] for key in sorted(self.queues) if key[0] == rank]
            for i in range(max(len(q) for q in queues)):
                for queue in queues:
                    if i < len(queue):
                        chosen.append(queue[i])
                        if len(chosen) == self.limit:
                            return sorted(chosen, key=_held_order)
        return sorted(chosen, key=_held_order)


def _depth(lengths: list[int], wanted: int) -> int | None:
    """The fewest rounds over queues of these `lengths` (a record from each queue still holding
    one) that take `wanted` records; None when all of them together hold fewer."""
    if wanted <= 0:
        return 0
    taken = 0
    for depth in range(1, max(lengths, default=0) + 1):
        taken += sum(1 for length in lengths if length >= depth)
        if taken >= wanted:
            return depth
    return None


def _question(held: tuple[Record, int]) -> str:
    return held[0].question


def _held_order(held: tuple[Record, int]) -> tuple[int, str, str]:
    return _reading_order(held[0])


def listed_answers(records: list[Record], max_answers: int = MAX_ANSWERS) -> list[Record]:
    """The records whose answers the page shows in full, in the page's order: all of them, or
    `max_answers` taken fairly (`FairCut`) when there are more."""
    cut = FairCut(max_answers)
    for record in records:
        cut.add(record)
    return cut.chosen()


def render_report(
    run: Run,
    *,
    max_answers: int = MAX_ANSWERS,
    now: datetime | None = None,
    compare: Run | None = None,
    listed: list[Record] | None = None,
    totals: Totals | None = None,
) -> str:
    """The whole report page for `run` as HTML text; `compare`, a second grading of the same
    answers, adds a section of what changed (`diff.diff_records`) and its verdict beside each answer.

    `listed` is `listed_answers(run.records, max_answers)` when the caller has it, records read
    whole where `run.records` were read without their texts (`report_run`); `totals` is
    `compute_totals` of the run's standing records, when they streamed by and `run.records` holds
    none of them (`report_run`)."""
    answer_count = len(run.records) if totals is None else totals.records
    if totals is None:
        totals = compute_totals(run.records, price=run.price)
    diff = None if compare is None else _diff(run, compare)
    if listed is None:
        listed = listed_answers(run.records, max_answers)
    compiled = run.compiled
    style, script = _assets()
    return render(
        "report.html.j2",
        marker=markup(REPORT_MARKER),
        policy=f"default-src 'none'; img-src data:; style-src {style.source}; script-src {script.source}",
        style=style,
        script=script,
        results_name=run.results_path.name,
        results_path=str(run.results_path),
        totals=totals,
        kappa=kappa_text,
        judge=judge_caption(totals),
        usage=usage_caption(totals),
        stamp=(now or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC"),
        problems=run.problems[:_MAX_PROBLEMS],
        more_problems=max(len(run.problems) - _MAX_PROBLEMS, 0),
        stale=run.stale,
        charts=[
            lay_out(outcome_chart(totals.systems, title="Outcomes per system", kind="system")),
            lay_out(outcome_chart(totals.questions, title="Outcomes per question", kind="question")),
        ],
        question_rows=totals.questions[:MAX_QUESTION_ROWS],
        answer_count=answer_count,
        listed_count=len(listed),
        verdict_order=list(_ORDER),
        # Built one at a time as the page is written, not all first: 20,000 views alive at once
        # would keep the garbage collector busy for longer than the page takes to write.
        answers=(_answer(r, run) for r in listed),
        battery=compiled,
        user_prompt="" if compiled is None else compiled.user.fill("{answer}"),
        prompts=_prompts(run, listed),
        diff=diff,
        diff_lines=[] if diff is None else summary_lines(diff),
        max_flips=MAX_FLIPS,
        other=None if compare is None else {r.key: r for r in compare.records},
        other_name="" if compare is None else compare.results_path.name,
    )


def _diff(run: Run, compare: Run) -> Diff:
    return diff_records(
        run.records, compare.records, a_name=str(run.results_path), b_name=str(compare.results_path)
    )


@cache
def _assets() -> tuple[Inline, Inline]:
    """The report's own style sheet and script: the same in every report, so rendered once."""
    return inline("report.css.j2", colours=COLOURS), inline("report.js")


def _prompts(run: Run, listed: list[Record]) -> list[CompiledQuestion]:
    """The battery's questions the listed answers were asked, each once, by id (none without one)."""
    if run.compiled is None:
        return []
    questions = run.compiled.questions
    return [questions[qid] for qid in sorted({r.question for r in listed}) if qid in questions]


def write_report(
    run: Run, out_path: str, *, max_answers: int = MAX_ANSWERS, compare: Run | None = None
) -> int:
    """Write the report to `out_path`; return how many answers it shows in full."""
    html = render_report(run, max_answers=max_answers, compare=compare)
    with os.fdopen(open_for_rewrite(out_path), "w", encoding="utf-8") as f:  # never through a link
        f.write(html)
    return min(len(run.records), max_answers)
