"""tabench's human-validated score against `ppi-python`, and its coverage on generated data.

`review.validated.ppi_mean` is the prediction-powered mean of Angelopoulos et al. (Science 2023)
in the standard library. This script draws judges of varied accuracy and bias, N judged answers and
n audits, and:

1. where `ppi-python` is importable, compares tabench's estimate and 95% interval with
   `ppi_py.ppi_mean_ci(Y, Yhat, Yhat_unlabeled, alpha=0.05, lam=1)` (classic PPI, no power tuning)
   and prints the largest differences;
2. always, measures how often each interval covers the true pass rate over many draws: the
   validated score's, and the raw judge score's Wilson interval (which ignores the judge's errors);
3. always, simulates audits drawn where the judge is unsure (`adjudicate --audit N --by
   uncertainty`, `review.uncertain_draw`) against the stratified draw at the same N, over
   `--uncertainty-draws` (default 1,000) seeded gradings where the judge errs mostly on the answers
   it is unsure of: how often each 95% interval covers the true score (the floor: 94%) and each
   interval's mean width (the floor for the uncertainty draw: the stratified draw's width, measured
   in the same run). Exit 1 when a floor is missed.

`ppi-python` is heavy (numba, scikit-learn, statsmodels) and is not one of tabench's extras; install
it apart to run the comparison, e.g.

    python -m venv /tmp/ppi && /tmp/ppi/bin/pip install ppi-python msgspec
    PYTHONPATH=. /tmp/ppi/bin/python bench/ppi_reference.py [--draws 400] [--seed 1]
"""

from __future__ import annotations

import argparse
import random
import sys

from tabench_dsl.core.stats import Z95, wilson_interval
from tabench_dsl.review.audit import proportional_allocation
from tabench_dsl.review.uncertain_draw import DOUBT_WEIGHT, inclusion_probabilities, systematic_draw
from tabench_dsl.review.validated import active_ppi_mean, ppi_mean

#: (true pass rate, judge's sensitivity, judge's specificity, N answers, n audits) of each setting.
SETTINGS = [
    (0.6, 0.95, 0.90, 2000, 100),
    (0.3, 0.85, 0.97, 5000, 200),
    (0.8, 0.99, 0.60, 1000, 50),
    (0.5, 0.70, 0.70, 500, 40),
]


def draw(rng: random.Random, rate: float, sens: float, spec: float, big_n: int, n: int):
    """One generated grading: truth and judge verdict for N answers; the first n are audited."""
    truth = [1.0 if rng.random() < rate else 0.0 for _ in range(big_n)]
    judge = [
        (1.0 if rng.random() < sens else 0.0) if y else (0.0 if rng.random() < spec else 1.0) for y in truth
    ]
    order = rng.sample(range(big_n), big_n)
    audited = order[:n]
    return truth, judge, [truth[i] for i in audited], [judge[i] for i in audited]


def ours(labels, predicted, every) -> tuple[float, float, float]:
    mean = ppi_mean(labels, predicted, every)
    return mean.theta, mean.theta - Z95 * mean.se, mean.theta + Z95 * mean.se


def compare_with_ppi_python(rng: random.Random, draws: int) -> bool:
    """Largest differences to `ppi_py.ppi_mean_ci`; False when it is not installed."""
    try:
        import numpy as np
        import ppi_py
    except ImportError:
        print("ppi-python is not installed: comparison skipped (see this script's docstring)")
        return False
    worst_point = worst_bound = 0.0
    for _ in range(draws):
        setting = rng.choice(SETTINGS)
        _, judge, labels, predicted = draw(rng, *setting)
        theta, low, high = ours(labels, predicted, judge)
        y, yhat, unlabelled = np.array(labels), np.array(predicted), np.array(judge)
        ref_low, ref_high = ppi_py.ppi_mean_ci(y, yhat, unlabelled, alpha=0.05, lam=1)
        ref_point = ppi_py.ppi_mean_pointestimate(y, yhat, unlabelled, lam=1)
        worst_point = max(worst_point, abs(theta - float(np.ravel(ref_point)[0])))
        worst_bound = max(
            worst_bound, abs(low - float(np.ravel(ref_low)[0])), abs(high - float(np.ravel(ref_high)[0]))
        )
    print(
        f"against ppi_py.ppi_mean_ci (lam=1), {draws} draws: largest |point diff| {worst_point:.2e}, "
        f"largest |bound diff| {worst_bound:.2e}"
    )
    return True


def coverage(rng: random.Random, draws: int) -> None:
    """How often the validated and the raw intervals cover the true rate, per setting."""
    head = f"{'rate':>5} {'sens':>5} {'spec':>5} {'N':>6} {'n':>4}"
    print(f"{head}  validated covers  mean width  raw covers  raw width")
    for rate, sens, spec, big_n, n in SETTINGS:
        hit_v = hit_r = 0
        width_v = width_r = 0.0
        for _ in range(draws):
            truth, judge, labels, predicted = draw(rng, rate, sens, spec, big_n, n)
            true_rate = sum(truth) / big_n  # the population's rate: what a score claims to measure
            _, low, high = ours(labels, predicted, judge)
            hit_v += low <= true_rate <= high
            width_v += high - low
            interval = wilson_interval(int(sum(judge)), big_n)
            assert interval is not None
            hit_r += interval[0] <= true_rate <= interval[1]
            width_r += interval[1] - interval[0]
        print(
            f"{rate:>5} {sens:>5} {spec:>5} {big_n:>6} {n:>4}  {hit_v / draws:>16.1%}"
            f"  {width_v / draws:>10.3f}  {hit_r / draws:>10.1%}  {width_r / draws:>9.3f}"
        )


