r"""Distance and kernel baselines on the square roots: two permutation tests and cross-MMD.

All three see the same points as the harmonic test, :math:`u = \sqrt{x}` (or the unit
vectors themselves), so a comparison isolates the statistic and its calibration.

* **Energy test** (Szekely & Rizzo, "Testing for equal distributions in high dimension",
  InterStat 2004; R ``energy::eqdist.etest``):
  :math:`\mathcal{E}_{n,m} = \frac{nm}{n+m}\big(2\,\overline{D_{xy}} - \overline{D_{xx}}
  - \overline{D_{yy}}\big)` with :math:`D = \|u_i - u_j\|` (the chordal distance) and
  means over whole matrices, zero diagonals included (the V-statistic, as ``energy`` and
  ``dcor`` compute it).
* **MMD** (Gretton et al., "A kernel two-sample test", JMLR 2012, Eq. 3, the unbiased
  :math:`\mathrm{MMD}_u^2`) with the Gaussian kernel
  :math:`k(u, v) = \exp(-\|u - v\|^2 / (2h^2))`, :math:`h` the median of the pooled
  pairwise distances (the median heuristic, Gretton et al. 2012, Sec. 8).
* **Cross-MMD** (Shekhar, Kim & Ramdas, NeurIPS 2022): the same Gaussian kernel and
  bandwidth, studentized by the cross U-statistic (``studentize.py``), N(0, 1), one-sided.

**Permutation p-values.** The pooled matrix :math:`M` (N x N, N = n + m) is formed once;
a relabelling is an indicator :math:`s \in \{0, 1\}^N` of the n points called x, and
every block sum is a function of :math:`q = s^\top M s`, :math:`l = s^\top M 1` and
:math:`d = s^\top \mathrm{diag}(M)`: :math:`\Sigma_{xx} = q`, :math:`\Sigma_{xy} = l - q`,
:math:`\Sigma_{yy} = 1^\top M 1 - 2l + q`. B relabellings are one product
:math:`S M` (B x N by N x N), vectorised over replicates. With :math:`T_0` the observed
statistic, :math:`p = (1 + \#\{b : T_b \ge T_0\}) / (1 + B)` (Phipson & Smyth, "Permutation
p-values should never be zero", SAGMB 2010), exact level :math:`\alpha` when
:math:`\alpha (1 + B)` is an integer (B = 199 at 5 %); ties count within a relative
:math:`10^{-14}`, as ``scipy.stats.permutation_test``.
"""

from __future__ import annotations

import functools

import numpy as np
from scipy import stats

from .harmonic_test import cross_split_statistic, shuffle_rows
from .samples import (
    TwoSampleResult,
    check_alpha,
    check_samples,
    replicate_chunks,
    result,
    to_sphere,
)

PERMUTATIONS = 199
"""Default B: alpha (1 + B) = 10 at 5 %, so the test is exact at that level, and the
Monte Carlo s.d. of a p-value near 0.05 is sqrt(0.05 * 0.95 / 199) = 0.015."""
TIE_RTOL = 1e-14


