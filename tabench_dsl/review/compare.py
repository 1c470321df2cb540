"""Is system A better than system B? Every pair of systems, compared on the questions both answered.

For each pair the standing records (human decisions applied, as totals counts them) of the questions
both systems have a graded outcome for are paired: a question counts as a success for a system when
its outcome is `pass`, and as a failure when it is `fail` or `adjudicate`, exactly as the score
counts them. A question where either system's outcome is `error` is left out of that pair (the
score leaves errors out too: no usable judge reply was had), and so is a question only one of them
answered. On the paired questions:

- the difference in score, A - B, with Newcombe's (1998, method 10) 95% interval for paired
  proportions (`stats.newcombe_paired_interval`);
- McNemar's exact p-value (`stats.mcnemar_exact`), then Holm's correction across all the pairs
  compared (`stats.holm`); a pair whose adjusted p-value is at most `ALPHA` is `significant`.

A run of thousands of systems would make millions of pairs: beyond `MAX_SYSTEMS` systems no pair is
compared, and `Comparisons.skipped` says why.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import msgspec

from ..core.records import Record
from ..core.stats import PairedCounts, holm, mcnemar_exact, newcombe_paired_interval

if TYPE_CHECKING:
    from rich.text import Text

    from .table_fit import Column

#: The family-wise significance level a pair is marked at (after Holm's correction).
ALPHA = 0.05
#: Most systems compared pairwise: 30 systems are 435 pairs, a table a person can still read.
MAX_SYSTEMS = 30
#: Decimals of the figures a comparison reports (as totals round its interval bounds).
DECIMALS = 6


class PairComparison(msgspec.Struct):
    """System `a` against system `b` on the `questions` both have a graded outcome for.

    `a_only` / `b_only` are the discordant questions (only `a` passed, only `b` passed); `diff` is
    score(a) - score(b) on the paired questions, `ci_low`/`ci_high` its 95% Newcombe interval;
    `p_value` is McNemar's exact test and `p_holm` that value after Holm's correction."""

    a: str
    b: str
    questions: int
    both_pass: int
    a_only: int
    b_only: int
    neither: int
    score_a: float | None
    score_b: float | None
    diff: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float
    p_holm: float = 1.0
    significant: bool = False


class Comparisons(msgspec.Struct):
    """Every pair of systems compared; `skipped` says why none were (too many systems), else ""."""

    method: str = (
        "score difference with Newcombe's paired 95% interval (method 10); McNemar exact p, "
        f"Holm-corrected; significant at {ALPHA}; a question with an error on either side is left out"
    )
    pairs: list[PairComparison] = msgspec.field(default_factory=list)
    skipped: str = ""


class Graded(msgspec.Struct, frozen=True):
    """One system's questions with a graded outcome, and those of them it passed, as bit sets: bit
    i stands for the i-th question of the run (`successes` numbers them)."""

    questions: int
    passed: int


def paired_counts(first: Graded, second: Graded) -> PairedCounts:
    """The 2x2 table of two systems on the questions both have a graded outcome for.

    Four ANDs of bit sets and their bit counts, not a loop over questions: 30 systems of 5,000
    answers are 435 pairs, and totals (and the viewer, after each decision) count them all."""
    both_pass = (first.passed & second.passed).bit_count()
    first_only = (first.passed & second.questions).bit_count() - both_pass
    second_only = (second.passed & first.questions).bit_count() - both_pass
    shared = (first.questions & second.questions).bit_count()
    return PairedCounts(both_pass, first_only, second_only, shared - both_pass - first_only - second_only)


def compare_pair(name_a: str, name_b: str, counts: PairedCounts) -> PairComparison:
    """One pair's figures from its paired counts (Holm's correction is applied across pairs later)."""
    n = counts.n
    interval = newcombe_paired_interval(counts)
    return PairComparison(
        a=name_a,
        b=name_b,
        questions=n,
        both_pass=counts.a,
        a_only=counts.b,
        b_only=counts.c,
        neither=counts.d,
        score_a=_rounded((counts.a + counts.b) / n) if n else None,
        score_b=_rounded((counts.a + counts.c) / n) if n else None,
        diff=_rounded((counts.b - counts.c) / n) if n else None,
        ci_low=None if interval is None else _rounded(interval[0]),
        ci_high=None if interval is None else _rounded(interval[1]),
        p_value=mcnemar_exact(counts.b, counts.c),
    )


def successes(records: Iterable[Record]) -> dict[str, Graded]:
    """system -> its graded questions and passes (an `error` is left out), from standing records."""
    from .outcomes import outcome

    number: dict[str, int] = {}
    graded: dict[str, list[int]] = {}
    passed: dict[str, list[int]] = {}
    for record in records:
        verdict = outcome(record)
        if verdict == "error":
            continue
        bit = number.setdefault(record.question, len(number))
        graded.setdefault(record.system, []).append(bit)
        if verdict == "pass":
            passed.setdefault(record.system, []).append(bit)
    return {system: Graded(_bits(bits), _bits(passed.get(system, ()))) for system, bits in graded.items()}


def _bits(positions: Iterable[int]) -> int:
    """The bit set with these bits on (built through a bytearray: one big int, not one per bit)."""
    positions = list(positions)
    if not positions:
        return 0
    buffer = bytearray(max(positions) // 8 + 1)
    for i in positions:
        buffer[i >> 3] |= 1 << (i & 7)
    return int.from_bytes(buffer, "little")


def compare_systems(records: Iterable[Record]) -> Comparisons:
    """Every pair of systems in `records` (standing records, decisions applied), names in sorted
    order so `a` is the first of the two, with Holm's correction across all the pairs."""
    return compare_graded(successes(records))


