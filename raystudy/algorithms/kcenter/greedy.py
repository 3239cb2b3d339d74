r"""Charikar's greedy for k-center with outliers, offline and recomputed at every query.

Charikar, Khuller, Mount, Narasimhan, "Algorithms for facility location problems with
outliers" (SODA 2001), Sec. 3.1, weighted. Points :math:`W = \{w_1, \dots, w_m\}` with
integer weights :math:`\omega_j \ge 1` (the multiplicity each stands for), a radius guess
:math:`r`, balls :math:`G_j = \{i : d(w_i, w_j) \le r\}` and expanded balls
:math:`E_j = \{i : d(w_i, w_j) \le 3r\}`. Starting with every point uncovered, :math:`k` times:

.. math::
    v = \arg\max_j \sum_{i \in G_j \cap U} \omega_i , \qquad U \leftarrow U \setminus E_v ,

(ties to the smallest index). The guess **succeeds** when the uncovered weight
:math:`\sum_{i \in U} \omega_i \le b`. If :math:`r \ge \mathrm{OPT}` (centers in :math:`W`)
it succeeds, and then every covered point lies within :math:`3r` of a chosen center: a
3-approximation with exactly :math:`b` outliers. :math:`\mathrm{OPT}` is one of the
pairwise distances, so the guesses are the sorted distinct distances
:math:`0 = \rho_0 < \rho_1 < \dots` and a binary search keeps "guess ``lo`` failed, guess
``hi`` succeeded": success is not monotone in :math:`r`, but a failed :math:`\rho_{lo}` is
below :math:`\mathrm{OPT}`, so the :math:`\rho_{hi}` it ends on is at most
:math:`\mathrm{OPT}`. That takes :math:`O(\log m)` guesses of :math:`O(k m^2)` each; the
:math:`m(m-1)/2` distances are evaluated once.

* :func:`charikar`: the weighted greedy on a distance matrix ``(m, m)`` and weights ``(m,)``.
* :func:`offline_greedy`: unit weights on the input rows, :math:`b = z`.
* :class:`OfflineRecompute`: a dynamic structure that stores the points and runs the greedy
  from scratch at every query with the bi-criteria budget :math:`b = \lfloor (1+\varepsilon)
  z\rfloor`, the naive dynamic algorithm (``n (n - 1) / 2`` distance evaluations a query).
"""

from __future__ import annotations

import numpy as np

from .core import (
    KCenterSolution,
    PointStore,
    budget_of,
    check_eps,
    check_kz,
    check_points,
    covering_radius,
    pairwise_distances,
)


def greedy_at(D: np.ndarray, weights: np.ndarray, k: int, r: float) -> tuple[list[int], float]:
    """One guess: the greedy's centers (indices into ``D``) and the weight it leaves uncovered."""
    ball = (D <= r).astype(np.float32)   # G_j as rows; float32 sums integers exactly < 2^24
    expanded = D <= 3.0 * r              # E_j
    uncovered = np.ones(D.shape[0], dtype=bool)
    w_uncovered = weights.astype(np.float32)
    centers: list[int] = []
    for _ in range(k):
        if not uncovered.any():
            break
        v = int(np.argmax(ball @ w_uncovered))
        centers.append(v)
        uncovered &= ~expanded[v]
        w_uncovered[~uncovered] = 0.0
    return centers, float(weights[uncovered].sum())


