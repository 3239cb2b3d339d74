r"""Fully dynamic k-center with outliers by radius guessing (CLSW-style baseline).

Chan, Lattanzi, Sozio, Wang, "Fully Dynamic k-Center Clustering with Outliers"
(Algorithmica 2024), as structured in their public code (itswangbo/fully-dynamic-k-center,
``src/algo_fully_adv.c``, read, not copied), which follows Chan, Guerqin, Sozio (WWW 2018).

**Levels (the radius guess).** Given :math:`d_{\min} \le d_{\max}` (the smallest and largest
pairwise distance, known in advance as the code requires) there are

.. math::
    L = 1 + \lceil \log(d_{\max}/d_{\min}) / \log(1+\varepsilon) \rceil, \qquad
    r_i = d_{\min} (1+\varepsilon)^i, \qquad \rho_i = 2 r_i \quad (i = 0, \dots, L-1),

levels; :math:`L \approx \log_{1+\varepsilon}\Delta` is where the aspect ratio enters every
update and query. Level :math:`i` keeps at most :math:`k` clusters :math:`C_0, C_1, \dots`
(a center and the points within :math:`\rho_i` of it) and an unclustered set, plus the
relation "centers within :math:`3\rho_i`" (computed when a center is created).

**Insert** :math:`p` at level :math:`i`, with :math:`t_j` the number of live points in
:math:`C_j, C_{j+1}, \dots` and the unclustered set (:math:`t_0 = n`): for
:math:`j = 0, 1, \dots`: with probability :math:`1/t_j` (when :math:`t_j \ge 2`) **re-cluster**:
remove :math:`C_j, C_{j+1}, \dots` and the unclustered set, make :math:`p` the center of
:math:`C_j`, and re-add the removed points in random order; otherwise if
:math:`d(p, c_j) \le \rho_i` join :math:`C_j`. Past the last cluster :math:`p` opens a new
cluster if there are fewer than :math:`k`, else it is unclustered. **Re-adding** a point
scans the centers in order and joins the first within :math:`\rho_i` (else the same rule).
**Delete** :math:`p`: drop it; if it was the center of :math:`C_j`, remove
:math:`C_j, C_{j+1}, \dots` and the unclustered set and re-add their points in random order.

**Query**: level by level from :math:`i = 0`, the CLSW greedy over the level's clusters:
:math:`\hat b_j = |C_j| + \sum_{l \sim j} |C_l|` (:math:`\sim`: the :math:`3\rho_i`
relation); :math:`k` times pick the largest :math:`\hat b_j` (ties to the larger index),
mark covered it and every remaining cluster whose center is within :math:`12 r_i = 6\rho_i`
of its center (evaluating those distances), and lower :math:`\hat b` of the neighbours of
the covered clusters by their sizes. The answer is the first level whose covered points
number at least :math:`n - b`, :math:`b = \lfloor (1+\varepsilon) z \rfloor` (CLSW's
``(1+eps) z``; the last level if none), its chosen centers evaluated on every live point
for the exact radius and outliers (:math:`n k` distances).

**Cost counted** (``ops``): the distances the sequential algorithm evaluates (a walk stops
at the first cluster within :math:`\rho_i`; a new center reuses the walk's distances for
the relation; the query's :math:`6\rho_i` checks are counted each query, as CLSW
recomputes them). The implementation batches them over levels and points, computing some
that the sequential algorithm would skip, which are not counted. Choices of this port: the
clusters per level equal :math:`k` (the code's ``t``), the same :math:`\varepsilon` sets the
level ratio and the outlier slack, and the scan stops at the first valid level (the code
runs the greedy on every level).
"""

from __future__ import annotations

import math

import numpy as np

from .core import (
    KCenterSolution,
    PointStore,
    budget_of,
    check_eps,
    check_kz,
    pairwise_distances,
    solution_on_live,
)

ALGORITHM = "radius_guess"


def _check_distance(name: str, value) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a positive number, got {value!r}.") from err
    if not math.isfinite(v) or v <= 0:
        raise ValueError(f"{name} must be a positive finite number, got {value!r}.")
    return v


