"""The statistics of `diff` and the pairwise comparison, checked against published worked examples.

Every expected figure below was worked out by hand (the sums are written out) or is quoted from a
published example, so a change to a formula cannot pass by agreeing with itself.
"""

from __future__ import annotations

import pytest

from tabench_dsl.core.stats import (
    EXACT_UP_TO,
    PairedCounts,
    cohen_kappa,
    holm,
    mcnemar_exact,
    newcombe_paired_interval,
)


def test_newcombe_interval_matches_the_published_example() -> None:
    # Fagerland, Lydersen & Laake, "Statistical Analysis of Contingency Tables" (2017), chapter 8:
    # complete response before and after consolidation therapy (Cavo et al.), the paired table
    # [[59, 6], [16, 80]]: Newcombe square-and-add interval, estimate -0.0621,
    # 95% CI -0.1186 to -0.0046.
    counts = PairedCounts(a=59, b=6, c=16, d=80)
    low, high = newcombe_paired_interval(counts)
    estimate = (counts.b - counts.c) / counts.n
    assert estimate == pytest.approx(-0.0621, abs=5e-5)
    assert low == pytest.approx(-0.1186, abs=5e-5)
    assert high == pytest.approx(-0.0046, abs=5e-5)


def test_newcombe_interval_is_symmetric_in_the_order_of_the_two() -> None:
    low, high = newcombe_paired_interval(PairedCounts(a=59, b=16, c=6, d=80))
    assert (low, high) == pytest.approx((0.0046, 0.1186), abs=5e-5)


def test_newcombe_interval_with_no_discordant_pair_is_not_a_point() -> None:
    low, high = newcombe_paired_interval(PairedCounts(a=10, b=0, c=0, d=10))
    assert low < 0 < high


def test_newcombe_interval_of_nothing_is_none() -> None:
    assert newcombe_paired_interval(PairedCounts(0, 0, 0, 0)) is None


def test_mcnemar_exact_small_table_by_hand() -> None:
    # Bentur et al. (same book, chapter 8): b = 1, c = 7. Under H0 X ~ Binomial(8, 1/2):
    # P(X <= 1) = (C(8,0) + C(8,1)) / 2^8 = 9/256; two-sided p = 18/256 = 0.0703125.
    assert mcnemar_exact(1, 7) == 18 / 256
    assert mcnemar_exact(7, 1) == 18 / 256


def test_mcnemar_exact_cavo_table_by_hand() -> None:
    # b = 6, c = 16, n = 22: C(22,0..6) = 1, 22, 231, 1540, 7315, 26334, 74613, sum 110056;
    # p = 2 * 110056 / 2^22 = 0.052478790283203125 (the book's exact conditional p = 0.052).
    assert mcnemar_exact(6, 16) == 2 * 110056 / 2**22
    assert mcnemar_exact(6, 16) == pytest.approx(0.0525, abs=5e-5)


def test_mcnemar_exact_edges() -> None:
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(5, 5) == 1.0  # never above 1
    assert mcnemar_exact(0, 5) == 2 / 32  # only the extreme outcome: 2 * (1/2)^5
    # A large table stays exact: the tail is summed in integers (a float sum would underflow).
    assert mcnemar_exact(0, 1000) == 2 / 2**1000 > 0
    assert 0 < mcnemar_exact(300, 700) < 1e-30


@pytest.mark.parametrize(("b", "c"), [(900, 1101), (400, 1700), (1500, 1900), (1000, 1002)])
def test_mcnemar_on_large_tables_agrees_with_the_exact_integer_sum(b: int, c: int) -> None:
    # Above EXACT_UP_TO discordant pairs the tail is summed in floats: check it against the
    # integer sum written out here (Python divides big integers correctly rounded).
    from math import comb

    n, k = b + c, min(b, c)
    exact = min(1.0, 2 * sum(comb(n, i) for i in range(k + 1)) / 2**n)
    assert n > EXACT_UP_TO
    assert mcnemar_exact(b, c) == pytest.approx(exact, rel=1e-9)


def test_mcnemar_on_a_very_large_table() -> None:
    # 100,000 discordant pairs: the float tail (an integer sum this long would stall the suite)
    assert EXACT_UP_TO < 45_000 + 55_000
    assert mcnemar_exact(45_000, 55_000) == pytest.approx(8.600341645714696e-220, rel=1e-9)


def test_cohen_kappa_wikipedia_example() -> None:
    # Wikipedia, "Cohen's kappa", first example: 50 grant proposals, both yes 20, A yes B no 5,
    # A no B yes 10, both no 15. p_o = 35/50 = 0.7; p_yes = 0.5 * 0.6 = 0.3, p_no = 0.5 * 0.4 = 0.2,
    # p_e = 0.5; kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4.
    pairs = [("yes", "yes")] * 20 + [("yes", "no")] * 5 + [("no", "yes")] * 10 + [("no", "no")] * 15
    assert cohen_kappa(pairs) == pytest.approx(0.4)


def test_cohen_kappa_edges() -> None:
    assert cohen_kappa([]) is None
    assert cohen_kappa([("pass", "pass")] * 4) is None  # chance agreement 1: undefined
    assert cohen_kappa([("pass", "fail"), ("fail", "pass")]) == pytest.approx(-1.0)


def test_holm_by_hand() -> None:
    # Sorted: 0.01 * 3 = 0.03; 0.03 * 2 = 0.06; 0.04 * 1 = 0.04, raised to 0.06 (step-down keeps
    # each at least the one before). Returned in the order given.
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5, 0.9]) == [1.0, 1.0]
    assert holm([]) == []
