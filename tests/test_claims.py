"""Claim rows from the statistics layer (raystudy/claims.py: `from raystudy import claims`)."""

from __future__ import annotations

import math

from raystudy import claims
from raystudy.algorithms.stats import clustered_slope, paired_comparison


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


def test_a_holm_family_reads_each_claim_with_its_adjusted_p():
    # three comparisons over 7 seeds with raw p 2/128 each: Holm multiplies the smallest
    # by 3 (0.047, still <= 0.05), so all three stay supported; a fourth weak member
    # (p = 1) does not move the others' adjusted p above 0.0625 = 4 x 2/128.
    better = [1.0, 1.2, 0.9, 1.1, 1.3, 1.0, 1.2]
    base = [0.5, 0.6, 0.4, 0.7, 0.6, 0.5, 0.6]
    strong = paired_comparison(better, base)
    tests = [claims.Test(f"claim {i}", "difference", strong, "greater") for i in range(3)]
    rows = claims.holm_family(tests, "3 datasets")
    assert [r.verdict for r in rows] == ["supported"] * 3
    assert all(r.p_value == 3 * 2 / 2**7 for r in rows)
    assert all(r.test.endswith("Holm-adjusted p over 3 datasets") for r in rows)
    flat = paired_comparison([0.5, 0.6, 0.4, 0.7, 0.6, 0.5, 0.6], base)
    rows = claims.holm_family([*tests, claims.Test("null", "d", flat, "greater")], "")
    assert [r.verdict for r in rows[:3]] == ["inconclusive at this scale"] * 3
    assert rows[3].test.endswith("Holm-adjusted p over 4 tests")


def test_an_equivalence_claim_needs_the_interval_inside_the_margin():
    from raystudy.algorithms.stats import equivalence

    base = [0.50, 0.52, 0.49, 0.51, 0.50, 0.53, 0.48, 0.51]
    close = [b + e for b, e in zip(base, [0.01, -0.01, 0.0, 0.005, -0.005, 0.01, -0.01, 0.0],
                                   strict=True)]
    row = claims.equivalence_claim("same loss", "loss difference",
                                   equivalence(close, base, margin=0.05), margin=0.05)
    assert row.verdict == "supported" and "margin +-0.05" in row.note
    far = [b + 0.2 for b in base]
    row = claims.equivalence_claim("same loss", "loss difference",
                                   equivalence(far, base, margin=0.05), margin=0.05)
    assert row.verdict == "contradicted"


def test_the_unit_of_the_pairs_is_named_in_the_test_and_the_note():
    result = paired_comparison([1.0, 2.0], [0.5, 1.5], unit="batches")
    assert result.test.startswith("paired over 2 batches:") and result.unit == "batches"
    row = claims.paired_claim("x", "d", result, "greater")
    assert "only 2 batches: too few" in row.note
