"""A human-validated score: the prediction-powered estimate of a system's score.

Prediction-powered inference (Angelopoulos, Bates, Fannjiang, Jordan and Zrnic, "Prediction-powered
inference", Science 382, 2023; mean estimation, their Example 1 / Algorithm for the mean) estimates
the mean of a label Y from many cheap predictions f and a few true labels: here f is the judge's (or
T1's) verdict on every answer it decided (1 for pass), Y a person's blind audit of a uniform sample
of them (`audit.draw_audit_sample`). With N decided answers and n audited,

    theta = mean_N(f) + mean_n(Y - f)                    the judge's rate, corrected by the rectifier
    se    = sqrt(var_N(f) / N + var_n(Y - f) / n)         both variances over their own sample (1/N)
    95% interval: theta +- z se,  z = 1.95996...

which is `ppi_py.ppi_mean_ci(Y, Yhat, Yhat_unlabeled, lhat=1)` with the judge's verdicts on every
decided answer as the unlabelled predictions (bench/ppi_reference.py compares the two). Unlike the
raw score's interval, this one covers the judge's own errors: it is as wide as the judge's
disagreement with people makes it.

Audits drawn with unequal chances (`adjudicate --audit N --by uncertainty`, `uncertain_draw`)
carry each its inclusion probability p; the estimate is then the active-inference form of PPI
(Zrnic and Candes, "Active statistical inference", ICML 2024; Horvitz-Thompson weighting): each
decided answer's value is its prediction f, plus (Y - f) / p for an audited one, and

    theta = mean_N(value)          se = sqrt(var_N(value) / N)

which is unbiased whatever the probabilities (an audit from a uniform draw among them counts with
p = its share of the decided answers; with every p equal to n / N, theta is the classic one).
With several reviewers, Y is their consensus: an answer they disagree on is left out, and
`reviewers_disagreed` says how many were.

A system's score also counts answers the judge did not decide: an `adjudicate` a person settled
counts as that person's verdict, exactly, and one still undecided as not a pass, as in the raw
score. With M such answers, K of them passed by a person, the estimate of the score is
(K + N theta) / (N + M), its standard error N se / (N + M). The estimate and its bounds are kept
inside [0, 1], where a score lies. At least two audits are needed: one says nothing about how the
rectifier varies.

How many more audits halve the interval's width: the width is proportional to
sqrt(a + b / n) with a = var_N(f) / N, b = var_n(Y - f); halving it needs n' with
a + b / n' = (a + b / n) / 4, so n' = b / ((a + b / n) / 4 - a). None when no number can (the
judge's own spread `a` is over a quarter of the total, every audit agreed with the judge (b = 0),
or n' is more than the decided answers).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import msgspec

from ..core.records import Record
from ..core.stats import Z95

#: Audits a validated score needs at least: the rectifier's spread is unknown from one.
MIN_AUDITS = 2


class ValidatedScore(msgspec.Struct):
    """The prediction-powered estimate of a score with its 95% interval, from `audits` audited
    answers; `more_audits_to_halve` the audits beyond these that would halve the interval's width."""

    estimate: float
    ci_low: float
    ci_high: float
    audits: int
    more_audits_to_halve: int | None = None
    #: Audited answers left out because their reviewers disagree (no consensus); UNSET when none.
    reviewers_disagreed: int | msgspec.UnsetType = msgspec.UNSET


class PpiMean(msgspec.Struct, frozen=True):
    """The prediction-powered mean of `n` labels with `big_n` predictions: point, standard error,
    and the two variance terms of the standard error (module docstring)."""

    theta: float
    se: float
    judge_term: float
    rectifier_variance: float
    n: int
    big_n: int


def ppi_mean(labels: Sequence[float], predicted: Sequence[float], all_predicted: Sequence[float]) -> PpiMean:
    """The prediction-powered mean: `labels` and their `predicted` values on the labelled sample,
    `all_predicted` on every item (module docstring). Both samples must be non-empty."""
    n, big_n = len(labels), len(all_predicted)
    if n == 0 or big_n == 0 or len(predicted) != n:
        raise ValueError("a prediction-powered mean needs labels, their predictions, and all predictions")
    rectifier = [y - f for y, f in zip(labels, predicted, strict=True)]
    mean_f = sum(all_predicted) / big_n
    mean_r = sum(rectifier) / n
    var_f = sum((f - mean_f) ** 2 for f in all_predicted) / big_n
    var_r = sum((r - mean_r) ** 2 for r in rectifier) / n
    judge_term = var_f / big_n
    return PpiMean(mean_f + mean_r, math.sqrt(judge_term + var_r / n), judge_term, var_r, n, big_n)