class RadiusGuessing:
    r"""CLSW-style fully dynamic k-center with outliers over radius-guessing levels.

    Args:
        k: number of centers (and clusters per level), >= 1.
        z: number of outliers, >= 0.
        eps: level ratio ``1 + eps`` and outlier slack, > 0.
        d_min: smallest pairwise distance of the stream (the lowest level's radius), > 0.
        d_max: largest pairwise distance of the stream, >= ``d_min``.
        seed: seed of the generator behind the random re-clustering and re-add orders.

    Attributes:
        ops: point-to-point distance evaluations since creation, queries included.
        levels: L, the number of radius guesses.
    """

    algorithm = ALGORITHM

    def __init__(self, k: int, z: int, eps: float = 0.5, *, d_min: float, d_max: float,
                 seed: int = 0) -> None:
        self.k, self.z = check_kz(k, z)
        self.eps = check_eps(eps, positive=True)
        self.d_min = _check_distance("d_min", d_min)
        self.d_max = _check_distance("d_max", d_max)
        if self.d_max < self.d_min:
            raise ValueError(f"d_max = {d_max!r} must be >= d_min = {d_min!r}.")
        self.budget = budget_of(self.z, self.eps)
        self.levels = 1 + math.ceil(math.log(self.d_max / self.d_min) / math.log1p(self.eps))
        L, k = self.levels, self.k
        self.r = self.d_min * (1.0 + self.eps) ** np.arange(L)     # r_i
        self.rho = 2.0 * self.r                                      # cluster radius rho_i
        self.rng = np.random.default_rng(seed)
        self.ops = 0
        self._store = PointStore()
        self._nb = np.zeros(L, dtype=np.int64)                      # clusters per level
        self._cid = np.full((L, k), -1, dtype=np.int64)             # center ids
        self._CX = np.zeros((L, k, 0))                              # center coordinates
        self._size = np.zeros((L, k + 1), dtype=np.int64)           # |C_j|, unclustered at k
        self._where = np.full((L, 0), -1, dtype=np.int16)           # cluster of id, k = none
        self._near = np.zeros((L, k, k), dtype=bool)                # centers within 3 rho

    def __len__(self) -> int:
        return self._store.n_live

    # ----------------------------------------------------------------- clusters
    def _open(self, l: int, i: int, dist_to_centers: np.ndarray) -> None:
        """Make ``i`` the center of a new cluster at the end of level ``l``."""
        j = int(self._nb[l])
        self._cid[l, j] = i
        self._CX[l, j] = self._store.X[i]
        self._where[l, i] = j
        self._size[l, j] = 1
        near = dist_to_centers[:j] <= 3.0 * self.rho[l]
        self._near[l, j, :j] = near
        self._near[l, :j, j] = near
        self._nb[l] = j + 1

    def _cut(self, l: int, j: int) -> np.ndarray:
        """Remove clusters j, j+1, ... and the unclustered set of level l; return their ids."""
        n_ids = self._store.n_ids
        removed = np.flatnonzero(self._where[l, :n_ids] >= j)
        self._where[l, removed] = -1
        self._size[l, j:] = 0
        self._cid[l, j:] = -1
        self._near[l, j:, :] = False
        self._near[l, :, j:] = False
        self._nb[l] = j
        return removed

    def _readd(self, l: int, ids: np.ndarray) -> None:
        """Re-add ``ids`` in order, each to the first cluster within rho (sequential rule)."""
        X, k, rho = self._store.X, self.k, self.rho[l]
        pending = ids
        while pending.size:
            nb = int(self._nb[l])
            if nb == 0:                                     # an empty level: a first center
                self._open(l, int(pending[0]), np.zeros(0))
                pending = pending[1:]
                continue
            D = pairwise_distances(X[pending], self._CX[l, :nb])
            within = D <= rho
            found = within.any(axis=1)
            first = within.argmax(axis=1)
            stop = pending.size
            if nb < k and not found.all():
                stop = int(np.argmin(found))            # the first point that opens a cluster
            head = slice(0, stop)
            joined = pending[head][found[head]]
            self.ops += int(np.where(found[head], first[head] + 1, nb).sum())
            self._where[l, joined] = first[head][found[head]]
            np.add.at(self._size[l], first[head][found[head]], 1)
            lonely = pending[head][~found[head]]             # only when nb == k
            self._where[l, lonely] = k
            self._size[l, k] += lonely.size
            if stop == pending.size:
                return
            self.ops += nb
            self._open(l, int(pending[stop]), D[stop])
            pending = pending[stop + 1:]

    def _recluster(self, l: int, j: int, i: int, dist_to_centers: np.ndarray) -> None:
        removed = self._cut(l, j)
        self._open(l, i, dist_to_centers)
        self._readd(l, self.rng.permutation(removed))

    # ----------------------------------------------------------------- updates
    def insert(self, point) -> int:
        """Add a ``(d,)`` point to every level; return its id."""
        i = self._store.add(point)
        if self._CX.shape[2] != self._store.d:
            self._CX = np.zeros((self.levels, self.k, self._store.d))
        if self._where.shape[1] < self._store.X.shape[0]:
            where = np.full((self.levels, self._store.X.shape[0]), -1, dtype=np.int16)
            where[:, : self._where.shape[1]] = self._where
            self._where = where
        L, k, n = self.levels, self.k, self._store.n_live
        dist = pairwise_distances(self._store.X[i][None], self._CX.reshape(L * k, -1)
                                  ).reshape(L, k)
        u = self.rng.random((L, k))
        exists = np.arange(k)[None, :] < self._nb[:, None]
        t = n - (np.cumsum(self._size[:, :k], axis=1) - self._size[:, :k])   # t_j
        recluster = exists & (t >= 2) & (u * t < 1.0)
        hit = exists & (dist <= self.rho[:, None])
        event = recluster | hit
        has = event.any(axis=1)
        first = np.where(has, event.argmax(axis=1), self._nb)
        levels = np.arange(L)
        fc = np.minimum(first, k - 1)
        is_recluster = has & recluster[levels, fc]
        self.ops += int(first.sum() + (has & ~is_recluster).sum())
        join = has & ~is_recluster
        self._where[join, i] = first[join]
        self._size[levels[join], first[join]] += 1
        full = ~has & (self._nb == k)
        self._where[full, i] = k
        self._size[full, k] += 1
        for l in np.flatnonzero(~has & (self._nb < k)).tolist():
            self._open(l, i, dist[l])
        for l in np.flatnonzero(is_recluster).tolist():
            self._recluster(l, int(first[l]), i, dist[l])
        return i

    def delete(self, i: int) -> None:
        """Delete the live point ``i`` from every level (KeyError if it is not live)."""
        i = self._store.check_live(i)
        self._store.remove(i)
        L, k = self.levels, self.k
        levels = np.arange(L)
        j = self._where[:, i].astype(np.int64)
        self._size[levels, j] -= 1
        self._where[:, i] = -1
        centered = (j < k) & (self._cid[levels, np.minimum(j, k - 1)] == i)
        for l in np.flatnonzero(centered).tolist():
            removed = self._cut(l, int(j[l]))
            self._readd(l, self.rng.permutation(removed))

    # ----------------------------------------------------------------- query
    def _greedy(self, l: int) -> tuple[list[int], int]:
        """CLSW's greedy at level l: chosen cluster indices and the points they cover."""
        nb = int(self._nb[l])
        card = self._size[l, :nb].copy()
        near = self._near[l, :nb, :nb].copy()
        b_hat = card + near.astype(np.int64) @ card
        old = np.ones(nb, dtype=bool)
        covered, chosen = 0, []
        while len(chosen) < self.k and old.any():
            candidates = np.flatnonzero(old)
            sel = int(candidates[np.lexsort((candidates, b_hat[candidates]))[-1]])
            old[sel] = False
            rest = np.flatnonzero(old)
            d = pairwise_distances(self._CX[l, sel][None], self._CX[l, rest])[0]
            self.ops += rest.size
            drop = [sel] + rest[d <= 6.0 * self.rho[l]].tolist()   # 12 r_i
            lower = np.zeros(nb, dtype=np.int64)
            for c in drop:
                old[c] = False
                covered += int(card[c])
                lower += card[c] * near[c]
                near[c, :] = False
                near[:, c] = False
            b_hat -= lower
            chosen.append(sel)
        return chosen, covered

    def query(self) -> KCenterSolution:
        """The first level whose greedy covers all but ``b`` points; its centers' solution."""
        need = self._store.n_live - self.budget
        for l in range(self.levels):
            chosen, covered = self._greedy(l)
            if covered >= need:
                break
        solution, cost = solution_on_live(self._store, self._cid[l, chosen], self.budget)
        self.ops += cost
        return solution
