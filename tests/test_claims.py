"""The studies' shared reading of statistics into Claim rows (raystudy/studies/claims.py)."""

from __future__ import annotations

import math

from raystudy.algorithms.stats import clustered_slope, paired_comparison
from raystudy.studies import claims


def test_a_paired_claim_reads_the_interval_and_the_exact_test():
    # 7 seeds, the method better on every one: the exact two-sided p is 2/2^7 = 0.016
    method = [1.0, 1.2, 0.9, 1.1, 1.3, 1.0, 1.2]
    baseline = [0.5, 0.6, 0.4, 0.7, 0.6, 0.5, 0.6]
    row = claims.paired_claim("method beats baseline", "score difference",
                              paired_comparison(method, baseline), "greater")
    assert row.verdict == "supported" and row.n == 7
    assert row.p_value == 2 / 2**7 and row.ci_low > 0
    against = claims.paired_claim("method is worse", "score difference",
                                  paired_comparison(method, baseline), "less")
    assert against.verdict == "contradicted"
    # Holm-adjusted p above 0.05: the same interval reads inconclusive, the family named
    held = claims.paired_claim("method beats baseline", "score difference",
                               paired_comparison(method, baseline), "greater",
                               p_value=0.08, family="3 baselines")
    assert held.verdict == "inconclusive at this scale"
    assert held.test.endswith("; Holm-adjusted p over 3 baselines")


def test_two_seeds_are_too_few_whatever_the_means_say():
    row = claims.paired_claim("method beats baseline", "score difference",
                              paired_comparison([2.0, 2.1], [1.0, 1.0]), "greater")
    assert row.verdict == "inconclusive at this scale"
    assert "only 2 seeds: too few for the test" in row.note
    one = claims.paired_claim("method beats baseline", "score difference",
                              paired_comparison([2.0], [1.0]), "greater")
    assert "only 1 seed: too few" in one.note


def test_a_slope_claim_uses_cluster_means_and_a_missing_claim_says_why():
    x = [0.1, 0.1, 0.3, 0.3, 0.5, 0.5, 0.7, 0.7, 0.9, 0.9]
    y = [0.0, 0.02, 0.1, 0.12, 0.2, 0.19, 0.3, 0.31, 0.4, 0.42]
    fit = clustered_slope(x, y, clusters=x)
    row = claims.slope_claim("gain rises with homophily", "slope", fit, "greater")
    assert row.n == 5 and row.verdict == "supported" and row.effect_size > 0
    missing = claims.missing_claim("DualCOIL beats DWBC", "paired", "score", "no DWBC runs")
    assert missing.verdict == "inconclusive at this scale" and missing.n == 0
    assert math.isnan(missing.effect_size) and missing.note == "no DWBC runs"
