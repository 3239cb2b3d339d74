"""Permutation energy and MMD tests against direct formulas and scipy's exact permutation
test; cross-MMD against Shekhar et al.'s formulas with a scipy Gaussian kernel."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from scipy.spatial.distance import cdist, pdist

from raystudy.algorithms.two_sample import (
    cross_mmd_test,
    energy_permutation_test,
    mmd_permutation_test,
)
from raystudy.algorithms.two_sample.harmonic_test import cross_split_statistic
from raystudy.algorithms.two_sample.kernel_baselines import gaussian_gram, median_bandwidth
from raystudy.algorithms.two_sample.samples import to_sphere


def energy_reference(U, V):
    """Szekely & Rizzo's E with V-statistic means (as R energy and dcor compute it)."""
    n, m = len(U), len(V)
    return n * m / (n + m) * (2 * cdist(U, V).mean() - cdist(U, U).mean() - cdist(V, V).mean())


def mmd_reference(U, V, h):
    """Gretton et al.'s unbiased MMD^2 with exp(-d^2 / (2 h^2))."""
    def k(A, B):
        return np.exp(-cdist(A, B, "sqeuclidean") / (2 * h * h))
    n, m = len(U), len(V)
    Kxx, Kyy = k(U, U), k(V, V)
    return ((Kxx.sum() - np.trace(Kxx)) / (n * (n - 1)) + (Kyy.sum() - np.trace(Kyy))
            / (m * (m - 1)) - 2 * k(U, V).mean())


def small_pair(seed, n=4, m=4):
    rng = np.random.default_rng(seed)
    return rng.dirichlet([2, 2, 2], n), rng.dirichlet([1, 2, 4], m)


def exact_pvalue(U, V, statistic):
    """scipy's permutation test over all C(n + m, n) relabellings of the pooled rows."""
    Z, n = np.r_[U, V], len(U)
    index = np.arange(len(Z))
    res = stats.permutation_test((index[:n], index[n:]),
                                 lambda a, b: statistic(Z[a], Z[b]),
                                 permutation_type="independent", vectorized=False,
                                 n_resamples=10_000, alternative="greater")
    return res.pvalue


@pytest.mark.parametrize("seed", [0, 1])
def test_energy_test_matches_the_direct_statistic_and_scipys_exact_permutation_pvalue(seed):
    x, y = small_pair(seed)
    U, V = to_sphere(x), to_sphere(y)
    res = energy_permutation_test(x, y, permutations=4000, seed=seed)
    assert res.statistic == pytest.approx(energy_reference(U, V), rel=1e-10)
    exact = exact_pvalue(U, V, energy_reference)  # 70 partitions
    assert res.pvalue == pytest.approx(exact, abs=0.03)


def test_mmd_test_matches_the_direct_statistic_and_scipys_exact_permutation_pvalue():
    x, y = small_pair(2)
    U, V = to_sphere(x), to_sphere(y)
    h = np.median(pdist(np.r_[U, V]))
    res = mmd_permutation_test(x, y, permutations=4000, seed=1)
    assert res.statistic == pytest.approx(mmd_reference(U, V, h), rel=1e-10)
    exact = exact_pvalue(U, V, lambda a, b: mmd_reference(a, b, h))
    assert res.pvalue == pytest.approx(exact, abs=0.03)


def test_permutation_tests_hold_their_level_and_see_a_shift():
    rng = np.random.default_rng(3)
    X, Y = rng.dirichlet([2, 2, 2], (200, 30)), rng.dirichlet([2, 2, 2], (200, 30))
    Y_alt = rng.dirichlet([4, 2, 2], (200, 30))
    for test in (energy_permutation_test, mmd_permutation_test):
        assert 0.015 <= test(X, Y, permutations=99).reject.mean() <= 0.095
        assert test(X, Y_alt, permutations=99).reject.mean() > 0.5
    p = energy_permutation_test(X[:5], Y[:5], permutations=99).pvalue
    assert np.all((p >= 0.01) & (p <= 1)) and np.allclose(p * 100, np.round(p * 100))


def test_permutation_pvalues_do_not_depend_on_batching():
    rng = np.random.default_rng(4)
    X, Y = rng.dirichlet([2, 2, 2], (3, 12)), rng.dirichlet([2, 3, 2], (3, 14))
    batch = energy_permutation_test(X, Y, permutations=50, seed=9)
    alone = energy_permutation_test(X[0], Y[0], permutations=50, seed=9)
    assert batch.pvalue[0] == alone.pvalue and batch.statistic[0] == alone.statistic


def test_cross_mmd_matches_shekhar_et_al_with_a_scipy_gaussian_kernel():
    rng = np.random.default_rng(5)
    U, V = to_sphere(rng.dirichlet([2, 2, 2], 11)), to_sphere(rng.dirichlet([3, 2, 1], 9))
    h = np.median(pdist(np.r_[U, V]))
    assert median_bandwidth(np.r_[U, V][None])[0] == pytest.approx(h, rel=1e-12)

    def rbf(A, B):
        return np.exp(-cdist(A, B, "sqeuclidean") / (2 * h * h))

    n1, m1 = 5, 4
    Kxx, Kyy = rbf(U[:n1], U[n1:]), rbf(V[:m1], V[m1:])
    Kxy, Kyx = rbf(U[:n1], V[m1:]), rbf(V[:m1], U[n1:])
    Ux, Uy = Kxx.mean() - Kxy.mean(), Kyx.mean() - Kyy.mean()
    sx = ((Kxx.mean(1) - Kxy.mean(1) - Ux) ** 2).mean()
    sy = ((Kyx.mean(1) - Kyy.mean(1) - Uy) ** 2).mean()
    T_ref = (Ux - Uy) / np.sqrt(sx / n1 + sy / m1)
    _, T = cross_split_statistic(U[None], V[None],
                                 lambda A, B: gaussian_gram(A, B, np.array([h])))
    assert T[0] == pytest.approx(T_ref, rel=1e-10)
    res = cross_mmd_test(rng.dirichlet([2, 2, 2], 40), rng.dirichlet([2, 2, 2], 40))
    assert np.isfinite(res.statistic) and res.pvalue == pytest.approx(stats.norm.sf(res.statistic))


def test_kernel_baselines_run_on_directional_data():
    rng = np.random.default_rng(6)
    mu = np.array([0.0, 0.0, 1.0])
    X = stats.vonmises_fisher(mu, 5).rvs((30,), random_state=rng)
    Y = stats.vonmises_fisher(mu, 5).rvs((30,), random_state=rng)
    for test in (energy_permutation_test, mmd_permutation_test, cross_mmd_test):
        res = test(X, Y, data="directional")
        assert 0 <= res.pvalue <= 1
    with pytest.raises(ValueError, match="permutations must be a positive integer"):
        energy_permutation_test(X, Y, permutations=0, data="directional")
