"""The statistics of both halves (calibrate, totals, diff, comparisons, audits): pure functions, one job each.

Everything here is the standard library (`math.comb`, exact integer arithmetic): the exact binomial
tail McNemar's test needs is a sum of binomial coefficients, Holm's correction is a sort, and
Newcombe's interval is two Wilson intervals and a correlation. A statistics package (scipy is tens
of megabytes, statsmodels pulls in pandas) would bring none of these more exactly, and tabench
installs in seconds without one.

Paired counts follow the usual 2x2 table of two verdicts on the same items:

                 B pass   B not
        A pass     a        b
        A not      c        d

`b` and `c` are the discordant pairs: only they carry evidence of a difference between A and B.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

import msgspec

#: z for a two-sided 95% interval.
Z95 = 1.959963984540054
#: Most discordant pairs `mcnemar_exact` sums in exact integers; above it, in floats from lgamma.
EXACT_UP_TO = 2000


class PairedCounts(msgspec.Struct, frozen=True):
    """The 2x2 table of two paired pass/not-pass outcomes (see the module docstring)."""

    a: int
    b: int
    c: int
    d: int

    @property
    def n(self) -> int:
        return self.a + self.b + self.c + self.d


def wilson_interval(successes: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    """The Wilson score interval for a binomial proportion, None when n is 0."""
    if n <= 0:
        return None
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def mcnemar_exact(b: int, c: int) -> float:
    """McNemar's exact two-sided p-value: the binomial test of `b` successes in `b + c` trials at 1/2.

    Under no difference each discordant pair is equally likely to fall either way, so the smaller of
    `b` and `c` is compared with Binomial(b + c, 1/2): p = min(1, 2 * P(X <= min(b, c))). No
    discordant pair is no evidence at all: p = 1.

    Up to `EXACT_UP_TO` discordant pairs the tail is summed in integers and divided once: the
    correctly rounded value. Beyond, integers thousands of digits long make each pair cost seconds
    (a run of 30 systems compares 435 pairs), so the tail is summed in floats from its largest term,
    P(X = k) from `math.lgamma`, down to where the terms no longer change the sum: relative error
    about 1e-10, far below any significance level."""
    n = b + c
    if n == 0:
        return 1.0
    k = min(b, c)
    if n <= EXACT_UP_TO:
        coefficient, tail = 1, 0  # C(n, i), stepped from i = 0 without recomputing factorials
        for i in range(k + 1):
            tail += coefficient
            coefficient = coefficient * (n - i) // (i + 1)
        return min(1.0, 2 * tail / 2**n)
    log_top = math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) - n * math.log(2)
    ratio_sum, ratio = 1.0, 1.0  # the tail over P(X = k): 1 + P(k-1)/P(k) + ...
    for i in range(k, 0, -1):
        ratio *= i / (n - i + 1)  # P(X = i - 1) / P(X = k)
        ratio_sum += ratio
        if ratio < ratio_sum * 1e-17:
            break
    return min(1.0, 2 * math.exp(log_top + math.log(ratio_sum)))


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given.

    Sorted ascending, the i-th smallest (0-based) of m is multiplied by m - i; each adjusted value is
    at least the one before it (the step-down stops at the first that is not significant) and at
    most 1. A pair is significant at level alpha when its adjusted value is <= alpha: the chance of
    any false claim among all the pairs stays under alpha, however many pairs there are."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def newcombe_paired_interval(counts: PairedCounts, z: float = Z95) -> tuple[float, float] | None:
    """Newcombe's (1998) method 10 interval for the paired difference p_A - p_B, None when n is 0.

    p_A = (a + b) / n and p_B = (a + c) / n. Each proportion gets its Wilson score interval; the two
    are combined "square and add", corrected by phi, the correlation of the paired outcomes (with
    Newcombe's continuity adjustment: a positive `ad - bc` is reduced by n / 2, not below 0; phi is
    0 where a margin is empty). Unlike the Wald interval it stays inside [-1, 1] and does not
    collapse to a point when there are no discordant pairs."""
    a, b, c, d, n = counts.a, counts.b, counts.c, counts.d, counts.n
    if n == 0:
        return None
    p1, p2 = (a + b) / n, (a + c) / n
    first, second = wilson_interval(a + b, n, z), wilson_interval(a + c, n, z)
    assert first is not None and second is not None  # n > 0
    (l1, u1), (l2, u2) = first, second
    margins = (a + b) * (c + d) * (a + c) * (b + d)
    phi = 0.0
    if margins:
        cross = float(a * d - b * c)
        if cross > n / 2:
            cross -= n / 2
        elif cross > 0:
            cross = 0.0
        phi = cross / math.sqrt(margins)
    diff = p1 - p2
    low = diff - math.sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2))
    high = diff + math.sqrt(max(0.0, (p2 - l2) ** 2 - 2 * phi * (p2 - l2) * (u1 - p1) + (u1 - p1) ** 2))
    return max(-1.0, low), min(1.0, high)


#: A rating: any value that can be counted.
R = TypeVar("R", bound=Hashable)


def cohen_kappa(pairs: Sequence[tuple[Hashable, Hashable]]) -> float | None:
    """Cohen's kappa of two ratings of the same items: (observed - chance agreement) / (1 - chance).

    Chance agreement is the sum over categories of the product of the two raters' shares. None
    when there is no item, or when chance agreement is 1 (both gave one and the same category to
    every item: agreement is total but kappa is undefined)."""
    counts: dict[tuple[Hashable, Hashable], int] = {}
    for pair in pairs:
        counts[pair] = counts.get(pair, 0) + 1
    return cohen_kappa_of_counts(counts)


def cohen_kappa_of_counts(counts: Mapping[tuple[R, R], int]) -> float | None:
    """`cohen_kappa` of the items whose (first rating, second rating) `counts` counts: the same
    figure from a table of the ratings' combinations (exact integer sums, so the same float)."""
    n = sum(counts.values())
    if n == 0:
        return None
    first: dict[R, int] = {}
    second: dict[R, int] = {}
    agreed = 0
    for (x, y), count in counts.items():
        first[x] = first.get(x, 0) + count
        second[y] = second.get(y, 0) + count
        agreed += count if x == y else 0
    observed = agreed / n
    chance = sum(count * second.get(category, 0) for category, count in first.items()) / (n * n)
    if chance >= 1.0:
        return None
    return (observed - chance) / (1 - chance)
