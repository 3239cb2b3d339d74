r"""The exact discrete k-center with outliers on small inputs (references and tiny-instance OPT).

:math:`\mathrm{OPT} = \min_{C \subseteq P, |C| \le k} r_z(C)` (``core.py``), two ways:

* **brute force** (``method="brute"``, the default for :math:`n \le 14`): every
  :math:`C \in \binom{P}{\min(k, n)}` (adding centers never hurts), :math:`r_z(C)` the
  :math:`(n-z)`-th smallest of :math:`d(p, C)`;
* **MILP** (``method="milp"``, the default above 14), ``scipy.optimize.milp`` (HiGHS): for
  a radius :math:`r`, the maximum coverage program

  .. math::
      \max \sum_i x_i \quad \text{s.t.} \quad \sum_j y_j \le k, \qquad
      x_i \le \sum_{j : d_{ij} \le r} y_j, \qquad x, y \in \{0, 1\}^n ,

  is feasible for the problem iff its optimum is :math:`\ge n - z`; that is monotone in
  :math:`r` and OPT is a pairwise distance, so a binary search over the sorted distinct
  distances finds it exactly (about :math:`\log_2 n^2` programs of :math:`2n` binaries).

Both return the optimal centers and :math:`r_z(C) = \mathrm{OPT}` with exactly ``z``
outliers allowed. Meant for tests and the study's tiny-instance ratios (n up to ~100).
"""

from __future__ import annotations

import itertools

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import csr_matrix, hstack, identity, vstack

from .core import KCenterSolution, check_kz, check_points, covering_radius, pairwise_distances

BRUTE_MAX_N = 14
"""Largest n that ``method="auto"`` solves by enumeration."""
METHODS = ("auto", "brute", "milp")


def _solution(D: np.ndarray, centers: list[int], z: int) -> KCenterSolution:
    radius, beyond = covering_radius(D[:, centers].min(axis=1), z)
    return KCenterSolution(tuple(centers), radius, tuple(np.flatnonzero(beyond).tolist()))


def _brute(D: np.ndarray, k: int, z: int) -> list[int]:
    n = D.shape[0]
    best, best_r = None, np.inf
    combos = np.array(list(itertools.combinations(range(n), min(k, n))), dtype=np.int64)
    for chunk in np.array_split(combos, max(1, combos.shape[0] // 4096)):
        dist = D[:, chunk].min(axis=2)                      # (n, C): d(p, C) per subset
        r = np.sort(dist, axis=0)[n - z - 1] if z < n else np.zeros(chunk.shape[0])
        j = int(np.argmin(r))
        if r[j] < best_r:
            best, best_r = chunk[j], r[j]
    return [int(c) for c in best]


def _max_coverage(D: np.ndarray, k: int, r: float) -> tuple[float, list[int]]:
    """Optimum of the maximum coverage MILP at radius r, and its centers."""
    n = D.shape[0]
    near = csr_matrix((D <= r).astype(np.float64))        # near[i, j] = 1 if d_ij <= r
    # variables [x_1..x_n, y_1..y_n]; rows: x_i - sum_j near_ij y_j <= 0, then sum_j y_j <= k
    A = vstack([hstack([identity(n, format="csr"), -near]),
                hstack([csr_matrix((1, n)), csr_matrix(np.ones((1, n)))])])
    upper = np.concatenate([np.zeros(n), [k]])
    res = milp(c=np.concatenate([-np.ones(n), np.zeros(n)]),
               constraints=LinearConstraint(A, -np.inf, upper),
               integrality=np.ones(2 * n), bounds=Bounds(0, 1))
    if res.status != 0:
        raise RuntimeError(f"scipy.optimize.milp failed at r={r}: {res.message}")
    return -float(res.fun), [int(j) for j in np.flatnonzero(res.x[n:] > 0.5)]


def _milp(D: np.ndarray, k: int, z: int) -> list[int]:
    n = D.shape[0]
    guesses = np.unique(np.concatenate(([0.0], D[np.triu_indices(n, 1)])))
    lo, hi = -1, guesses.size - 1                          # one center covers all at the top
    centers_at: dict[int, list[int]] = {}
    while hi - lo > 1:
        mid = (lo + hi) // 2
        covered, centers_at[mid] = _max_coverage(D, k, guesses[mid])
        if covered >= n - z - 0.5:
            hi = mid
        else:
            lo = mid
    if hi not in centers_at:
        centers_at[hi] = _max_coverage(D, k, guesses[hi])[1]
    return centers_at[hi]


def exact_kcenter(points, k: int, z: int, *, method: str = "auto") -> KCenterSolution:
    r"""The optimal discrete k-center with ``z`` outliers (ids = row indices).

    Args:
        points: ``(n, d)`` finite coordinates.
        k: number of centers, >= 1.
        z: number of outliers, >= 0.
        method: ``"auto"`` (brute force for n <= 14, MILP above), ``"brute"`` or ``"milp"``.

    Returns:
        A :class:`KCenterSolution` with ``radius`` = OPT and the rows beyond it.
    """
    k, z = check_kz(k, z)
    X = check_points(points)
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}.")
    n = X.shape[0]
    if n == 0:
        return KCenterSolution((), 0.0, ())
    D = pairwise_distances(X, X)
    if z >= n:                                             # every point may be discarded
        return _solution(D, list(range(min(k, n))), z)
    if method == "brute" or (method == "auto" and n <= BRUTE_MAX_N):
        return _solution(D, _brute(D, k, z), z)
    return _solution(D, _milp(D, k, z), z)
