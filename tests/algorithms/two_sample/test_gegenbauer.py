"""Gegenbauer coefficients, the recurrence and the truncated kernel against closed forms,
SciPy's polynomials and spherical harmonics, and a direct pairwise energy distance."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special, stats
from scipy.spatial.distance import cdist

from raystudy.algorithms.two_sample.gegenbauer import (
    chordal_coefficients_circle,
    chordal_coefficients_s2,
    gegenbauer_coefficients,
    harmonic_kernel,
    polynomials,
    zonal_kernel,
)
from raystudy.algorithms.two_sample.samples import to_sphere


def unit(n, D, seed):
    z = np.random.default_rng(seed).standard_normal((n, D))
    return z / np.linalg.norm(z, axis=1, keepdims=True)


def test_chordal_coefficients_on_s2_match_the_legendre_closed_form():
    b = gegenbauer_coefficients(3, 40)
    np.testing.assert_allclose(b, chordal_coefficients_s2(40), rtol=1e-10, atol=1e-13)
    assert b[0] == pytest.approx(4 / 3) and b[1] == pytest.approx(-4 / 5)


def test_chordal_coefficients_on_the_circle_match_its_fourier_series():
    b = gegenbauer_coefficients(2, 40)
    np.testing.assert_allclose(b, chordal_coefficients_circle(40), rtol=1e-10, atol=1e-13)
    theta = np.linspace(0, np.pi, 9)
    series = b @ np.cos(np.outer(np.arange(41), theta))  # T_l(cos t) = cos(l t)
    assert np.abs(series - 2 * np.abs(np.sin(theta / 2))).max() < 2e-2


@pytest.mark.parametrize("D", [3, 4, 6, 10])
def test_chordal_coefficients_are_negative_past_degree_zero(D):
    b = gegenbauer_coefficients(D, 30)
    assert b[0] > 0 and (b[1:] < 0).all()


def test_geodesic_coefficients_vanish_at_even_degrees():
    b = gegenbauer_coefficients(3, 12, distance="geodesic")
    assert b[0] == pytest.approx(np.pi / 2)
    np.testing.assert_allclose(b[2::2], 0.0, atol=1e-12)
    assert (b[1::2] < 0).all()
    # arccos(t) = pi/2 - arcsin(t); Legendre coefficient of degree 1 is -(3/2) * pi/4
    assert b[1] == pytest.approx(-3 * np.pi / 8)


@pytest.mark.parametrize("D", [2, 3, 4, 7])
def test_recurrence_matches_scipy_polynomials(D):
    t = np.linspace(-1, 1, 41)
    lam = (D - 2) / 2
    C = polynomials(t, 12, lam)
    for l in range(13):
        ref = special.eval_chebyt(l, t) if D == 2 else special.eval_gegenbauer(l, lam, t)
        np.testing.assert_allclose(C[l], ref, rtol=1e-12, atol=1e-12)
    a = np.r_[0.0, np.random.default_rng(D).uniform(size=12)]
    np.testing.assert_allclose(zonal_kernel(t, a, lam), a[1:] @ C[1:], rtol=1e-12, atol=1e-12)


@pytest.mark.skipif(not hasattr(special, "sph_harm_y"), reason="sph_harm_y needs scipy >= 1.15")
def test_addition_theorem_kernel_equals_its_spherical_harmonic_expansion():
    U, V = unit(5, 3, 0), unit(4, 3, 1)
    L = 6

    def angles(W):
        return np.arccos(np.clip(W[:, 2], -1, 1)), np.arctan2(W[:, 1], W[:, 0])

    (tu, pu), (tv, pv) = angles(U), angles(V)
    a = -chordal_coefficients_s2(L)
    explicit = np.zeros((5, 4))
    for l in range(1, L + 1):
        s = sum(np.outer(special.sph_harm_y(l, m, tu, pu),
                         np.conj(special.sph_harm_y(l, m, tv, pv))) for m in range(-l, l + 1))
        np.testing.assert_allclose(s.real, (2 * l + 1) / (4 * np.pi)
                                   * special.eval_legendre(l, U @ V.T), atol=1e-12)
        explicit += a[l] * 4 * np.pi / (2 * l + 1) * s.real
    np.testing.assert_allclose(harmonic_kernel(U, V, L), explicit, atol=1e-12)


def v_mmd(K_xx, K_yy, K_xy):
    return K_xx.mean() + K_yy.mean() - 2 * K_xy.mean()


def test_truncated_mmd_converges_to_the_chordal_energy_distance():
    rng = np.random.default_rng(3)
    U = to_sphere(rng.dirichlet([2, 2, 2], 30))
    V = to_sphere(rng.dirichlet([1, 3, 5], 25))
    energy = 2 * cdist(U, V).mean() - cdist(U, U).mean() - cdist(V, V).mean()  # V-statistic
    errors = []
    for L in (2, 8, 32, 128, 512):
        mmd = v_mmd(harmonic_kernel(U, U, L), harmonic_kernel(V, V, L), harmonic_kernel(U, V, L))
        assert mmd >= 0  # k_L is positive definite
        errors.append(abs(mmd - energy))
    assert all(e1 > e2 for e1, e2 in zip(errors[:-1], errors[1:], strict=True)), errors
    assert errors[-1] < 1e-3 * energy
    full = v_mmd(harmonic_kernel(U, U, 0), harmonic_kernel(V, V, 0), harmonic_kernel(U, V, 0))
    # sqrt(2 - 2t) at t = 1 - 1e-16 on the diagonal is 1e-8: the inner-product route rounds
    assert full == pytest.approx(energy, rel=1e-6)


def test_geodesic_kernel_on_the_circle_converges_to_scipys_1d_energy_distance():
    rng = np.random.default_rng(4)
    x, y = rng.beta(2, 2, 40), rng.beta(2, 5, 35)
    U = to_sphere(np.c_[x, 1 - x])
    V = to_sphere(np.c_[y, 1 - y])
    # on the quarter circle the geodesic distance is |theta - theta'|, a 1-D distance
    theta_u, theta_v = np.arctan2(U[:, 1], U[:, 0]), np.arctan2(V[:, 1], V[:, 0])
    energy = stats.energy_distance(theta_u, theta_v) ** 2
    L = 801
    mmd = v_mmd(harmonic_kernel(U, U, L, "geodesic"), harmonic_kernel(V, V, L, "geodesic"),
                harmonic_kernel(U, V, L, "geodesic"))
    assert mmd == pytest.approx(energy, rel=5e-3)
    full = v_mmd(*(harmonic_kernel(A, B, 0, "geodesic") for A, B in ((U, U), (V, V), (U, V))))
    assert full == pytest.approx(energy, rel=1e-6)
    assert math.isclose(gegenbauer_coefficients(2, 0, "geodesic")[0], np.pi / 2)