#: The unsure-judge simulation: N answers, n audits, the share of answers with a sign of doubt, the
#: judge's error rate on those and on the others, the true pass rate.
UNSURE = {"big_n": 2000, "n": 100, "unsure": 0.2, "err_unsure": 0.30, "err_sure": 0.02, "rate": 0.6}

#: The least share of draws a 95% interval must cover the true score in.
COVERAGE_FLOOR = 0.94


def unsure_grading(rng: random.Random) -> tuple[list[bool], list[float], list[float]]:
    """One grading: each answer's sign of doubt, its truth and the judge's verdict (UNSURE)."""
    big_n = UNSURE["big_n"]
    doubt = [rng.random() < UNSURE["unsure"] for _ in range(big_n)]
    truth = [1.0 if rng.random() < UNSURE["rate"] else 0.0 for _ in range(big_n)]
    judge = [
        1.0 - y if rng.random() < (UNSURE["err_unsure"] if d else UNSURE["err_sure"]) else y
        for y, d in zip(truth, doubt, strict=True)
    ]
    return doubt, truth, judge


def stratified_interval(rng: random.Random, truth, judge, n: int) -> tuple[float, float]:
    """The validated interval from a draw stratified by verdict with proportional allocation, as
    `audit.draw_audit_sample` draws (one system)."""
    strata = {
        ("s", "pass"): [i for i, f in enumerate(judge) if f],
        ("s", "fail"): [i for i, f in enumerate(judge) if not f],
    }
    counts = proportional_allocation({key: len(items) for key, items in strata.items()}, n)
    drawn = [i for key, count in counts.items() for i in rng.sample(strata[key], count)]
    mean = ppi_mean([truth[i] for i in drawn], [judge[i] for i in drawn], judge)
    return mean.theta - Z95 * mean.se, mean.theta + Z95 * mean.se


def uncertainty_interval(rng: random.Random, doubt, truth, judge, n: int) -> tuple[float, float]:
    """The validated interval from the uncertainty draw: weights, probabilities and the systematic
    draw of `uncertain_draw` over a shuffled order, each audit weighted by its inverse probability."""
    order = rng.sample(range(len(judge)), len(judge))
    probabilities = inclusion_probabilities([1.0 + DOUBT_WEIGHT * doubt[i] for i in order], n)
    chosen = systematic_draw(probabilities, rng.random())
    drawn = [order[c] for c in chosen]
    mean = active_ppi_mean(
        [truth[i] for i in drawn], [judge[i] for i in drawn], [probabilities[c] for c in chosen], judge
    )
    return mean.theta - Z95 * mean.se, mean.theta + Z95 * mean.se


def uncertainty_simulation(rng: random.Random, draws: int) -> bool:
    """Coverage and mean width of both draws' intervals; True when every floor is met."""
    n = UNSURE["n"]
    covered = {"stratified": 0, "uncertainty": 0}
    width = {"stratified": 0.0, "uncertainty": 0.0}
    for _ in range(draws):
        doubt, truth, judge = unsure_grading(rng)
        true_rate = sum(truth) / len(truth)
        for name, (low, high) in (
            ("stratified", stratified_interval(rng, truth, judge, n)),
            ("uncertainty", uncertainty_interval(rng, doubt, truth, judge, n)),
        ):
            covered[name] += low <= true_rate <= high
            width[name] += high - low
    print(
        f"unsure judge: N {UNSURE['big_n']}, n {n}, {UNSURE['unsure']:.0%} of answers with a doubt, "
        f"judge errs on {UNSURE['err_unsure']:.0%} of those and {UNSURE['err_sure']:.0%} of the rest; "
        f"{draws} seeded draws"
    )
    print(f"{'draw':<12} {'covers':>7} {'floor':>6} {'mean width':>11}")
    ok = True
    for name in ("stratified", "uncertainty"):
        share = covered[name] / draws
        ok &= share >= COVERAGE_FLOOR
        print(f"{name:<12} {share:>7.1%} {COVERAGE_FLOOR:>6.0%} {width[name] / draws:>11.4f}")
    narrower = width["uncertainty"] < width["stratified"]
    ratio = width["uncertainty"] / width["stratified"]
    print(
        f"uncertainty width / stratified width: {ratio:.3f} "
        f"({'narrower' if narrower else 'NOT narrower'}: the floor is the stratified width of this run)"
    )
    return ok and narrower


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--draws", type=int, default=400)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--uncertainty-draws", type=int, default=1000)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    compare_with_ppi_python(rng, args.draws)
    coverage(rng, args.draws)
    return 0 if uncertainty_simulation(random.Random(args.seed), args.uncertainty_draws) else 1


if __name__ == "__main__":
    sys.exit(main())
