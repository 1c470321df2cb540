"""Totals: the only place that adds anything up (docs/results.md, "Verdicts and totals").

The judge never returns a total; the tool counts from the records. Where a (system, question) pair
has several records, the last stands. A record carrying a human `decision` counts as that verdict
(and as a human one). Score = pass / (pass + fail + adjudicate): an `error` is not counted, since
no usable judge reply was had and a resume grades it again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import msgspec

from ..core.price import Price
from ..core.records import Attempt, JudgeInfo, Record
from ..store.light_records import LightRecord
from .agreement import PanelAgreement, T1Audit, panel_agreement, t1_audit
from .audit import AuditAgreement, audit_agreements
from .call_counts import SHARED_KEPT, SharedCalls, count_calls
from .compare import Comparisons, compare_graded
from .costs import Spend, TokenCounts, judged_attempts
from .error_range import ErrorRange, error_range
from .graded_bits import GradedBits
from .outcomes import add_counts, count_outcome, latest, outcome, score_interval, score_of
from .reviewers import Reviewers, reviewer_agreement
from .served import ServedCounter, ServedModel
from .slices import TagCounter, TagTotals
from .stability import Stability, stability
from .validated import ValidatedScore, validated_scores


class SystemTotals(msgspec.Struct):
    """Counts for one answering system."""

    system: str
    answers: int = 0
    passed: int = msgspec.field(default=0, name="pass")
    fail: int = 0
    adjudicate: int = 0
    error: int = 0
    human_pass: int = 0
    human_fail: int = 0
    score: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    t1_passes: int = 0
    #: Answers a question's `match` check decided, pass or fail, without a judge call.
    match_decided: int = 0
    judge_calls: int = 0
    cache_hits: int = 0
    stern_retries: int = 0
    format_retries: int = 0
    #: The judge calls' tokens (`costs.TokenCounts`); `cost_usd` None when no price is known.
    tokens: TokenCounts = msgspec.field(default_factory=TokenCounts)
    cost_usd: float | None = None
    injection_suspects: int = 0
    facets: dict[str, int] = msgspec.field(default_factory=dict)
    #: The judge against people's blind audits (`audit`) and the score they validate (`validated`);
    #: UNSET, absent from the JSON, until audits exist.
    audit: AuditAgreement | msgspec.UnsetType = msgspec.UNSET
    validated_score: ValidatedScore | msgspec.UnsetType = msgspec.UNSET
    #: The score if every error were a fail or a pass (`error_range`); UNSET without errors.
    if_errors: ErrorRange | msgspec.UnsetType = msgspec.UNSET


class QuestionTotals(msgspec.Struct):
    """Counts for one question across systems."""

    question: str
    answers: int = 0
    passed: int = msgspec.field(default=0, name="pass")
    fail: int = 0
    adjudicate: int = 0
    error: int = 0
    score: float | None = None


class Usage(msgspec.Struct):
    """The judge calls of the whole file (`"all"` in JSON): how many, their tokens and their cost
    (None while `unpriced_calls` of them have no price; `costs`)."""

    judge_calls: int = 0
    tokens: TokenCounts = msgspec.field(default_factory=TokenCounts)
    cost_usd: float | None = None
    unpriced_calls: int = 0
    audit: AuditAgreement | msgspec.UnsetType = msgspec.UNSET
    validated_score: ValidatedScore | msgspec.UnsetType = msgspec.UNSET


class Totals(msgspec.Struct):
    """Everything a totals table shows; `records` counts the pairs, after the last-stands rule.

    `comparisons` holds every pair of systems compared (`compare.compare_systems`); `tags` the
    scores per rubric tag (`slices.tag_totals`), empty when no record carries a tag."""

    systems: list[SystemTotals]
    questions: list[QuestionTotals]
    facets: dict[str, int]
    judges: list[JudgeInfo]
    records: int = 0
    usage: Usage = msgspec.field(default_factory=Usage, name="all")
    #: Each panel judge's pass rate and their agreement, when a judge panel graded (`agreement`).
    panel: PanelAgreement | None = None
    #: T1's precision against the judge, when `--t1-audit` sent T1 passes to it (`agreement`).
    t1_audit: T1Audit | None = None
    comparisons: Comparisons = msgspec.field(default_factory=Comparisons)
    tags: list[TagTotals] = msgspec.field(default_factory=list)
    #: The models that answered the judge calls, as their replies named them (`served`).
    served: list[ServedModel] = msgspec.field(default_factory=list)
    #: The judge's flip rate over answers asked more than once (`--repeat`, `stability`).
    stability: Stability | msgspec.UnsetType = msgspec.UNSET
    #: People against each other and the judge against each of them, when two or more reviewers
    #: audited (`reviewers`); UNSET, absent from the JSON, otherwise.
    reviewers: Reviewers | msgspec.UnsetType = msgspec.UNSET


def compute_totals(records: Iterable[Record], *, price: Price | None = None) -> Totals:
    """Count the standing records per system, per question, per facet and per judge. `price` (the
    reader's `--price`) prices every billed judge call over the price its record carries."""
    standing = latest(records)
    return count_standing(standing.values, price=price)


def count_standing(standing: Callable[[], Iterable[Record]], *, price: Price | None = None) -> Totals:
    """The totals of the standing records `standing()` gives (the last record of each pair, in the
    order `outcomes.latest` keeps them, decisions applied), counted one at a time as they come.

    `standing` is called again only for what a record of the file has (a panel, an audit, repeats:
    rare, and counted by functions that read the records whole), so a caller that streams them from
    a file (`streamed_totals`) holds one record at a time, not all of them: the counts of a row, a
    facet, a tag, a served model and a judge, and one bit per pair for the comparisons
    (`StandingCounter`)."""
    counter = StandingCounter(price)
    for record in standing():
        counter.add(record)
    return counter.totals(standing)


#: The counts of a system's row beyond its outcomes (`outcomes.add_counts`), added by a merge.
_SYSTEM_COUNTS = (
    *("human_pass", "human_fail", "t1_passes", "match_decided", "judge_calls", "cache_hits"),
    *("stern_retries", "format_retries", "injection_suspects"),
)


class StandingCounter:
    """What the standing records add up to, taken one record at a time (`add`); `totals` finishes
    the count. The state held is per system, question, facet and judge, and a bit per pair."""

    def __init__(self, price: Price | None) -> None:
        self.price = price
        self.systems: dict[str, SystemTotals] = {}
        self.spends: dict[str, Spend] = {}
        self.questions: dict[str, QuestionTotals] = {}
        self.facets: dict[str, int] = {}
        self.judges: dict[tuple[str, str], JudgeInfo] = {}
        self.graded = GradedBits()
        self.tagged = TagCounter()
        self.served = ServedCounter()
        self.records = 0
        self._last_judge: JudgeInfo | None = None
        #: What some record has, so `totals` asks for the standing records again only for these.
        self.seen: set[str] = set()
        #: Attempts lists `add` noted and not yet counted (`settle`), by their and their judge's id.
        #: None once the records' lists prove not to be shared (`_note_calls`).
        self._pending: dict[tuple[str, int, int], SharedCalls] | None = {}

    def add(self, record: Record) -> None:
        """Count one standing record (the common one, with no reviews, by `add_plain`)."""
        unset = msgspec.UNSET
        if (
            record.panel is unset
            and record.audit is unset
            and record.repeats is unset
            and record.human_audit is unset
            and record.reviewer_audits is unset
        ):
            self.add_plain(record, record.judge, record.attempts)
            return
        if (system := record.system) not in self.systems:
            self.systems[system], self.spends[system] = SystemTotals(system=system), Spend(self.price)
        self.questions.setdefault(record.question, QuestionTotals(question=record.question))
        self.settle()  # counted in the order they come: a price's place orders a cost's sum
        self._tally(record, 1)
        self._note_judge(record)
        self._note_reviews(record)

    def add_plain(self, record: Record | LightRecord, judge: JudgeInfo, attempts: list[Attempt]) -> None:
        """Count a standing record with no panel, audit, repeats or reviews (a light one too: a
        first read makes no `Record` of it), its `judge` and `attempts` shared by `LightLines`: its
        calls noted as one more use of its attempts list (`_note_calls`), in one call."""
        system, question = record.system, record.question
        s = self.systems.get(system)
        if s is None:
            s = self.systems[system] = SystemTotals(system=system)
            self.spends[system] = Spend(self.price)
        q = self.questions.get(question)
        if q is None:
            q = self.questions[question] = QuestionTotals(question=question)
        self.records += 1
        decision, tier = record.decision, record.tier
        verdict = record.verdict if decision is None else _decided(s, decision.verdict)
        s.answers += 1
        q.answers += 1
        if verdict == "pass":
            s.passed += 1
            q.passed += 1
            if tier == "t1":
                s.t1_passes += 1
        elif verdict == "fail":
            s.fail += 1
            q.fail += 1
        elif verdict == "adjudicate":
            s.adjudicate += 1
            q.adjudicate += 1
        else:  # `error`, or an outcome no record is written with: `count_outcome` counts it so
            s.error += 1
            q.error += 1
        self.graded.add(system, question, verdict)
        if tier == "match":
            s.match_decided += 1
        if attempts:
            self._note_calls(s, system, judge, attempts)
        if record.tags:
            self.tagged.add(record)
        if record.injection_suspect:
            s.injection_suspects += 1
        if record.facets:
            self._count_facets(s, record.facets, 1)
        last = self._last_judge  # light records share one judge object, whole ones equal ones
        if judge is not last and tier == "t2" and record.cause != "missing" and judge != last:
            self.judges.setdefault((judge.backend, judge.model), judge)
            self._last_judge = judge

    def _count_facets(self, s: SystemTotals, facets: dict[str, bool], change: int) -> None:
        """`change` of each facet a record saw, onto the whole file's and its system's counts."""
        for name, seen in facets.items():
            if seen:
                self.facets[name] = self.facets.get(name, 0) + change
                s.facets[name] = s.facets.get(name, 0) + change

    def _note_calls(self, s: SystemTotals, system: str, judge: JudgeInfo, attempts: list[Attempt]) -> None:
        """Note a record's calls as one more use of its attempts list, counted in `settle`; once
        `SHARED_KEPT` lists are held (the records' lists are not shared: records decoded whole),
        count them as they come."""
        pending = self._pending
        if pending is not None:
            # The ids are those of objects a `SharedCalls` holds: no other object has them meanwhile.
            key = (system, id(attempts), id(judge))
            calls = pending.get(key)
            if calls is not None:
                calls.uses += 1
                return
            if len(pending) < SHARED_KEPT:
                pending[key] = SharedCalls(system, judge, attempts)
                return
            self.settle()
            self._pending = None
        spend, served = self.spends[system], self.served
        for attempt in attempts:
            if attempt.cache_hit:
                s.cache_hits += 1
            else:
                if attempt.raw is not None or attempt.error is not None:
                    s.judge_calls += 1
                    spend.add_call(attempt.tokens, judge)
                if attempt.served is not None:
                    served.add_judged(((judge, attempt),))
            kind = attempt.kind
            if kind == "stern":
                s.stern_retries += 1
            elif kind == "format":
                s.format_retries += 1

    def _note_judge(self, record: Record) -> None:
        """Note the judge of a graded answer, in the order judges are first met."""
        judge = record.judge
        if record.tier == "t2" and record.cause != "missing" and judge is not self._last_judge:
            self.judges.setdefault((judge.backend, judge.model), judge)
            self._last_judge = judge

    def settle(self) -> None:
        """Count the judge calls `add` noted as uses of an attempts list (`SharedCalls`), in the
        order first noted, so every count (and each price's place, which orders the sum of a cost) is
        what counting each record's calls as it came gives."""
        pending = self._pending
        if pending:
            self._pending = {}
            for calls in pending.values():
                judged = calls.judged()
                count_calls(self.systems[calls.system], self.spends[calls.system], judged, calls.uses)
                self.served.add_judged(judged, calls.uses)

    def subtract(self, record: Record) -> None:
        """Take back every count `add` made of `record`, a standing record counted here: what a
        pair counts when its record is replaced (a person's decision on it: the viewer takes the
        record back and adds it decided). What a count lists as first met (a judge, a facet's or a
        price's place) and what some record has (`seen`) stay as they are."""
        self.settle()
        self._tally(record, -1)

    def _tally(self, record: Record, change: int) -> None:
        """`change` (1: add, -1: take back) of each count of one record, onto rows that exist."""
        self.records += change
        system = record.system
        s = self.systems[system]
        verdict = outcome(record)
        count_outcome(s, verdict, change)
        count_outcome(self.questions[record.question], verdict, change)
        if change > 0:
            self.graded.add(system, record.question, verdict)
        else:
            self.graded.remove(system, record.question, verdict)
        decision = record.decision
        if decision is not None:
            if decision.verdict == "pass":
                s.human_pass += change
            else:
                s.human_fail += change
        tier = record.tier
        if tier == "t1" and verdict == "pass":
            s.t1_passes += change
        elif tier == "match":
            s.match_decided += change
        judged = judged_attempts(record)
        count_calls(s, self.spends[system], judged, change)
        self.served.add_judged(judged, change)
        if record.tags:
            self.tagged.add(record, change)
        if record.injection_suspect:
            s.injection_suspects += change
        if record.facets:
            self._count_facets(s, record.facets, change)

    def merge(self, other: StandingCounter) -> None:
        """Add what `other` counted: the standing records of a later part of the file (no pair of
        which is counted here), as if `add` had been given them after these."""
        self.settle()
        other.settle()
        self.records += other.records
        for name, row in other.systems.items():
            mine = self.systems.get(name)
            if mine is None:
                self.systems[name], self.spends[name] = row, other.spends[name]
                continue
            add_counts(mine, row)
            for field in _SYSTEM_COUNTS:
                setattr(mine, field, getattr(mine, field) + getattr(row, field))
            for facet, seen in row.facets.items():
                mine.facets[facet] = mine.facets.get(facet, 0) + seen
            self.spends[name].merge(other.spends[name])
        questions = self.questions
        for name, question in other.questions.items():  # `other`'s rows are its own, as its systems'
            mine_q = questions.get(name)
            if mine_q is None:
                questions[name] = question
            else:
                add_counts(mine_q, question)
        for facet, seen in other.facets.items():
            self.facets[facet] = self.facets.get(facet, 0) + seen
        for key, judge in other.judges.items():
            self.judges.setdefault(key, judge)
        self.graded.merge(other.graded)
        self.tagged.merge(other.tagged)
        self.served.merge(other.served)
        self.seen |= other.seen

    def _note_reviews(self, record: Record) -> None:
        """Note what of a panel, a T1 audit, a blind audit and repeats the record has."""
        if record.votes:
            self.seen.add("panel")
        if record.audited is not None:
            self.seen.add("t1_audit")
        if record.audits_by_reviewers:
            self.seen.add("human")
        if record.repetitions:
            self.seen.add("repeats")

    def totals(self, standing: Callable[[], Iterable[Record]]) -> Totals:
        """The totals counted; `standing()` gives the same records again, for those counts a
        record must be read whole for (called only when some record has what they count)."""
        self.settle()
        systems, seen = self.systems, self.seen
        rows: list[SystemTotals | QuestionTotals] = [*systems.values(), *self.questions.values()]
        for row in rows:
            row.score = score_of(row)
        for s in systems.values():
            s.ci_low, s.ci_high = score_interval(s)
            s.if_errors = error_range(s)
        usage = _usage(systems, self.spends, self.price)
        if "human" in seen:
            _human_checks(systems, usage, standing())
        else:  # what audit_agreements and validated_scores give when nothing was audited
            for s in systems.values():
                s.audit = s.validated_score = msgspec.UNSET
        return Totals(
            usage=usage,
            systems=sorted(systems.values(), key=lambda r: r.system),
            questions=sorted(self.questions.values(), key=lambda r: r.question),
            facets=dict(sorted(self.facets.items())),
            judges=list(self.judges.values()),
            records=self.records,
            panel=panel_agreement(standing()) if "panel" in seen else None,
            t1_audit=t1_audit(standing()) if "t1_audit" in seen else None,
            comparisons=compare_graded(self.graded.table()),
            tags=self.tagged.totals(),
            served=self.served.models(),
            stability=stability(standing()) if "repeats" in seen else msgspec.UNSET,
            reviewers=_reviewers(standing()) if "human" in seen else msgspec.UNSET,
        )


def _decided(s: SystemTotals, verdict: str) -> str:
    """A person's `verdict` on a record, counted as theirs on its system's row."""
    if verdict == "pass":
        s.human_pass += 1
    else:
        s.human_fail += 1
    return verdict


def _human_checks(systems: dict[str, SystemTotals], usage: Usage, standing: Iterable[Record]) -> None:
    """The judge against the blind audits, and the validated score, onto each system and `"all"`."""
    standing = list(standing)
    audits, usage.audit = audit_agreements(standing)
    validated, usage.validated_score = validated_scores(standing)
    for s in systems.values():
        s.audit = audits.get(s.system, msgspec.UNSET)
        s.validated_score = validated.get(s.system, msgspec.UNSET)


def _reviewers(standing: Iterable[Record]) -> Reviewers | msgspec.UnsetType:
    found = reviewer_agreement(standing)
    return msgspec.UNSET if found is None else found


def _usage(systems: dict[str, SystemTotals], spends: dict[str, Spend], price: Price | None) -> Usage:
    """Each system's tokens and cost onto its row, and the whole file's (`"all"`)."""
    whole = Spend(price)
    for name, spend in spends.items():
        systems[name].tokens = spend.tokens
        systems[name].cost_usd = spend.cost()
        whole.merge(spend)
    return Usage(whole.calls, whole.tokens, whole.cost(), whole.unpriced_calls)


def totals_json(totals: Totals) -> bytes:
    """Totals as one JSON document, for machines."""
    return msgspec.json.encode(totals)
