r"""The energy distance on the sphere in Gegenbauer polynomials, and its truncated kernel.

On :math:`S^q \subset \mathbb{R}^D` (:math:`q = D - 1`, :math:`\lambda = (q - 1)/2`) a
function of :math:`t = u \cdot v` expands in Gegenbauer polynomials :math:`C_l^\lambda`,
orthogonal for the weight :math:`w_\lambda(t) = (1 - t^2)^{\lambda - 1/2}` (Chebyshev
polynomials :math:`T_l` on the circle, :math:`\lambda = 0`). For the chordal distance
:math:`\psi(t) = \|u - v\| = \sqrt{2 - 2t}` (or the geodesic :math:`\arccos t`),

.. math::
    \psi(t) = \sum_{l \ge 0} b_l\, C_l^\lambda(t), \qquad
    b_l = \frac{\int_0^\pi \psi(\cos\theta)\, C_l^\lambda(\cos\theta)\,
                \sin^{q-1}\theta\, d\theta}
               {\int_0^\pi C_l^\lambda(\cos\theta)^2\, \sin^{q-1}\theta\, d\theta} ,

computed by Gauss-Legendre quadrature in :math:`\theta` (:math:`t = \cos\theta`, where
both integrands are smooth, so the quadrature is exact to rounding). Closed forms checked
by the tests: on :math:`S^2` (Legendre, :math:`\lambda = 1/2`) :math:`b_0 = 4/3`,
:math:`b_l = -4/((2l - 1)(2l + 3))`; on the circle,
:math:`2|\sin(\theta/2)| = 4/\pi - (8/\pi) \sum_{l \ge 1} \cos(l\theta)/(4l^2 - 1)`.
Every chordal :math:`b_l` with :math:`l \ge 1` is negative (the chordal distance is
conditionally negative definite on the sphere), so with :math:`a_l = -b_l > 0` the
**truncated harmonic kernel**

.. math::  k_L(u, v) = \sum_{l=1}^{L} a_l\, C_l^\lambda(u \cdot v)

is positive definite: by the addition theorem
:math:`\sum_{m} Y_{lm}(u) Y_{lm}(v) \propto C_l^\lambda(u \cdot v)`, it is a weighted sum
of products of spherical harmonics of degree :math:`1..L`, and its MMD is a weighted sum
of squared differences of harmonic mean embeddings. As :math:`L \to \infty`,
:math:`k_L \to b_0 - \psi`, whose MMD is the energy distance
:math:`2E\psi(X, Y) - E\psi(X, X') - E\psi(Y, Y')` (Szekely & Rizzo 2004).
:math:`C_l^\lambda(t)` comes from the three-term recurrence
:math:`C_0 = 1`, :math:`C_1 = 2\lambda t`,
:math:`l\, C_l = 2t(l + \lambda - 1) C_{l-1} - (l + 2\lambda - 2) C_{l-2}`
(:math:`T_l = 2t T_{l-1} - T_{l-2}` on the circle), so no harmonic is ever formed:
:math:`O(L)` per pair. ``degree = 0`` means the untruncated kernel :math:`b_0 - \psi`.

The geodesic distance (raystudy's extra option; the paper's choice is not public) has
:math:`b_l = 0` for every even :math:`l \ge 2` (:math:`\arccos t - \pi/2` is odd), so its
kernel sees only odd-degree harmonics and misses any difference that is symmetric under
:math:`u \mapsto -u`.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy import special

DISTANCES = ("chordal", "geodesic")


def check_distance(distance: str) -> str:
    """``distance`` is ``"chordal"`` or ``"geodesic"``, or a ValueError."""
    if distance not in DISTANCES:
        raise ValueError(f"distance must be one of {DISTANCES}, got {distance!r}.")
    return distance


def check_degree(degree: int) -> int:
    """``degree`` as a non-negative int (0 = untruncated), or a ValueError."""
    if isinstance(degree, bool) or int(degree) != degree or degree < 0:
        raise ValueError(f"degree must be a non-negative integer (0 = untruncated), got "
                         f"{degree!r}.")
    return int(degree)


def psi(t: np.ndarray, distance: str = "chordal") -> np.ndarray:
    r"""The distance :math:`\psi(t)` between unit vectors with inner product ``t`` (clipped)."""
    t = np.clip(t, -1.0, 1.0)
    if distance == "chordal":
        return np.sqrt(2.0 - 2.0 * t)
    return np.arccos(t)


def gegenbauer_lambda(D: int) -> float:
    r""":math:`\lambda = (D - 2) / 2` for :math:`S^{D-1}`; 0 marks the circle (Chebyshev)."""
    if D < 2:
        raise ValueError(f"the sphere needs D >= 2, got D = {D}.")
    return (D - 2) / 2.0


def polynomials(t: np.ndarray, degree: int, lam: float) -> np.ndarray:
    r""":math:`C_0^\lambda(t), \dots, C_L^\lambda(t)` (:math:`T_l` at :math:`\lambda = 0`).

    ``t``: any shape; returns ``(degree + 1, *t.shape)``, by the three-term recurrence.
    """
    t = np.asarray(t, dtype=np.float64)
    out = np.empty((degree + 1, *t.shape))
    out[0] = 1.0
    if degree >= 1:
        out[1] = t if lam == 0 else 2.0 * lam * t
    for l in range(2, degree + 1):
        if lam == 0:
            out[l] = 2.0 * t * out[l - 1] - out[l - 2]
        else:
            out[l] = (2.0 * t * (l + lam - 1) * out[l - 1] - (l + 2 * lam - 2) * out[l - 2]) / l
    return out


def gegenbauer_coefficients(D: int, degree: int, distance: str = "chordal",
                            nodes: int | None = None) -> np.ndarray:
    r"""Coefficients :math:`b_0, \dots, b_L` of :math:`\psi` on :math:`S^{D-1}` by quadrature.

    Gauss-Legendre in :math:`\theta \in [0, \pi]` with ``nodes`` points (default
    ``max(200, 2 L + 64)``). Returns ``(degree + 1,)`` float64.
    """
    lam = gegenbauer_lambda(D)
    check_distance(distance)
    nodes = max(200, 2 * degree + 64) if nodes is None else nodes
    z, w = special.roots_legendre(nodes)
    theta = (z + 1.0) * (math.pi / 2)
    weight = w * (math.pi / 2) * np.sin(theta) ** (D - 2)
    t = np.cos(theta)
    C = polynomials(t, degree, lam)
    return (C * (psi(t, distance) * weight)).sum(axis=1) / (C * C * weight).sum(axis=1)


def chordal_coefficients_s2(degree: int) -> np.ndarray:
    r"""Closed form on :math:`S^2`: :math:`b_0 = 4/3`, :math:`b_l = -4/((2l-1)(2l+3))`."""
    l = np.arange(degree + 1, dtype=np.float64)
    return np.where(l == 0, 4.0 / 3.0, -4.0 / ((2 * l - 1) * (2 * l + 3)))


def chordal_coefficients_circle(degree: int) -> np.ndarray:
    r"""Closed form on :math:`S^1`: :math:`b_0 = 4/\pi`, :math:`b_l = -8/(\pi(4l^2 - 1))`."""
    l = np.arange(degree + 1, dtype=np.float64)
    return np.where(l == 0, 4.0 / math.pi, -8.0 / (math.pi * (4 * l * l - 1)))


@functools.lru_cache(maxsize=64)
def _cached_coefficients(D: int, degree: int, distance: str) -> tuple[float, ...]:
    return tuple(gegenbauer_coefficients(D, degree, distance))


def kernel_weights(D: int, degree: int, distance: str = "chordal") -> np.ndarray:
    r""":math:`a_l = -b_l` for :math:`l = 1..L` (index 0 holds 0): ``(degree + 1,)``."""
    a = -np.asarray(_cached_coefficients(D, degree, distance))
    a[0] = 0.0
    return a


def zonal_kernel(t: np.ndarray, a: np.ndarray, lam: float) -> np.ndarray:
    r""":math:`\sum_{l \ge 1} a_l C_l^\lambda(t)` by the recurrence, in memory ``O(t.size)``.

    ``t``: inner products, any shape (clipped to [-1, 1]); ``a``: ``(L + 1,)`` weights.
    In place: :math:`C_l = \alpha_l t C_{l-1} - \beta_l C_{l-2}` with
    :math:`\alpha_l = 2(l + \lambda - 1)/l`, :math:`\beta_l = (l + 2\lambda - 2)/l`
    (2 and 1 on the circle).
    """
    t = np.clip(np.asarray(t, dtype=np.float64), -1.0, 1.0)
    degree = len(a) - 1
    k = np.zeros_like(t)
    if degree == 0:
        return k
    prev = np.ones_like(t)
    cur = t.copy() if lam == 0 else 2.0 * lam * t
    k += a[1] * cur
    buf = np.empty_like(t)
    for l in range(2, degree + 1):
        alpha_l = 2.0 if lam == 0 else 2.0 * (l + lam - 1) / l
        beta_l = 1.0 if lam == 0 else (l + 2 * lam - 2) / l
        np.multiply(t, cur, out=buf)
        buf *= alpha_l
        prev *= -beta_l
        prev += buf                                    # prev now holds C_l
        prev, cur = cur, prev
        np.multiply(cur, a[l], out=buf)
        k += buf
    return k


def harmonic_kernel(U: np.ndarray, V: np.ndarray, degree: int = 10,
                    distance: str = "chordal") -> np.ndarray:
    r"""Gram matrix of :math:`k_L` (``degree`` L) between unit rows; L = 0: :math:`b_0 - \psi`.

    Args:
        U: ``(..., n, D)`` unit vectors.
        V: ``(..., m, D)`` unit vectors (the same leading shape).
        degree: truncation L (0 = the untruncated kernel).
        distance: ``"chordal"`` or ``"geodesic"``.

    Returns:
        ``(..., n, m)`` float64.
    """
    check_distance(distance)
    degree = check_degree(degree)
    D = U.shape[-1]
    t = U @ np.swapaxes(V, -1, -2)
    if degree == 0:
        b0 = _cached_coefficients(D, 0, distance)[0]
        return b0 - psi(t, distance)
    return zonal_kernel(t, kernel_weights(D, degree, distance), gegenbauer_lambda(D))