def charikar(D: np.ndarray, weights: np.ndarray, k: int, budget: int) -> tuple[list[int], float]:
    """Weighted Charikar greedy, binary-searched over the distinct entries of ``D``.

    Args:
        D: symmetric distances ``(m, m)`` with a zero diagonal.
        weights: integer weights ``(m,)``, each >= 1.
        k: number of centers.
        budget: the uncovered weight allowed (b).

    Returns:
        The centers (indices into ``D``, at most ``k``) of the smallest guess the search
        accepted, and that guess r (the centers cover all but ``budget`` weight within 3r).
    """
    m = D.shape[0]
    if m == 0:
        return [], 0.0
    guesses = np.unique(np.concatenate(([0.0], D[np.triu_indices(m, 1)])))
    lo, hi = -1, guesses.size - 1        # the largest guess covers everything from one center
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if greedy_at(D, weights, k, guesses[mid])[1] <= budget:
            hi = mid
        else:
            lo = mid
    centers, _ = greedy_at(D, weights, k, guesses[hi])
    return centers, float(guesses[hi])


def offline_greedy(points, k: int, z: int) -> KCenterSolution:
    r"""Charikar's 3-approximation for k-center with exactly ``z`` outliers.

    Args:
        points: ``(n, d)`` finite coordinates; ids in the answer are row indices.
        k: number of centers, >= 1.
        z: number of outliers, >= 0.

    Returns:
        A :class:`KCenterSolution` whose ``radius`` is :math:`r_z(C) \le 3\,\mathrm{OPT}`
        (the covering radius after discarding the ``z`` farthest rows) and whose
        ``outliers`` are the rows beyond it. Memory and time are O(n^2) (the distance
        matrix), so it is meant for n up to a few thousand.

    Raises:
        ValueError: one line, for NaN or infinite coordinates, a non-2-D input, k < 1, z < 0.
    """
    k, z = check_kz(k, z)
    X = check_points(points)
    n = X.shape[0]
    if n == 0:
        return KCenterSolution((), 0.0, ())
    D = pairwise_distances(X, X)
    centers, _ = charikar(D, np.ones(n), k, z)
    radius, beyond = covering_radius(D[:, centers].min(axis=1), z)
    return KCenterSolution(tuple(centers), radius, tuple(np.flatnonzero(beyond).tolist()))


class OfflineRecompute:
    r"""The offline greedy recomputed from scratch at every query (the naive dynamic baseline).

    ``insert`` and ``delete`` only store the change (no distance evaluated); ``query`` runs
    :func:`charikar` on the live points with unit weights and the bi-criteria budget
    :math:`b = \lfloor (1+\varepsilon) z \rfloor` (the same allowance as the other dynamic
    structures; ``eps=0`` is :func:`offline_greedy` exactly), evaluating the
    :math:`n(n-1)/2` pairwise distances once and reusing them for the radius.

    Args:
        k: number of centers, >= 1.
        z: number of outliers, >= 0.
        eps: outlier slack, >= 0.

    Attributes:
        ops: point-to-point distance evaluations since creation.
    """

    algorithm = "offline_greedy"

    def __init__(self, k: int, z: int, eps: float = 0.5) -> None:
        self.k, self.z = check_kz(k, z)
        self.eps = check_eps(eps, positive=False)
        self.budget = budget_of(self.z, self.eps)
        self.ops = 0
        self._store = PointStore()

    def __len__(self) -> int:
        return self._store.n_live

    def insert(self, point) -> int:
        """Store a ``(d,)`` point; return its id."""
        return self._store.add(point)

    def delete(self, i: int) -> None:
        """Delete the live point ``i`` (KeyError if it is not live)."""
        self._store.remove(i)

    def query(self) -> KCenterSolution:
        """The greedy on the live points, with radius and outliers under budget ``b``."""
        live = np.sort(self._store.live)     # ascending ids: the answer depends on the set only
        n = live.size
        if n == 0:
            return KCenterSolution((), 0.0, ())
        D = pairwise_distances(self._store.X[live], self._store.X[live])
        self.ops += n * (n - 1) // 2
        centers, _ = charikar(D, np.ones(n), self.k, self.budget)
        radius, beyond = covering_radius(D[:, centers].min(axis=1), self.budget)
        return KCenterSolution(tuple(int(i) for i in live[centers]), radius,
                               tuple(int(i) for i in live[beyond]))