def active_ppi_mean(
    labels: Sequence[float],
    predicted: Sequence[float],
    probabilities: Sequence[float],
    all_predicted: Sequence[float],
) -> PpiMean:
    """The prediction-powered mean of audits drawn with unequal `probabilities` (each audited
    item's chance of being drawn): each item's value is its prediction, plus for an audited item
    its rectifier over its probability (Horvitz-Thompson); the mean of those values and the
    standard error of their mean (module docstring). The two variance terms are the judge's own
    and what the audits add, as `audits_to_halve` reads them."""
    n, big_n = len(labels), len(all_predicted)
    if n == 0 or big_n == 0 or not (len(predicted) == len(probabilities) == n):
        raise ValueError("an active prediction-powered mean needs labels, predictions and probabilities")
    sum_f = sum(all_predicted)
    sum_f2 = sum(f * f for f in all_predicted)
    correction = sum_values2 = 0.0
    for y, f, p in zip(labels, predicted, probabilities, strict=True):
        value = f + (y - f) / p
        correction += (y - f) / p
        sum_values2 += value * value - f * f  # the audited item's value replaces its prediction
    theta = (sum_f + correction) / big_n
    variance = max(0.0, (sum_f2 + sum_values2) / big_n - theta * theta)
    mean_f = sum_f / big_n
    judge_term = max(0.0, sum_f2 / big_n - mean_f * mean_f) / big_n
    se = math.sqrt(variance / big_n)
    return PpiMean(theta, se, judge_term, max(0.0, se * se - judge_term) * n, n, big_n)


def audits_to_halve(mean: PpiMean) -> int | None:
    """How many audits beyond `mean.n` would halve its interval's width; None when none can."""
    b = mean.rectifier_variance
    target = (mean.judge_term + b / mean.n) / 4 - mean.judge_term
    if b <= 0 or target <= 0:
        return None
    needed = math.ceil(b / target - 1e-9)  # the float division may land a hair above a whole number
    return needed - mean.n if needed <= mean.big_n else None


def validated_score(records: Iterable[Record]) -> ValidatedScore | None:
    """The human-validated score of the standing records of one system (or of all); None with fewer
    than `MIN_AUDITS` audits. Errors are left out, as the raw score leaves them."""
    predicted: list[float] = []
    labels: list[float] = []
    labelled_predictions: list[float] = []
    probabilities: list[float | None] = []
    settled_pass = other = disagreed = 0
    for record in records:
        if record.verdict in ("pass", "fail"):
            disagreed += record.audited_by_human is None and bool(record.audits_by_reviewers)
            f = 1.0 if record.verdict == "pass" else 0.0
            predicted.append(f)
            audit = record.audited_by_human
            if audit is not None:
                labels.append(1.0 if audit.verdict == "pass" else 0.0)
                labelled_predictions.append(f)
                chance = audit.inclusion_probability
                probabilities.append(chance if isinstance(chance, float) and chance > 0 else None)
        elif record.verdict == "adjudicate":
            other += 1
            settled_pass += record.decision is not None and record.decision.verdict == "pass"
    if len(labels) < MIN_AUDITS:
        return None
    mean = _mean(labels, labelled_predictions, probabilities, predicted)
    share = mean.big_n / (mean.big_n + other)
    estimate = (settled_pass + mean.big_n * mean.theta) / (mean.big_n + other)
    half = Z95 * mean.se * share
    return ValidatedScore(
        estimate=_clip(estimate),
        ci_low=_clip(estimate - half),
        ci_high=_clip(estimate + half),
        audits=mean.n,
        more_audits_to_halve=audits_to_halve(mean),
        reviewers_disagreed=disagreed or msgspec.UNSET,
    )


def _mean(
    labels: list[float], predicted: list[float], probabilities: list[float | None], every: list[float]
) -> PpiMean:
    """Classic PPI when every audit came from a uniform draw; else each audit weighted by the
    inverse of its inclusion probability, an audit without one taken as drawn uniformly (its
    share of the decided answers)."""
    if all(p is None for p in probabilities):
        return ppi_mean(labels, predicted, every)
    uniform = sum(p is None for p in probabilities) / len(every)
    return active_ppi_mean(labels, predicted, [uniform if p is None else p for p in probabilities], every)


def validated_scores(
    standing: Iterable[Record],
) -> tuple[dict[str, ValidatedScore], ValidatedScore | msgspec.UnsetType]:
    """Each system's validated score, and that of every answer together (UNSET, absent from totals'
    JSON, without enough audits)."""
    records = list(standing)
    by_system: dict[str, list[Record]] = {}
    for record in records:
        by_system.setdefault(record.system, []).append(record)
    per_system = {name: found for name, rows in by_system.items() if (found := validated_score(rows))}
    overall = validated_score(records)
    return per_system, msgspec.UNSET if overall is None else overall


def _clip(value: float) -> float:
    return round(min(1.0, max(0.0, value)), 6)