def squared_distances(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Squared Euclidean distances ``(R, a, b)`` between rows of ``(R, a, D)`` and ``(R, b, D)``."""
    sq = ((A * A).sum(-1)[..., :, None] + (B * B).sum(-1)[..., None, :]
          - 2.0 * A @ np.swapaxes(B, -1, -2))
    return np.maximum(sq, 0.0)


def median_bandwidth(Z: np.ndarray) -> np.ndarray:
    """Median heuristic: each replicate's median pairwise distance of pooled rows ``(R, N, D)``.

    Returns ``(R,)``; 1 where the median is 0 (more than half the points equal).
    """
    R, N = Z.shape[:2]
    iu = np.triu_indices(N, k=1)
    h = np.empty(R)
    for part in replicate_chunks(R, N * N):
        d = np.sqrt(squared_distances(Z[part], Z[part])[:, iu[0], iu[1]])
        h[part] = np.median(d, axis=1)
    return np.where(h > 0, h, 1.0)


def gaussian_gram(A: np.ndarray, B: np.ndarray, h: np.ndarray) -> np.ndarray:
    """:math:`\\exp(-\\|a - b\\|^2 / (2h^2))` per replicate: ``(R, a, b)``; ``h`` ``(R,)``."""
    return np.exp(-squared_distances(A, B) / (2.0 * h[:, None, None] ** 2))


def relabellings(N: int, n: int, B: int, rng: np.random.Generator) -> np.ndarray:
    """``(B + 1, N)`` float indicators of the n points called x: the observed labelling
    (the first n) in row 0, then B random relabellings."""
    perm = rng.permuted(np.broadcast_to(np.arange(N), (B, N)), axis=1)
    S = np.zeros((B + 1, N))
    S[0, :n] = 1.0
    np.put_along_axis(S[1:], perm[:, :n], 1.0, axis=1)
    return S


def _block_sums(M: np.ndarray, S: np.ndarray) -> tuple[np.ndarray, ...]:
    """``(xx, xy, yy, diag_x)`` block sums ``(R, B)`` of ``M`` ``(R, N, N)`` under ``S``."""
    rows = M.sum(-1)                                   # (R, N)
    total = rows.sum(-1)[:, None]
    q = ((S @ M) * S).sum(-1)
    l = np.einsum("rbn,rn->rb", S, rows)
    d = np.einsum("rbn,rn->rb", S, np.diagonal(M, axis1=-2, axis2=-1))
    return q, l - q, total - 2.0 * l + q, d


def energy_statistic(xx, xy, yy, n: int, m: int) -> np.ndarray:
    """Szekely & Rizzo's E from block sums of the distance matrix (V-statistic means)."""
    return n * m / (n + m) * (2.0 * xy / (n * m) - xx / n**2 - yy / m**2)


def mmd_u_statistic(xx, xy, yy, diag_x, trace, n: int, m: int) -> np.ndarray:
    """Gretton et al.'s unbiased MMD^2 from block sums of the Gram matrix and its diagonal."""
    return ((xx - diag_x) / (n * (n - 1)) + (yy - (trace - diag_x)) / (m * (m - 1))
            - 2.0 * xy / (n * m))


def _permutation_test(R: int, N: int, n: int, matrix, statistic, B: int,
                      rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Observed statistic and permutation p-value for each of R replicates of N pooled rows.

    ``matrix(part)`` builds the pooled ``(r, N, N)`` matrices of the replicates in the slice
    ``part``, ``statistic(M, S)`` their ``(r, B + 1)`` statistics. The relabellings are drawn
    replicate after replicate from ``rng``, so the result does not depend on the chunking.
    """
    T0, pvalue = np.empty(R), np.empty(R)
    for part in replicate_chunks(R, (B + 1) * N + N * N):
        S = np.stack([relabellings(N, n, B, rng) for _ in range(part.start, part.stop)])
        T = statistic(matrix(part), S)
        T0[part] = T[:, 0]
        ge = T[:, 1:] >= T[:, :1] - TIE_RTOL * np.abs(T[:, :1])
        pvalue[part] = (1.0 + ge.sum(-1)) / (1.0 + B)
    return T0, pvalue


def _check_permutations(permutations: int) -> int:
    if isinstance(permutations, bool) or int(permutations) != permutations or permutations < 1:
        raise ValueError(f"permutations must be a positive integer, got {permutations!r}.")
    return int(permutations)


def energy_permutation_test(x, y, *, permutations: int = PERMUTATIONS, seed: int = 0,
                            alpha: float = 0.05,
                            data: str = "compositional") -> TwoSampleResult:
    """Szekely & Rizzo's energy test on the square roots (chordal distance), by permutation.

    ``x`` ``(n, D)`` or ``(R, n, D)``, ``y`` ``(m, D)`` or ``(R, m, D)``: compositions or unit
    vectors (``data``). ``permutations`` B (default 199), ``seed`` for the relabellings.
    """
    B, alpha = _check_permutations(permutations), check_alpha(alpha)
    X, Y, batched = check_samples(x, y, data=data, min_points=2, method="the energy test")
    n, m = X.shape[1], Y.shape[1]
    Z = np.concatenate([to_sphere(X, data), to_sphere(Y, data)], axis=1)

    def matrix(part):
        return np.sqrt(squared_distances(Z[part], Z[part]))

    def statistic(M_, S_):
        xx, xy, yy, _ = _block_sums(M_, S_)
        return energy_statistic(xx, xy, yy, n, m)

    T0, p = _permutation_test(*Z.shape[:2], n, matrix, statistic, B,
                              np.random.default_rng(seed))
    return result(T0, p, alpha, "energy_perm", batched)


def mmd_permutation_test(x, y, *, permutations: int = PERMUTATIONS, seed: int = 0,
                         alpha: float = 0.05, data: str = "compositional") -> TwoSampleResult:
    """Unbiased Gaussian-kernel MMD^2 (median heuristic) on the square roots, by permutation.

    Shapes and options as :func:`energy_permutation_test`; the bandwidth is permutation
    invariant (it depends on the pooled sample only), so it is computed once.
    """
    B, alpha = _check_permutations(permutations), check_alpha(alpha)
    X, Y, batched = check_samples(x, y, data=data, min_points=2, method="the MMD test")
    n, m = X.shape[1], Y.shape[1]
    Z = np.concatenate([to_sphere(X, data), to_sphere(Y, data)], axis=1)
    h = median_bandwidth(Z)

    def matrix(part):
        return gaussian_gram(Z[part], Z[part], h[part])

    def statistic(M_, S_):
        xx, xy, yy, d = _block_sums(M_, S_)
        trace = np.trace(M_, axis1=-2, axis2=-1)[:, None]
        return mmd_u_statistic(xx, xy, yy, d, trace, n, m)

    T0, p = _permutation_test(*Z.shape[:2], n, matrix, statistic, B,
                              np.random.default_rng(seed))
    return result(T0, p, alpha, "mmd_perm", batched)


def cross_mmd_test(x, y, *, seed: int = 0, alpha: float = 0.05,
                   data: str = "compositional") -> TwoSampleResult:
    """Shekhar et al.'s cross-MMD with the Gaussian kernel (median heuristic) on the roots.

    Shapes as :func:`energy_permutation_test`; ``seed`` shuffles the samples before the
    split. One-sided: :math:`p = 1 - \\Phi(T)`.
    """
    alpha = check_alpha(alpha)
    X, Y, batched = check_samples(x, y, data=data, min_points=4, method="the cross-MMD test")
    U, V = to_sphere(X, data), to_sphere(Y, data)
    h = median_bandwidth(np.concatenate([U, V], axis=1))
    rng = np.random.default_rng(seed)
    U, V = shuffle_rows(U, rng), shuffle_rows(V, rng)
    T = np.empty(U.shape[0])
    for part in replicate_chunks(U.shape[0], (U.shape[1] + V.shape[1]) ** 2):
        kernel = functools.partial(gaussian_gram, h=h[part])
        T[part] = cross_split_statistic(U[part], V[part], kernel)[1]
    return result(T, stats.norm.sf(T), alpha, "cross_mmd", batched)
