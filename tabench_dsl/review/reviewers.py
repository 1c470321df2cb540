"""Several reviewers: how far people agree with each other, beside how far the judge agrees with them.

When two or more people audited the same answers (`adjudicate --audit N --seed S --reviewer NAME`
with one seed draws the same answers for each), every pair of reviewers is measured on the answers
both audited: their agreement (with its Wilson interval) and Cohen's kappa, with a percentile
bootstrap interval (`BOOTSTRAP_RESAMPLES` resamples of those answers, seeded, so the same file gives
the same interval). That is the human ceiling: a judge cannot be expected to agree with a person
more than people agree with each other. Beside it, on the same answers, the judge's kappa against
each of the two, and against their consensus (the answers where the two agree).

`judge` gives the judge against each reviewer on everything that reviewer audited, and against the
consensus of all (the answers every reviewer who audited them agreed on). An answer the reviewers
disagree on has no consensus: it is left out of the agreement with the judge and of the validated
score (`validated`), and `disagreed` counts them.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable, Sequence
from itertools import combinations

import msgspec

from ..core.records import Record
from ..core.stats import cohen_kappa, cohen_kappa_of_counts
from .audit import DECIDED, Proportion, proportion

#: Bootstrap resamples behind a kappa's interval, and their seed.
BOOTSTRAP_RESAMPLES = 1000
BOOTSTRAP_SEED = 0


class Kappa(msgspec.Struct):
    """Two raters on `n` answers: their agreement with its Wilson interval, Cohen's kappa and its
    95% percentile bootstrap interval (None where kappa is undefined, or every resample was)."""

    n: int
    agreement: Proportion
    kappa: float | None
    kappa_low: float | None
    kappa_high: float | None


class ReviewerPair(msgspec.Struct):
    """Two reviewers on the answers both audited, and the judge against each and their consensus."""

    first: str
    second: str
    people: Kappa
    judge_vs_first: Kappa
    judge_vs_second: Kappa
    judge_vs_consensus: Kappa


class JudgeVsReviewer(msgspec.Struct):
    """The judge against one reviewer on everything they audited (`reviewer` "consensus": against
    the answers every reviewer who audited them agreed on)."""

    reviewer: str
    figures: Kappa


class Reviewers(msgspec.Struct):
    """The human ceiling (`pairs`), the judge against each person (`judge`), and the answers the
    reviewers disagree on (`disagreed`), left out of the validated score."""

    reviewers: list[str]
    pairs: list[ReviewerPair]
    judge: list[JudgeVsReviewer]
    disagreed: int


def kappa_figures(pairs: Sequence[tuple[str, str]]) -> Kappa:
    """Agreement and kappa of two ratings of the same answers, with their intervals."""
    agreed = sum(1 for a, b in pairs if a == b)
    low, high = bootstrap_kappa(pairs)
    return Kappa(len(pairs), proportion(agreed, len(pairs)), cohen_kappa(pairs), low, high)


def bootstrap_kappa(pairs: Sequence[tuple[str, str]]) -> tuple[float | None, float | None]:
    """The 2.5th and 97.5th percentiles of kappa over seeded resamples of `pairs` (module docstring)."""
    if len(pairs) < 2:
        return None, None
    rng = random.Random(BOOTSTRAP_SEED)
    cells = Counter(pairs)  # at most a few kinds of pair: resample the kinds, weighted by their counts
    kinds, weights = list(cells), list(cells.values())
    found = []
    for _ in range(BOOTSTRAP_RESAMPLES):
        kappa = cohen_kappa_of_counts(Counter(rng.choices(kinds, weights, k=len(pairs))))
        if kappa is not None:
            found.append(kappa)
    if not found:
        return None, None
    found.sort()
    return _round(found[int(0.025 * (len(found) - 1))]), _round(found[int(0.975 * (len(found) - 1))])


def reviewer_agreement(standing: Iterable[Record]) -> Reviewers | None:
    """The reviewers' figures over the standing records; None with fewer than two reviewers."""
    audited = [
        (record.verdict, {a.reviewer: a.verdict for a in record.audits_by_reviewers})
        for record in standing
        if record.verdict in DECIDED and record.audits_by_reviewers
    ]
    names = sorted({name for _, verdicts in audited for name in verdicts})
    if len(names) < 2:
        return None
    pairs = []
    for first, second in combinations(names, 2):
        both = [(judge, v[first], v[second]) for judge, v in audited if first in v and second in v]
        pairs.append(
            ReviewerPair(
                first,
                second,
                kappa_figures([(a, b) for _, a, b in both]),
                kappa_figures([(judge, a) for judge, a, _ in both]),
                kappa_figures([(judge, b) for judge, _, b in both]),
                kappa_figures([(judge, a) for judge, a, b in both if a == b]),
            )
        )
    judge = [
        JudgeVsReviewer(name, kappa_figures([(j, v[name]) for j, v in audited if name in v]))
        for name in names
    ]
    agreed = [(j, next(iter(v.values()))) for j, v in audited if len(set(v.values())) == 1]
    judge.append(JudgeVsReviewer("consensus", kappa_figures(agreed)))
    return Reviewers(names, pairs, judge, disagreed=len(audited) - len(agreed))


def _round(value: float) -> float:
    return round(value, 6)
