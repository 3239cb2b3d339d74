"""The cross and Chen-Qin statistics against transcriptions of the papers' formulas applied
to explicit feature vectors (the circle's Fourier features of k_L)."""

from __future__ import annotations

import numpy as np
import pytest

from raystudy.algorithms.two_sample.gegenbauer import chordal_coefficients_circle, harmonic_kernel
from raystudy.algorithms.two_sample.harmonic_test import cross_split_statistic
from raystudy.algorithms.two_sample.studentize import chen_qin_statistic, cross_statistic

L = 5


def circle_sample(n, shape, seed):
    p = np.random.default_rng(seed).beta(*shape, n)
    theta = np.arctan2(np.sqrt(1 - p), np.sqrt(p))
    return np.c_[np.cos(theta), np.sin(theta)], theta


def features(theta):
    """k_L(u, v) = sum_l a_l cos(l (theta - theta')) = <phi(theta), phi(theta')>."""
    a = -chordal_coefficients_circle(L)[1:]
    l = np.arange(1, L + 1)
    return np.c_[np.sqrt(a) * np.cos(np.outer(theta, l)), np.sqrt(a) * np.sin(np.outer(theta, l))]


def cross_reference(X, Y):
    """Shekhar, Kim & Ramdas (2022) Eqs. 2 and 4 with the linear kernel on features."""
    n1, m1 = len(X) // 2, len(Y) // 2
    X1, X2, Y1, Y2 = X[:n1], X[n1:], Y[:m1], Y[m1:]
    f = [np.mean([x @ x2 for x2 in X2]) - np.mean([x @ y2 for y2 in Y2]) for x in X1]
    g = [np.mean([y @ x2 for x2 in X2]) - np.mean([y @ y2 for y2 in Y2]) for y in Y1]
    U = np.mean(f) - np.mean(g)
    sx2 = np.mean((np.array(f) - np.mean(f)) ** 2)
    sy2 = np.mean((np.array(g) - np.mean(g)) ** 2)
    return U, U / np.sqrt(sx2 / n1 + sy2 / m1)


def chen_qin_reference(X, Y):
    """Chen & Qin (2010) Eqs. 2.1-2.3 and their trace estimators, written as loops."""
    n, m = len(X), len(Y)
    Tn = (sum(X[i] @ X[j] for i in range(n) for j in range(n) if i != j) / (n * (n - 1))
          + sum(Y[i] @ Y[j] for i in range(m) for j in range(m) if i != j) / (m * (m - 1))
          - 2 * sum(X[i] @ Y[j] for i in range(n) for j in range(m)) / (n * m))

    def tr_sq(Z):
        k = len(Z)
        total = 0.0
        for j in range(k):
            for l in range(k):
                if j != l:
                    rest = np.delete(Z, [j, l], axis=0).mean(0)
                    total += (Z[j] @ (Z[l] - rest)) * (Z[l] @ (Z[j] - rest))
        return total / (k * (k - 1))

    tr_xy = sum((Y[k] @ (X[l] - np.delete(X, l, 0).mean(0)))
                * (X[l] @ (Y[k] - np.delete(Y, k, 0).mean(0)))
                for l in range(n) for k in range(m)) / (n * m)
    var = 2 * tr_sq(X) / (n * (n - 1)) + 2 * tr_sq(Y) / (m * (m - 1)) + 4 * tr_xy / (n * m)
    return Tn, Tn / np.sqrt(var)


def kernel(A, B):
    return harmonic_kernel(A, B, L)


@pytest.mark.parametrize(("n", "m"), [(10, 10), (9, 12)])
def test_cross_statistic_matches_the_papers_formulas_on_explicit_features(n, m):
    U, tu = circle_sample(n, (2, 2), 0)
    V, tv = circle_sample(m, (2, 4), 1)
    U_ref, T_ref = cross_reference(features(tu), features(tv))
    Ub, T = cross_split_statistic(U[None], V[None], kernel)
    assert Ub[0] == pytest.approx(U_ref, rel=1e-10)
    assert T[0] == pytest.approx(T_ref, rel=1e-10)


@pytest.mark.parametrize(("n", "m"), [(8, 8), (7, 10)])
def test_chen_qin_statistic_matches_the_papers_formulas_on_explicit_features(n, m):
    U, tu = circle_sample(n, (2, 2), 2)
    V, tv = circle_sample(m, (3, 2), 3)
    U_ref, T_ref = chen_qin_reference(features(tu), features(tv))
    Ub, T = chen_qin_statistic(kernel(U, U)[None], kernel(V, V)[None], kernel(U, V)[None])
    assert Ub[0] == pytest.approx(U_ref, rel=1e-10)
    assert T[0] == pytest.approx(T_ref, rel=1e-10)


def test_swapping_the_samples_keeps_the_statistic_and_swapping_one_half_flips_it():
    """U = <mean phi(X1) - mean phi(Y1), mean phi(X2) - mean phi(Y2)>: swapping X and Y
    negates both factors (the research notes' "flips the sign" is wrong); swapping only the
    second halves negates one."""
    U, _ = circle_sample(12, (2, 2), 4)
    V, _ = circle_sample(12, (2, 5), 5)
    K = kernel
    X1, X2, Y1, Y2 = U[:6], U[6:], V[:6], V[6:]
    a = cross_statistic(K(X1, X2)[None], K(X1, Y2)[None], K(Y1, X2)[None], K(Y1, Y2)[None])
    swapped = cross_statistic(K(Y1, Y2)[None], K(Y1, X2)[None], K(X1, Y2)[None],
                              K(X1, X2)[None])
    half = cross_statistic(K(X1, Y2)[None], K(X1, X2)[None], K(Y1, Y2)[None], K(Y1, X2)[None])
    np.testing.assert_allclose(swapped, a, rtol=1e-12)
    np.testing.assert_allclose(half, -np.asarray(a), rtol=1e-12)
    c = chen_qin_statistic(K(U, U)[None], K(V, V)[None], K(U, V)[None])
    d = chen_qin_statistic(K(V, V)[None], K(U, U)[None], K(V, U)[None])
    np.testing.assert_allclose(c, d, rtol=1e-12)  # the full U-statistic is symmetric


def test_identical_points_give_nan_not_an_error():
    U = np.tile([[1.0, 0.0]], (6, 1))
    _, T = cross_split_statistic(U[None], U[None], kernel)
    assert np.isnan(T[0])
