"""The statistics layer against scipy, hand computation and a seeded simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from raystudy.algorithms.stats import (
    CONTRADICTED,
    INCONCLUSIVE,
    SUPPORTED,
    bootstrap_mean_ci,
    clustered_slope,
    equivalence,
    holm,
    non_inferiority,
    paired_comparison,
    sign_flip_test,
    verdict,
)


def _scipy_paired_p(m, b, alternative):
    def statistic(x, y, axis):
        return np.mean(x - y, axis=axis)

    return sps.permutation_test((m, b), statistic, permutation_type="samples",
                                vectorized=True, n_resamples=10**6,
                                alternative=alternative).pvalue


@pytest.mark.parametrize("n", [3, 5, 8])
@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_sign_flip_p_matches_scipy_exact_permutation_test(n, alternative):
    rng = np.random.default_rng(n)
    b = rng.normal(size=n)
    m = b + rng.normal(0.4, 1.0, size=n)
    p, exact = sign_flip_test(m - b, alternative)
    assert exact
    assert p == pytest.approx(_scipy_paired_p(m, b, alternative), rel=1e-12)


def test_sign_flip_closed_forms_and_monte_carlo():
    # every seed positive: only the observed pattern is as extreme on its side
    p, _ = sign_flip_test([1.0, 2.0, 3.0, 4.0, 5.0])
    assert p == pytest.approx(2 / 32)
    assert sign_flip_test([1.0, 2.0, 3.0], "greater")[0] == pytest.approx(1 / 8)
    assert sign_flip_test([0.0, 0.0, 0.0])[0] == 1.0
    assert math.isnan(sign_flip_test([])[0])
    # above 16 seeds: Monte Carlo, close to the exact value from the normal approximation
    d = np.random.default_rng(1).normal(0.3, 1.0, size=40)
    p, exact = sign_flip_test(d)
    assert not exact
    z = d.mean() / math.sqrt(np.mean(d**2) / d.size)
    assert p == pytest.approx(2 * sps.norm.sf(abs(z)), abs=0.02)


def test_paired_comparison_drops_non_finite_seeds_and_says_which_test():
    r = paired_comparison([2.0, 3.0, math.nan, 5.0], [1.0, 1.0, 1.0, 1.0])
    assert r.n == 3 and r.mean_difference == pytest.approx(7 / 3)
    assert r.ci_low >= 1.0 and r.ci_high <= 4.0  # within the range of the differences
    assert r.p_value == pytest.approx(0.25)
    assert "exact over all 8 sign patterns" in r.test and "two-sided" in r.test
    with pytest.raises(ValueError):
        paired_comparison([1.0, 2.0], [1.0])


def test_bootstrap_ci_covers_the_true_mean_about_95_percent_of_the_time():
    rng = np.random.default_rng(0)
    hits = 0
    for trial in range(200):
        sample = rng.normal(1.5, 2.0, size=30)
        low, high = bootstrap_mean_ci(sample, resamples=2000, seed=trial)
        hits += low <= 1.5 <= high
    assert 0.88 <= hits / 200 <= 0.99
    # fixed seed: reproducible; a constant sample has a zero-width interval
    sample = rng.normal(size=10)
    assert bootstrap_mean_ci(sample) == bootstrap_mean_ci(sample)
    assert bootstrap_mean_ci([2.0, 2.0, 2.0]) == (2.0, 2.0)
    assert all(math.isnan(v) for v in bootstrap_mean_ci([]))


def test_holm_on_a_hand_computed_family():
    # sorted 0.01, 0.02, 0.03, 0.04 (m = 4): 0.04, 0.06, 0.06 (monotone), 0.06 ... capped
    adjusted = holm([0.03, 0.01, 0.04, 0.02])
    np.testing.assert_allclose(adjusted, [0.06, 0.04, 0.06, 0.06])
    np.testing.assert_allclose(holm([0.5, 0.6]), [1.0, 1.0])   # capped at 1
    np.testing.assert_allclose(holm([0.01]), [0.01])
    out = holm([0.01, math.nan, 0.04])                          # nan: not in the family
    assert out[0] == pytest.approx(0.02) and math.isnan(out[1]) and out[2] == pytest.approx(0.04)


def test_clustered_slope_equals_linregress_on_the_cluster_means():
    rng = np.random.default_rng(3)
    h = np.array([0.1, 0.3, 0.5, 0.7, 0.9])
    x = np.repeat(h, 6) + rng.normal(0, 0.01, size=30)       # per-seed homophily jitters
    y = 0.2 * np.repeat(h, 6) + rng.normal(0, 0.05, size=30)
    groups = np.repeat(["a", "b", "c", "d", "e"], 6)
    fit = clustered_slope(x, y, groups)
    cx = np.array([x[groups == g].mean() for g in "abcde"])
    cy = np.array([y[groups == g].mean() for g in "abcde"])
    ref = sps.linregress(cx, cy)
    assert fit.clusters == 5 and fit.observations == 30
    assert fit.slope == pytest.approx(ref.slope) and fit.intercept == pytest.approx(ref.intercept)
    half = sps.t.ppf(0.975, 3) * ref.stderr
    assert (fit.ci_low, fit.ci_high) == pytest.approx((ref.slope - half, ref.slope + half))
    assert fit.p_value == pytest.approx(ref.pvalue)
    assert "3 df" in fit.test


def test_clustered_slope_is_wider_than_pooling_the_runs():
    rng = np.random.default_rng(4)
    h = np.repeat([0.2, 0.5, 0.8], 10)
    y = np.repeat(rng.normal(0, 0.1, 3), 10) + rng.normal(0, 0.01, 30)  # cluster effects
    fit = clustered_slope(h, y, h)
    pooled = sps.linregress(h, y)
    assert fit.ci_high - fit.ci_low > 4 * sps.t.ppf(0.975, 28) * pooled.stderr


def test_clustered_slope_needs_three_distinct_clusters():
    fit = clustered_slope([0.1, 0.1, 0.5, 0.5], [1.0, 2.0, 3.0, 4.0], ["a", "a", "b", "b"])
    assert fit.clusters == 2 and math.isnan(fit.slope) and math.isnan(fit.ci_low)
    fit = clustered_slope([0.1, 0.1, 0.1], [1.0, 2.0, 3.0], ["a", "b", "c"])
    assert math.isnan(fit.slope)
    fit = clustered_slope([0.1, 0.5, math.nan, 0.9], [1.0, 2.0, 3.0, 2.0], list("abcd"))
    assert fit.clusters == 3 and fit.observations == 3


@pytest.mark.parametrize("low, high, direction, expected", [
    (0.1, 0.5, "greater", SUPPORTED),
    (-0.5, -0.1, "greater", CONTRADICTED),
    (-0.1, 0.5, "greater", INCONCLUSIVE),
    (0.0, 0.5, "greater", INCONCLUSIVE),        # touching 0 is not "wholly above"
    (-0.5, -0.1, "less", SUPPORTED),
    (0.1, 0.5, "less", CONTRADICTED),
    (-0.5, 0.0, "less", INCONCLUSIVE),
    (math.nan, 0.5, "greater", INCONCLUSIVE),
])
def test_verdict_reads_the_interval_against_the_claimed_side(low, high, direction, expected):
    assert verdict(low, high, direction) == expected


def test_verdict_is_inconclusive_below_three_units_or_when_the_test_fails():
    assert verdict(0.1, 0.5, "greater", n=2) == INCONCLUSIVE
    assert verdict(0.1, 0.5, "greater", n=3) == SUPPORTED
    assert verdict(0.1, 0.5, "greater", n=5, p_value=0.0625) == INCONCLUSIVE
    assert verdict(-0.5, -0.1, "greater", n=6, p_value=0.03) == CONTRADICTED
    assert verdict(0.1, 0.5, "greater", n=6, p_value=math.nan) == INCONCLUSIVE
    with pytest.raises(ValueError):
        verdict(0.1, 0.5, "up")  # type: ignore[arg-type]


def test_equivalence_is_two_one_sided_sign_flip_tests_on_shifted_differences():
    """TOST by hand: d = (0.1, -0.2, 0.05, 0.0, 0.15, -0.05), margin 0.5. Shifted by +0.5
    every difference is positive, so the one-sided p is the one pattern of 64 with all
    signs kept: 1/64; likewise for -0.5 (all negative). p = max = 1/64."""
    d = np.array([0.1, -0.2, 0.05, 0.0, 0.15, -0.05])
    result = equivalence(d, np.zeros(6), margin=0.5)
    assert result.p_value == pytest.approx(1 / 64)
    assert result.mean_difference == pytest.approx(d.mean())
    assert "90%" in result.test and "equivalence within +-0.5" in result.test
    assert verdict(result.ci_low, result.ci_high, "within", n=result.n,
                   p_value=result.p_value, margin=0.5) == SUPPORTED
    # with a margin of 0.06 the shifted differences change sign: p above alpha
    tight = equivalence(d, np.zeros(6), margin=0.06)
    low, _ = sign_flip_test(d + 0.06, "greater")
    high, _ = sign_flip_test(d - 0.06, "less")
    assert tight.p_value == pytest.approx(max(low, high)) and tight.p_value > 0.05
    assert verdict(tight.ci_low, tight.ci_high, "within", n=6, p_value=tight.p_value,
                   margin=0.06) == INCONCLUSIVE
    with pytest.raises(ValueError, match="margin"):
        equivalence(d, np.zeros(6), margin=0.0)


@pytest.mark.parametrize("low, high, margin, expected", [
    (-0.1, 0.1, 0.2, SUPPORTED),
    (-0.3, 0.1, 0.2, INCONCLUSIVE),     # a wide interval around 0 is not a match
    (0.25, 0.6, 0.2, CONTRADICTED),     # wholly outside: contradicted whatever TOST's p
    (-0.9, -0.21, 0.2, CONTRADICTED),
])
def test_verdict_within_a_margin(low, high, margin, expected):
    assert verdict(low, high, "within", n=8, p_value=0.5 if expected != SUPPORTED else 0.01,
                   margin=margin) == expected


def test_non_inferiority_shifts_by_the_margin_on_the_worse_side():
    d = np.array([-0.02, 0.01, -0.01, 0.0, -0.03, 0.02, -0.01, 0.0])
    result = non_inferiority(d, np.zeros(8), margin=0.05)          # higher is better
    assert result.p_value == pytest.approx(sign_flip_test(d + 0.05, "greater")[0])
    assert result.p_value == pytest.approx(1 / 256)
    assert verdict(result.ci_low, result.ci_high, "greater", n=8, p_value=result.p_value,
                   margin=0.05) == SUPPORTED
    assert verdict(result.ci_low, result.ci_high, "greater", n=8, margin=0.0) == INCONCLUSIVE
    lower_better = non_inferiority(-d, np.zeros(8), margin=0.05, direction="less")
    assert lower_better.p_value == pytest.approx(result.p_value)
    assert verdict(-0.2, -0.1, "greater", n=8, p_value=0.9, margin=0.05) == CONTRADICTED
