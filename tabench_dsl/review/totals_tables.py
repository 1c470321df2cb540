"""Totals as the terminal shows them: the captions and the `rich` tables built from a `Totals`
(per system, per question, facets, panel, T1 audit and the sections `totals` prints), each long
section cut to the rows `useful_rows` allows. The counting is `totals`'s."""

from __future__ import annotations

from .agreement import PanelAgreement, T1Audit
from .compare import comparison_table
from .costs import format_usd
from .error_range import error_range_table
from .outcomes import percent, score_text
from .slices import tag_table
from .stability import stability_table
from .totals import Totals
from .useful_rows import EVERY_ROW, Limits, cut_note, facet_first, score_first, useful_rows, with_cut_note


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
    from .reviewers_view import reviewer_tables

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
    parts.extend(reviewer_tables(totals))
    parts.extend(t for t in (stability_table(totals.stability), error_range_table(totals)) if t is not None)
    sliced = (
        tag_table(totals, limits.of("tag"), width),
        comparison_table(totals.comparisons, limits.of("pairs"), width),
    )
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
        *(
            [Column("match", [str(s.match_decided) for s in rows])]
            if any(s.match_decided for s in rows)
            else []
        ),
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
        "again); T1 = the mechanical tier, no judge call"
        + ("; match = decided by a question's match check" if any(s.match_decided for s in rows) else "")
        + injection_caption(totals)
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