def compare_graded(table: dict[str, Graded]) -> Comparisons:
    """Every pair of the systems of `table` (`successes`, or `graded_bits` as records stream by),
    names in sorted order, with Holm's correction across all the pairs."""
    names = sorted(table)
    if len(names) > MAX_SYSTEMS:
        return Comparisons(
            skipped=f"{len(names)} systems: pairwise comparison is made for at most {MAX_SYSTEMS}"
        )
    pairs = [
        compare_pair(x, y, paired_counts(table[x], table[y]))
        for i, x in enumerate(names)
        for y in names[i + 1 :]
    ]
    for pair, adjusted in zip(pairs, holm([p.p_value for p in pairs]), strict=True):
        pair.p_holm = adjusted
        pair.significant = adjusted <= ALPHA
    return Comparisons(pairs=pairs)


def _rounded(value: float) -> float:
    return round(value, DECIMALS)


def signed_points(value: float | None) -> str:
    """A difference of scores in percentage points, signed: `+12.5`, `-3.0`, `-` for none."""
    return "-" if value is None else f"{100 * value:+.1f}"


def p_text(p: float) -> str:
    """A p-value in four significant digits: `0.05248`, `2.524e-29`."""
    return f"{p:.4g}"


#: The pairs table's columns in the order they go as the terminal narrows (`table_fit`); the two
#: systems, the difference, its interval, the corrected p and the significance mark always stay.
PAIR_DROP_ORDER = ("p", "questions", "B only", "A only")


def _pair_columns(
    shown: Sequence[PairComparison], a: Sequence[str | Text], b: Sequence[str | Text]
) -> list[Column]:
    """The pairs table's columns for the pairs `shown`, each named in `a` and `b` (whole names as
    text, or short labels)."""
    from .table_fit import Column

    intervals = [
        "-" if pair.ci_low is None else f"{signed_points(pair.ci_low)} to {signed_points(pair.ci_high)}"
        for pair in shown
    ]
    return [
        Column("A", a, justify="left", kept=True, fold=True),
        Column("B", b, justify="left", kept=True, fold=True),
        Column("questions", [str(pair.questions) for pair in shown]),
        Column("A only", [str(pair.a_only) for pair in shown]),
        Column("B only", [str(pair.b_only) for pair in shown]),
        Column("diff", [signed_points(pair.diff) for pair in shown], kept=True),
        Column("95% CI", intervals, kept=True),
        Column("p", [p_text(pair.p_value) for pair in shown]),
        Column("p (Holm)", [p_text(pair.p_holm) for pair in shown], kept=True),
        Column("", ["*" if pair.significant else "" for pair in shown], kept=True),
    ]


def comparison_table(comparisons: Comparisons, limit: int | None = None, width: int | None = None):
    """The pairs as a `rich` table, or None when there is nothing to show (fewer than two systems);
    at most `limit` of them (`useful_rows`: the largest significant differences first; None: all).
    The table fits `width` columns (None: every column): where two whole names a row do not fit,
    short labels (S1, S2, ...) stand for the systems, with their key under the table, so every row
    can be told apart and the significance mark stays.

    Names come from a results file: each goes in as `display.literal` text, never as markup."""
    from rich.table import Table
    from rich.text import Text

    from ..core.display import literal
    from .table_fit import fits, fitted_table, label_key, short_labels
    from .useful_rows import cut_note, pair_first, useful_rows, with_cut_note

    if comparisons.skipped:
        table = Table(title="Systems compared pairwise")
        table.add_column("skipped")
        table.add_row(literal(comparisons.skipped))
        return table
    if not comparisons.pairs:
        return None
    shown = useful_rows(comparisons.pairs, limit, pair_first)
    note = cut_note("pairs", len(shown), len(comparisons.pairs))

    caption = Text(
        f"diff = score A - score B in points, 95% Newcombe interval; p = McNemar exact, "
        f"Holm-corrected over {len(comparisons.pairs)} pair(s); * = significant at {ALPHA}",
        style="table.caption",
    )
    named = _pair_columns(shown, [literal(pair.a) for pair in shown], [literal(pair.b) for pair in shown])
    if not fits(named, width, PAIR_DROP_ORDER):
        labels = short_labels([name for pair in comparisons.pairs for name in (pair.a, pair.b)])
        named = _pair_columns(shown, [labels[pair.a] for pair in shown], [labels[pair.b] for pair in shown])
        caption.append("\n").append(label_key(labels))
    table = fitted_table(
        named,
        width=width,
        drop_order=PAIR_DROP_ORDER,
        title="Systems compared pairwise (on the questions both answered)",
        caption=caption,
    )
    return with_cut_note(table, note)
