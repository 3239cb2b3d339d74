r"""The studentized spherical-harmonic energy test (raystudy's reconstruction).

Paper: "A Studentized Spherical Harmonics-Based Nonparametric Two-Sample Test for
Compositional and Directional Data" (ICML 2026 poster 64099). Only the abstract is public:
a studentized energy statistic built from spherical harmonics on a fixed-dimensional
space, asymptotically normal, so no permutation or bootstrap. raystudy's reading, each
piece a documented choice:

1. map compositions to the sphere by :math:`u = \sqrt{x}` (``samples.py``); directional
   data are used as they are;
2. expand the chordal (or geodesic) energy distance in Gegenbauer polynomials and keep
   degrees :math:`1..L`: the kernel :math:`k_L(u, v) = \sum_{l=1}^L a_l C_l^\lambda(u\cdot v)`,
   :math:`a_l = -b_l > 0` (``gegenbauer.py``); its MMD is the energy distance restricted
   to harmonics of degree :math:`\le L` and tends to it as :math:`L \to \infty`;
3. studentize (``studentize.py``): ``"cross"`` (default), Shekhar, Kim & Ramdas's cross
   U-statistic, asymptotically N(0, 1) at a fixed L; or ``"full"``, the full U-statistic
   over Chen & Qin's variance, whose normal limit needs the effective dimension (L) to grow;
4. reject for large :math:`T` (one-sided: the MMD is non-negative under every alternative):
   :math:`p = 1 - \Phi(T)`, reject when :math:`p \le \alpha`.

The cross split is random: each sample is shuffled with ``np.random.default_rng(seed)``
before halving (for a batch of R replicates, one generator draws all R shuffles).
Cost: :math:`O(nmL)` for ``"cross"`` (a quarter of the pairs), :math:`O((n+m)^2 L)` for
``"full"``.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from .gegenbauer import check_degree, check_distance, harmonic_kernel
from .samples import (
    TwoSampleResult,
    check_alpha,
    check_samples,
    replicate_chunks,
    result,
    to_sphere,
)
from .studentize import chen_qin_statistic, cross_statistic

STUDENTIZATIONS = ("cross", "full")
MIN_POINTS = 4
"""Each half of the cross split needs two rows for a variance; Chen-Qin needs n >= 3."""


def shuffle_rows(X: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Each replicate's rows in an independent random order: ``(R, n, D)`` -> ``(R, n, D)``."""
    R, n = X.shape[:2]
    order = rng.permuted(np.broadcast_to(np.arange(n), (R, n)), axis=1)
    return np.take_along_axis(X, order[..., None], axis=1)


def cross_split_statistic(U: np.ndarray, V: np.ndarray,
                          kernel) -> tuple[np.ndarray, np.ndarray]:
    """Halve already shuffled samples and studentize (``studentize.cross_statistic``).

    ``U`` ``(R, n, D)``, ``V`` ``(R, m, D)``; ``kernel(A, B)`` returns ``(R, a, b)``
    Gram matrices. Returns ``(U, T)``, each ``(R,)``.
    """
    n1, m1 = U.shape[1] // 2, V.shape[1] // 2
    first = np.concatenate([U[:, :n1], V[:, :m1]], axis=1)
    second = np.concatenate([U[:, n1:], V[:, m1:]], axis=1)
    K = kernel(first, second)                          # one Gram for the four blocks
    n2 = U.shape[1] - n1
    return cross_statistic(K[:, :n1, :n2], K[:, :n1, n2:], K[:, n1:, :n2], K[:, n1:, n2:])


def two_sample_test(x, y, *, seed: int = 0, degree: int = 10, studentize: str = "cross",
                    distance: str = "chordal", alpha: float = 0.05,
                    data: str = "compositional") -> TwoSampleResult:
    r"""The studentized spherical-harmonic energy test of :math:`H_0: P = Q`.

    Args:
        x: ``(n, D)`` compositions (rows on the simplex, zeros allowed) or unit vectors, or a
            batch ``(R, n, D)``.
        y: ``(m, D)`` or ``(R, m, D)``, the same kind.
        seed: seeds the random split of ``"cross"`` (unused by ``"full"``).
        degree: truncation L of the harmonic kernel (default 10; 0 = untruncated).
        studentize: ``"cross"`` (default) or ``"full"`` (module docstring).
        distance: ``"chordal"`` (default) or ``"geodesic"``.
        alpha: level (default 0.05).
        data: ``"compositional"`` (default; mapped by the square root) or ``"directional"``.

    Returns:
        :class:`TwoSampleResult` with the studentized statistic :math:`T`,
        :math:`p = 1 - \Phi(T)` and ``reject``; arrays ``(R,)`` for a batch.

    Raises:
        ValueError: rows off the simplex or the sphere, NaN, D mismatch, fewer than 4 points
        per sample, or a bad option.
    """
    degree = check_degree(degree)
    check_distance(distance)
    alpha = check_alpha(alpha)
    if studentize not in STUDENTIZATIONS:
        raise ValueError(f"studentize must be one of {STUDENTIZATIONS}, got {studentize!r}.")
    X, Y, batched = check_samples(x, y, data=data, min_points=MIN_POINTS,
                                  method="two_sample_test")
    U, V = to_sphere(X, data), to_sphere(Y, data)

    def kernel(A, B):
        return harmonic_kernel(A, B, degree, distance)

    if studentize == "cross":
        rng = np.random.default_rng(seed)
        U, V = shuffle_rows(U, rng), shuffle_rows(V, rng)
    n, m = U.shape[1], V.shape[1]
    T = np.empty(U.shape[0])
    for part in replicate_chunks(U.shape[0], (n + m) ** 2):
        if studentize == "cross":
            T[part] = cross_split_statistic(U[part], V[part], kernel)[1]
        else:
            Up, Vp = U[part], V[part]
            T[part] = chen_qin_statistic(kernel(Up, Up), kernel(Vp, Vp), kernel(Up, Vp))[1]
    return result(T, stats.norm.sf(T), alpha, f"harmonic_{studentize}", batched)
