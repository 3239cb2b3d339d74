"""Claim rows from the statistics layer (raystudy/claims.py: `from raystudy import claims`)."""

from __future__ import annotations

import math

from raystudy import claims
from raystudy.algorithms.stats import clustered_slope, paired_comparison

S = "a test's own numbers"


def test_a_paired_claim_reads_the_interval_and_the_exact_test():
    # 7 seeds, the method better on every one: the exact two-sided p is 2/2^7 = 0.016
    method = [1.0, 1.2, 0.9, 1.1, 1.3, 1.0, 1.2]
    baseline = [0.5, 0.6, 0.4, 0.7, 0.6, 0.5, 0.6]
    row = claims.paired_claim("method beats baseline", "score difference",
                              paired_comparison(method, baseline), "greater", scope=S)
    assert row.verdict == "supported" and row.n == 7
    assert row.p_value == 2 / 2**7 and row.ci_low > 0
    against = claims.paired_claim("method is worse", "score difference",
                                  paired_comparison(method, baseline), "less", scope=S)
    assert against.verdict == "contradicted"
    # Holm-adjusted p above 0.05: the same interval reads inconclusive, the family named
    held = claims.paired_claim("method beats baseline", "score difference",
                               paired_comparison(method, baseline), "greater",
                               p_value=0.08, family="3 baselines", scope=S)
    assert held.verdict == "inconclusive at this scale"
    assert held.test.endswith("; Holm-adjusted p over 3 baselines")


def test_two_seeds_are_too_few_whatever_the_means_say():
    row = claims.paired_claim("method beats baseline", "score difference",
                              paired_comparison([2.0, 2.1], [1.0, 1.0]), "greater", scope=S)
    assert row.verdict == "inconclusive at this scale"
    assert "only 2 seeds: too few for the test" in row.note
    one = claims.paired_claim("method beats baseline", "score difference",
                              paired_comparison([2.0], [1.0]), "greater", scope=S)
    assert "only 1 seed: too few" in one.note


def test_a_slope_claim_uses_cluster_means_and_a_missing_claim_says_why():
    x = [0.1, 0.1, 0.3, 0.3, 0.5, 0.5, 0.7, 0.7, 0.9, 0.9]
    y = [0.0, 0.02, 0.1, 0.12, 0.2, 0.19, 0.3, 0.31, 0.4, 0.42]
    fit = clustered_slope(x, y, clusters=x)
    row = claims.slope_claim("gain rises with homophily", "slope", fit, "greater", scope=S)
    assert row.n == 5 and row.verdict == "supported" and row.effect_size > 0
    missing = claims.missing_claim("DualCOIL beats DWBC", "paired", "score", "no DWBC runs",
                                   scope=S)
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
    rows = claims.holm_family(tests, "3 datasets", scope=S)
    assert [r.verdict for r in rows] == ["supported"] * 3
    assert all(r.p_value == 3 * 2 / 2**7 for r in rows)
    assert all(r.test.endswith("Holm-adjusted p over 3 datasets") for r in rows)
    flat = paired_comparison([0.5, 0.6, 0.4, 0.7, 0.6, 0.5, 0.6], base)
    rows = claims.holm_family([*tests, claims.Test("null", "d", flat, "greater")], "", scope=S)
    assert [r.verdict for r in rows[:3]] == ["inconclusive at this scale"] * 3
    assert rows[3].test.endswith("Holm-adjusted p over 4 tests")


def test_an_equivalence_claim_needs_the_interval_inside_the_margin():
    from raystudy.algorithms.stats import equivalence

    base = [0.50, 0.52, 0.49, 0.51, 0.50, 0.53, 0.48, 0.51]
    close = [b + e for b, e in zip(base, [0.01, -0.01, 0.0, 0.005, -0.005, 0.01, -0.01, 0.0],
                                   strict=True)]
    row = claims.equivalence_claim("same loss", "loss difference",
                                   equivalence(close, base, margin=0.05), margin=0.05, scope=S)
    assert row.verdict == "supported" and "margin +-0.05" in row.note
    far = [b + 0.2 for b in base]
    row = claims.equivalence_claim("same loss", "loss difference",
                                   equivalence(far, base, margin=0.05), margin=0.05, scope=S)
    assert row.verdict == "contradicted"


def test_the_unit_of_the_pairs_is_named_in_the_test_and_the_note():
    result = paired_comparison([1.0, 2.0], [0.5, 1.5], unit="batches")
    assert result.test.startswith("paired over 2 batches:") and result.unit == "batches"
    row = claims.paired_claim("x", "d", result, "greater", scope=S)
    assert "only 2 batches: too few" in row.note


# ---------------------------------------------------------------- preconditions, scope, not run
STRONG = paired_comparison([1.0, 1.2, 0.9, 1.1, 1.3, 1.0, 1.2], [0.5, 0.6, 0.4, 0.7, 0.6, 0.5, 0.6])


