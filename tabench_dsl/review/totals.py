"""Totals: the only place that adds anything up (README, "Verdicts").

The judge never returns a total; the tool counts from the records. Where a (system, question) pair
has several records, the last stands. A record carrying a human `decision` counts as that verdict
(and as a human one). Score = pass / (pass + fail + adjudicate): an `error` is not counted, since
no usable judge reply was had and a resume grades it again.
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from ..core.price import Price
from ..core.records import JudgeInfo, Record
from .agreement import PanelAgreement, T1Audit, panel_agreement, t1_audit
from .audit import AuditAgreement, audit_agreements
from .compare import Comparisons, compare_systems, comparison_table
from .costs import Spend, TokenCounts, format_usd, judged_attempts
from .error_range import ErrorRange, error_range, error_range_table
from .outcomes import count_outcome, latest, outcome, percent, score_interval, score_of, score_text
from .served import ServedModel, served_models
from .slices import TagTotals, tag_table, tag_totals
from .stability import Stability, stability, stability_table
from .useful_rows import EVERY_ROW, Limits, cut_note, facet_first, score_first, useful_rows, with_cut_note
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


def compute_totals(records: Iterable[Record], *, price: Price | None = None) -> Totals:
    """Count the standing records per system, per question, per facet and per judge. `price` (the
    reader's `--price`) prices every billed judge call over the price its record carries."""
    systems: dict[str, SystemTotals] = {}
    spends: dict[str, Spend] = {}
    questions: dict[str, QuestionTotals] = {}
    facets: dict[str, int] = {}
    judges: dict[tuple[str, str], JudgeInfo] = {}
    standing = latest(records)
    for record in standing.values():
        s = systems.setdefault(record.system, SystemTotals(system=record.system))
        spend = spends.get(record.system)
        if spend is None:
            spend = spends[record.system] = Spend(price)
        q = questions.setdefault(record.question, QuestionTotals(question=record.question))
        verdict = outcome(record)
        for row in (s, q):
            count_outcome(row, verdict)
        if record.decision is not None:
            if record.decision.verdict == "pass":
                s.human_pass += 1
            else:
                s.human_fail += 1
        if record.tier == "t1" and verdict == "pass":
            s.t1_passes += 1
        _count_calls(s, spend, record)
        if record.injection_suspect:
            s.injection_suspects += 1
        for name, seen in record.facets.items():
            if seen:
                facets[name] = facets.get(name, 0) + 1
                s.facets[name] = s.facets.get(name, 0) + 1
        if record.tier == "t2" and record.cause != "missing":  # nobody judged a missing answer
            judges.setdefault((record.judge.backend, record.judge.model), record.judge)
    rows: list[SystemTotals | QuestionTotals] = [*systems.values(), *questions.values()]
    for row in rows:
        row.score = score_of(row)
    for s in systems.values():
        s.ci_low, s.ci_high = score_interval(s)
        s.if_errors = error_range(s)
    usage = _usage(systems, spends, price)
    _human_checks(systems, usage, standing.values())
    return Totals(
        usage=usage,
        systems=sorted(systems.values(), key=lambda r: r.system),
        questions=sorted(questions.values(), key=lambda r: r.question),
        facets=dict(sorted(facets.items())),
        judges=list(judges.values()),
        records=len(standing),
        panel=panel_agreement(standing.values()),
        t1_audit=t1_audit(standing.values()),
        comparisons=compare_systems(standing.values()),
        tags=tag_totals(standing.values()),
        served=served_models(standing.values()),
        stability=stability(standing.values()),
    )


def _count_calls(s: SystemTotals, spend: Spend, record: Record) -> None:
    """A record's judge calls, cache hits and retries onto its system's row, their tokens onto
    `spend` (a panel's judges' and an audit's calls too)."""
    for judge, attempt in judged_attempts(record):
        if attempt.cache_hit:
            s.cache_hits += 1
        elif attempt.raw is not None or attempt.error is not None:
            s.judge_calls += 1
            spend.add_call(attempt.tokens, judge)
        if attempt.kind == "stern":
            s.stern_retries += 1
        elif attempt.kind == "format":
            s.format_retries += 1


def _human_checks(systems: dict[str, SystemTotals], usage: Usage, standing: Iterable[Record]) -> None:
    """The judge against the blind audits, and the validated score, onto each system and `"all"`."""
    standing = list(standing)
    audits, usage.audit = audit_agreements(standing)
    validated, usage.validated_score = validated_scores(standing)
    for s in systems.values():
        s.audit = audits.get(s.system, msgspec.UNSET)
        s.validated_score = validated.get(s.system, msgspec.UNSET)


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


def judge_caption(totals: Totals) -> str:
    """Who graded, saying plainly when it was not a language model (and not claiming T1 graded a
    file that holds no record)."""
    if not totals.records:
        return "no answers graded yet"
    if not totals.judges:
        return "graded by T1 only (no judge call)"
    return "judge: " + "; ".join(judge.describe() for judge in totals.judges)


def usage_caption(totals: Totals) -> str:
    """What the judge calls of the whole file used and cost, in one line; where the cost is unknown,
    why (calls with no price) and how to give one."""
    usage = totals.usage
    tokens = usage.tokens
    line = (
        f"all: {usage.judge_calls:,} judge call(s), {tokens.prompt:,} prompt tokens "
        f"({tokens.cached_prompt:,} cached), {tokens.completion:,} completion tokens"
    )
    if usage.cost_usd is not None:
        return f"{line}; cost {format_usd(usage.cost_usd)}"
    return (
        f"{line}; cost unknown: {usage.unpriced_calls:,} call(s) have no price "
        "(give --price or the manifest's judge: {price: ...})"
    )


def with_human(count: int, human: int) -> str:
    """A pass or fail count with how many of them a person decided: `2 (1 human)`. Each column
    names its own human verdicts: a human fail was once shown in the pass column."""
    return f"{count} ({human} human)" if human else str(count)


def render_table(totals: Totals, width: int | None = None, limits: Limits = EVERY_ROW):
    """The totals as `rich` tables (per system, per question, facets), ready to print; the first
    two fit in `width` terminal columns (`table_fit`, None: every column), and the long sections
    show the rows `limits` allows them (`useful_rows`, default: every row).

    Names come from a results file, which anyone may have written: each goes in as a `Text`, never
    as a string rich would read as markup (`[/x]` in a system name was an error, `[link=...]` a
    hyperlink).
    """
    from rich.console import Group
    from rich.table import Table

    from ..core.display import literal  # names and judges come from files: text, never rich markup
    from .audit_view import audit_tables

    by_system = system_table(totals, width)
    by_question = question_table(totals, width, limits.of("question"))
    parts = [by_system, by_question]
    if totals.facets:
        shown = useful_rows(list(totals.facets.items()), limits.of("facet"), facet_first)
        facets = Table(title="Facets observed")
        facets.add_column("facet")
        facets.add_column("answers", justify="right")
        for name, count in shown:
            facets.add_row(literal(name), str(count))
        parts.append(with_cut_note(facets, cut_note("facet", len(shown), len(totals.facets))))
    if totals.panel is not None:
        parts.append(panel_table(totals.panel))
    if totals.t1_audit is not None:
        parts.append(t1_audit_table(totals.t1_audit))
    parts.extend(audit_tables(totals))
    parts.extend(t for t in (stability_table(totals.stability), error_range_table(totals)) if t is not None)
    sliced = (tag_table(totals, limits.of("tag")), comparison_table(totals.comparisons, limits.of("pairs")))
    parts.extend(table for table in sliced if table)
    return Group(*parts)


#: The per-system table's columns in the order they go as the terminal narrows (`table_fit`): the
#: token and cost figures first, the verdict counts last; system, score and 95% CI always stay.
SYSTEM_DROP_ORDER: tuple[str, ...] = (
    *("cached", "tokens in", "out", "stern", "cost", "calls", "T1"),
    *("answers", "adjud.", "error", "fail", "pass"),
)
#: The per-question table's, likewise; question and score always stay.
QUESTION_DROP_ORDER = ("answers", "adjud.", "error", "fail", "pass")


def system_table(totals: Totals, width: int | None):
    """The per-system table, fitted to `width` (`table_fit`)."""
    from ..core.display import literal
    from .table_fit import Column, fitted_table

    rows = totals.systems
    intervals = ["-" if s.ci_low is None else f"{percent(s.ci_low)}-{percent(s.ci_high)}" for s in rows]
    columns = [
        Column("system", [literal(s.system) for s in rows], justify="left", kept=True, fold=True),
        Column("answers", [str(s.answers) for s in rows]),
        Column("pass", [with_human(s.passed, s.human_pass) for s in rows]),
        Column("fail", [with_human(s.fail, s.human_fail) for s in rows]),
        Column("adjud.", [str(s.adjudicate) for s in rows]),
        Column("error", [str(s.error) for s in rows]),
        Column("score", [score_text(s) for s in rows], kept=True),
        Column("95% CI", intervals, kept=True),
        Column("T1", [str(s.t1_passes) for s in rows]),
        Column("calls", [str(s.judge_calls) for s in rows]),
        Column("stern", [str(s.stern_retries) for s in rows]),
        Column("tokens in", [f"{s.tokens.prompt:,}" for s in rows]),
        Column("cached", [f"{s.tokens.cached_prompt:,}" for s in rows]),
        Column("out", [f"{s.tokens.completion:,}" for s in rows]),
        Column("cost", [format_usd(s.cost_usd) for s in rows]),
    ]
    caption = literal(judge_caption(totals), style="table.caption").append(
        "\n"
        + usage_caption(totals)
        + "\nscore = pass / (pass + fail + adjudicate), errors left out (a --resume grades them "
        "again); T1 = token-subset tier" + injection_caption(totals)
    )
    return fitted_table(
        columns, width=width, drop_order=SYSTEM_DROP_ORDER, title="Totals per system", caption=caption
    )


def injection_caption(totals: Totals) -> str:
    """A line naming the answers flagged `injection_suspect` per system (empty when none): text
    that reads as instructions to the judge, whatever verdict it got, is worth a person's look."""
    flagged = [(s.system, s.injection_suspects) for s in totals.systems if s.injection_suspects]
    if not flagged:
        return ""
    total = sum(count for _, count in flagged)
    from ..core.display import shown  # names come from files: control characters as escapes

    each = ", ".join(f"{shown(system)} {count}" for system, count in flagged)
    return (
        f"\ninjection_suspect: {total} answer(s) read as instructions to the judge ({each}); "
        "read them before trusting their verdicts (tabench view)"
    )


def question_table(totals: Totals, width: int | None, limit: int | None = None):
    """The per-question table, fitted to `width` (`table_fit`), of at most `limit` rows
    (`useful_rows`: the lowest scores first; None: every question)."""
    from ..core.display import literal
    from .table_fit import Column, fitted_table

    rows = useful_rows(totals.questions, limit, score_first)
    columns = [
        Column("question", [literal(q.question) for q in rows], justify="left", kept=True, fold=True),
        Column("answers", [str(q.answers) for q in rows]),
        Column("pass", [str(q.passed) for q in rows]),
        Column("fail", [str(q.fail) for q in rows]),
        Column("adjud.", [str(q.adjudicate) for q in rows]),
        Column("error", [str(q.error) for q in rows]),
        Column("score", [score_text(q) for q in rows], kept=True),
    ]
    table = fitted_table(
        columns, width=width, drop_order=QUESTION_DROP_ORDER, title="Per question, across systems"
    )
    return with_cut_note(table, cut_note("question", len(rows), len(totals.questions)))


def kappa_text(kappa: float | None) -> str:
    return "-" if kappa is None else f"{kappa:.3f}"


def panel_caption(panel: PanelAgreement) -> str:
    """The panel's agreement in one line, as the terminal and the viewer word it."""
    return (
        f"{panel.answers} answer(s) graded by the panel, {panel.split} split; Fleiss' kappa "
        f"{kappa_text(panel.kappa)} over {panel.rated} answer(s) every judge gave pass or fail"
    )


def t1_audit_caption(audit: T1Audit) -> str:
    """T1's precision against the judge in one line, as the terminal and the viewer word it."""
    interval = "-" if audit.ci_low is None else f"{percent(audit.ci_low)}-{percent(audit.ci_high)}"
    return (
        f"T1 precision against the judge: agreed {audit.agreed} of {audit.n}, {percent(audit.precision)} "
        f"(95% CI {interval}); {audit.audited} audited, {audit.undecided} undecided by the judge"
    )


def panel_table(panel: PanelAgreement):
    """Each panel judge's votes and pass rate, with Fleiss' kappa among them in the caption."""
    from rich.table import Table

    from ..core.display import literal

    table = Table(title="Judge panel", caption=literal(panel_caption(panel), style="table.caption"))
    for name in ("judge", "votes", "pass", "fail", "adjud.", "error", "pass rate"):
        table.add_column(name, justify="left" if name == "judge" else "right", no_wrap=True)
    for rate in panel.judges:
        table.add_row(
            literal(rate.judge),
            str(rate.votes),
            str(rate.passed),
            str(rate.fail),
            str(rate.adjudicate),
            str(rate.error),
            percent(rate.pass_rate),
        )
    return table


def t1_audit_table(audit: T1Audit):
    """T1's precision against the judge, and the T1 passes the judge failed."""
    from rich.table import Table

    from ..core.display import literal

    table = Table(
        title="T1 audit: T1 passes the judge failed",
        caption=literal(t1_audit_caption(audit), style="table.caption"),
    )
    for name in ("system", "question", "judge's reason"):
        table.add_column(name)
    for miss in audit.disagreements:
        table.add_row(literal(miss.system), literal(miss.question), literal(miss.reason))
    return table
