"""Log-ratio transforms against composition-stats; Hotelling, James and Cao-Lin-Li against
scipy's t-tests and distributions and textbook transcriptions."""

from __future__ import annotations

import math

import composition_stats as cs
import numpy as np
import pytest
from scipy import stats

from raystudy.algorithms.two_sample import cao_lin_li_test, clr, hotelling_test, ilr, james_test
from raystudy.algorithms.two_sample.logratio import (
    detection_delta,
    helmert_basis,
    multiplicative_replacement,
)


def comps(n, alpha, seed):
    return np.random.default_rng(seed).dirichlet(alpha, n)


def test_clr_and_replacement_match_composition_stats():
    x = comps(20, [1, 2, 3, 4], 0)
    np.testing.assert_allclose(clr(x), cs.clr(x), atol=1e-12)
    z = np.array([[0.0, 0.5, 0.5], [0.2, 0.0, 0.8], [0.1, 0.3, 0.6]])
    np.testing.assert_allclose(multiplicative_replacement(z, 0.01),
                               cs.multiplicative_replacement(z, delta=0.01), atol=1e-15)
    assert detection_delta(z[None])[0] == pytest.approx(0.65 * 0.1)


def test_ilr_is_an_isometry_of_the_clr_plane():
    V = helmert_basis(5)
    np.testing.assert_allclose(V.T @ V, np.eye(4), atol=1e-14)
    np.testing.assert_allclose(V.sum(0), 0.0, atol=1e-14)
    x, y = comps(6, [1, 1, 2, 2, 3], 1), comps(6, [2, 1, 1, 3, 1], 2)
    np.testing.assert_allclose(ilr(x) @ ilr(y).T, cs.clr(x) @ cs.clr(y).T, atol=1e-12)


def test_hotelling_does_not_depend_on_the_ilr_basis():
    x, y = comps(15, [2, 3, 4, 2], 3), comps(18, [3, 3, 2, 2], 4)
    ours = hotelling_test(x, y).statistic
    X, Y = cs.ilr(x), cs.ilr(y)   # composition-stats' own (Gram-Schmidt) basis
    n, m = len(X), len(Y)
    d = X.mean(0) - Y.mean(0)
    Sp = ((n - 1) * np.cov(X.T) + (m - 1) * np.cov(Y.T)) / (n + m - 2)
    assert ours == pytest.approx(n * m / (n + m) * d @ np.linalg.solve(Sp, d), rel=1e-10)


def test_two_part_hotelling_and_james_are_the_pooled_and_welch_t_tests():
    x, y = comps(12, [2, 3], 5), comps(17, [3, 2], 6)
    zx, zy = ilr(x)[:, 0], ilr(y)[:, 0]
    pooled = stats.ttest_ind(zx, zy, equal_var=True)
    welch = stats.ttest_ind(zx, zy, equal_var=False)
    h = hotelling_test(x, y)
    assert h.statistic == pytest.approx(pooled.statistic**2, rel=1e-10)
    assert h.pvalue == pytest.approx(pooled.pvalue, rel=1e-8)
    assert james_test(x, y).statistic == pytest.approx(welch.statistic**2, rel=1e-10)


def test_hotelling_pvalue_is_the_f_tail_written_out():
    x, y = comps(10, [2, 2, 3], 7), comps(14, [3, 2, 2], 8)
    res = hotelling_test(x, y)
    n, m, p = 10, 14, 2
    F = (n + m - p - 1) / (p * (n + m - 2)) * res.statistic
    assert res.pvalue == pytest.approx(stats.f.sf(F, p, n + m - p - 1), rel=1e-12)


def test_james_first_order_correction_written_out():
    x, y = comps(9, [2, 2, 3], 9), comps(13, [4, 2, 2], 10)
    X, Y = ilr(x), ilr(y)
    n, m, p = len(X), len(Y), 2
    A1, A2 = np.cov(X.T) / n, np.cov(Y.T) / m
    Winv = np.linalg.inv(A1 + A2)
    d = X.mean(0) - Y.mean(0)
    J = d @ Winv @ d
    A, B = 1.0, 0.0
    for Ai, ni in ((A1, n), (A2, m)):
        Bi = Winv @ Ai
        A += np.trace(Bi) ** 2 / (ni - 1) / (2 * p)
        B += (np.trace(Bi @ Bi) + 0.5 * np.trace(Bi) ** 2) / (ni - 1) / (p * (p + 2))
    chi = stats.chi2.ppf(0.95, p)
    res = james_test(x, y, alpha=0.05)
    assert res.statistic == pytest.approx(J, rel=1e-10)
    assert res.pvalue == pytest.approx(stats.chi2.sf(J / (A + B * chi), p), rel=1e-10)
    assert res.reject == (J > chi * (A + B * chi))


def test_cao_lin_li_is_the_gumbel_tail_of_the_max_clr_statistic():
    x, y = comps(30, [2, 2, 3, 1], 11), comps(25, [3, 2, 2, 1], 12)
    zx, zy = cs.clr(x), cs.clr(y)
    n, m, D = 30, 25, 4
    gamma = (((zx - zx.mean(0)) ** 2).sum(0) + ((zy - zy.mean(0)) ** 2).sum(0)) / (n + m)
    Mn = n * m / (n + m) * np.max((zx.mean(0) - zy.mean(0)) ** 2 / gamma)
    res = cao_lin_li_test(x, y)
    assert res.statistic == pytest.approx(Mn, rel=1e-10)
    # the limit exp(-pi^-1/2 exp(-t/2)) is a Gumbel law with loc -log(pi), scale 2
    gumbel = stats.gumbel_r.sf(Mn - 2 * math.log(D) + math.log(math.log(D)),
                               loc=-math.log(math.pi), scale=2)
    assert res.pvalue == pytest.approx(gumbel, rel=1e-10)


def test_mean_tests_hold_their_level_and_see_a_mean_shift():
    rng = np.random.default_rng(13)
    X, Y = rng.dirichlet([2, 2, 2], (400, 50)), rng.dirichlet([2, 2, 2], (400, 50))
    Y_alt = rng.dirichlet([3, 2, 1.5], (400, 50))
    for test in (hotelling_test, james_test):
        assert 0.025 <= test(X, Y).reject.mean() <= 0.085
        assert test(X, Y_alt).reject.mean() > 0.8
    assert cao_lin_li_test(X, Y).reject.mean() <= 0.085   # conservative at D = 3
    assert cao_lin_li_test(X, Y_alt).reject.mean() > 0.5


def test_zeros_are_replaced_before_the_logs():
    rng = np.random.default_rng(14)
    x = rng.multinomial(8, [0.2, 0.3, 0.5], 30) / 8
    y = rng.multinomial(8, [0.3, 0.3, 0.4], 30) / 8
    assert (x == 0).any()
    for test in (hotelling_test, james_test, cao_lin_li_test):
        assert np.isfinite(test(x, y).statistic)