def test_a_failed_precondition_turns_a_supported_verdict_into_precondition_failed():
    size = claims.Precondition("the test holds its size at alpha 0.05", False,
                               "size 0.089 over 2,000 null replicates")
    fine = claims.Precondition("each arm above chance", True, "accuracies 0.61, 0.58 > 0.25")
    held = claims.paired_claim("A beats B", "d", STRONG, "greater", scope=S,
                               preconditions=[fine])
    assert held.verdict == "supported" and held.preconditions == (fine,)
    gated = claims.paired_claim("A beats B", "d", STRONG, "greater", scope=S,
                                preconditions=[fine, size])
    assert gated.verdict == "precondition failed"
    # the effect and interval are still shown, the note names the failed one and its evidence
    assert gated.effect_size == held.effect_size and gated.ci_low == held.ci_low
    assert "the test holds its size" in gated.note and "size 0.089" in gated.note
    assert "each arm above chance" not in gated.note and "'supported'" in gated.note
    assert gated.failed_preconditions == (size,)


def test_every_helper_takes_preconditions_and_a_slope_or_equivalence_is_gated_too():
    from raystudy.algorithms.stats import equivalence

    fails = claims.Precondition("a measurable drop", False, "drop 0.001 < 0.01")
    x = [0.1, 0.1, 0.3, 0.3, 0.5, 0.5, 0.7, 0.7, 0.9, 0.9]
    fit = clustered_slope(x, [2 * v for v in x], clusters=x)
    assert claims.slope_claim("rises", "slope", fit, "greater", scope=S,
                              preconditions=[fails]).verdict == "precondition failed"
    base = [0.50, 0.52, 0.49, 0.51, 0.50, 0.53, 0.48, 0.51]
    row = claims.equivalence_claim("same", "d", equivalence(base, base, margin=0.05), 0.05,
                                   scope=S, preconditions=[fails])
    assert row.verdict == "precondition failed" and "margin +-0.05" in row.note


def test_a_gated_member_keeps_its_place_in_the_holm_adjustment():
    # three strong members, raw p 2/128: Holm over 3 gives 0.047 (supported). Gating one
    # must not shrink the family to 2 (0.031): the others still read 3 x 2/128.
    fails = claims.Precondition("arm above chance", False, "0.235 < 0.25")
    tests = [claims.Test(f"claim {i}", "d", STRONG, "greater",
                         preconditions=(fails,) if i == 0 else ()) for i in range(3)]
    rows = claims.holm_family(tests, "3 cells", scope=S)
    assert [r.verdict for r in rows] == ["precondition failed", "supported", "supported"]
    assert all(r.p_value == 3 * 2 / 2**7 for r in rows)
    own = claims.holm_family([claims.Test("x", "d", STRONG, "greater", scope="CUDA")], "",
                             scope=S)
    assert own[0].scope == "CUDA"


def test_a_claim_without_a_scope_is_an_error_not_a_default():
    import pytest

    with pytest.raises(TypeError):
        claims.paired_claim("A beats B", "d", STRONG, "greater")  # scope is required
    with pytest.raises(ValueError, match="has no scope"):
        claims.paired_claim("A beats B", "d", STRONG, "greater", scope="  ")
    with pytest.raises(ValueError, match="has no scope"):
        claims.holm_family([claims.Test("x", "d", STRONG, "greater")], "")


def test_a_claim_cannot_print_a_verdict_its_precondition_denies():
    import pytest

    fails = claims.Precondition("size holds", False, "0.09")
    with pytest.raises(ValueError, match="although its precondition failed"):
        claims.Claim("x", "t", "d", 1.0, 0.5, 1.5, 7, "supported", scope=S,
                     preconditions=(fails,))
    with pytest.raises(ValueError, match="names no failed precondition"):
        claims.Claim("x", "t", "d", 1.0, 0.5, 1.5, 7, "precondition failed", scope=S)
    with pytest.raises(ValueError, match="is not one of"):
        claims.Claim("x", "t", "d", 1.0, 0.5, 1.5, 7, "likely", scope=S)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="states what must hold"):
        claims.Precondition("", True, "e")


def test_not_run_names_the_regime_and_why():
    row = claims.not_run("WBMM is faster on GPU", "CUDA, batch 32", "this run had no GPU")
    assert row.verdict == "not run" and row.scope == "CUDA, batch 32" and row.n == 0
    assert math.isnan(row.effect_size) and row.note == "this run had no GPU"


def test_the_verdict_vocabulary_is_one_literal_and_stats_reads_a_subset_of_it():
    import typing

    from raystudy import Verdict
    from raystudy.algorithms import stats

    assert typing.get_args(Verdict) == claims.VERDICTS
    assert set(typing.get_args(stats.Verdict)) <= set(claims.VERDICTS)
    assert {"precondition failed", "not run"} <= set(claims.VERDICTS)
