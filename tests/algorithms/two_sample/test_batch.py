"""run_batch: every method on the same replicates, reproducible seeds, per-method results."""

from __future__ import annotations

import numpy as np
import pytest

from raystudy.algorithms.two_sample import (
    METHODS,
    Scenario,
    default_methods,
    generate,
    run_batch,
    run_method,
)
from raystudy.algorithms.two_sample.batch import _method_seed


def test_a_batch_reports_every_applicable_method():
    s = Scenario("concentration", n=20, m=24, effect=3.0)
    b = run_batch(s, reps=12, seed=3, permutations=39)
    assert tuple(b.reject) == default_methods("compositional")
    assert "mean_direction" not in b.reject
    for method, rej in b.reject.items():
        assert rej.shape == (12,) and rej.dtype == bool
        assert b.time_ms[method] > 0
    assert set(b.statistics) == {"harmonic_cross", "harmonic_full"}
    rates = b.rejection_rate()
    assert rates["harmonic_cross"] > rates["hotelling_ilr"]   # the same-mean blind spot


def test_methods_see_the_same_replicates_and_dropping_one_changes_no_other():
    s = Scenario("mean_shift", n=15, m=15, effect=1.0)
    full = run_batch(s, reps=6, seed=11, permutations=19)
    some = run_batch(s, reps=6, seed=11, permutations=19, methods=["energy_perm", "hotelling_ilr"])
    for m in some.reject:
        np.testing.assert_array_equal(some.reject[m], full.reject[m])
    # the batch's data are generate() under SeedSequence([seed, 0])
    x, y = generate(s, 6, np.random.default_rng(np.random.SeedSequence([11, 0])))
    direct = run_method("harmonic_cross", x, y, seed=_method_seed(11, "harmonic_cross"),
                        data="compositional")
    np.testing.assert_array_equal(direct.statistic, full.statistics["harmonic_cross"])
    other = run_batch(s, reps=6, seed=12, permutations=19, methods=["harmonic_cross"])
    assert not np.array_equal(other.statistics["harmonic_cross"],
                              full.statistics["harmonic_cross"])


def test_directional_batches_use_the_directional_methods():
    b = run_batch(Scenario("vmf", n=20, m=20, effect=0.8), reps=5, seed=0, permutations=19)
    assert "mean_direction" in b.reject and "hotelling_ilr" not in b.reject
    assert b.rejection_rate()["mean_direction"] == 1.0


def test_bad_methods_raise():
    with pytest.raises(ValueError, match="unknown method 'ttest'"):
        run_batch(Scenario(), reps=2, methods=["ttest"])
    with pytest.raises(ValueError, match="needs compositional data"):
        run_batch(Scenario("vmf"), reps=2, methods=["hotelling_ilr"])
    assert len(METHODS) == len(set(METHODS))
