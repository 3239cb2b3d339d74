r"""k-center with outliers: the solution type, Euclidean distances, checks, the point store.

Given the live points :math:`P \subset \mathbb{R}^d` (:math:`n = |P|`), a number of centers
:math:`k \ge 1` and an outlier budget :math:`z \ge 0`, the **discrete k-center with outliers**
problem picks centers :math:`C \subseteq P`, :math:`|C| \le k`, minimising

.. math::
    r_b(C) = \min_{Z \subseteq P,\ |Z| \le b}\ \max_{p \in P \setminus Z}\ d(p, C),
    \qquad d(p, C) = \min_{c \in C} \|p - c\|_2 ,

with :math:`b = z`; :math:`\mathrm{OPT} = \min_C r_z(C)`. :math:`r_b(C)` is the
:math:`(n - b)`-th smallest of the :math:`d(p, C)`: the covering radius after discarding the
:math:`b` farthest points (0 when :math:`b \ge n`). A **bi-criteria** solution may discard
:math:`b = \lfloor (1+\varepsilon) z \rfloor` points (Huang et al., ICML 2026; Chan, Lattanzi,
Sozio, Wang, Algorithmica 2024). The **aspect ratio** is
:math:`\Delta = \max_{p \ne q} \|p - q\| / \min_{p \ne q} \|p - q\|`.

Every distance in this package is a norm of a difference,
:math:`\sqrt{\sum_j (a_j - b_j)^2}` (:func:`pairwise_distances`), never
:math:`\sqrt{\|a\|^2 + \|b\|^2 - 2 a^\top b}`: near-duplicates 1e-9 apart at coordinates
1e3 (the ``twins`` generator) lose every digit to cancellation in the expanded form.

Shapes: points ``(n, d)`` float64; ids are non-negative ints (row indices for the static
functions, the values ``insert`` returned for the dynamic structures).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class KCenterSolution:
    """Centers, their covering radius and the points discarded beyond it."""

    centers: tuple[int, ...]
    """Ids of the centers, at most ``k``, in the order they were chosen."""
    radius: float
    r""":math:`r_b(C)`: the covering radius of the centers on the live points after discarding
    the :math:`b` farthest (``b = floor((1+eps) z)`` for the dynamic structures, ``z`` for
    :func:`~raystudy.algorithms.kcenter.offline_greedy` and ``exact_kcenter``)."""
    outliers: tuple[int, ...]
    """Ids of the points farther than ``radius`` from every center (at most ``b``), ascending."""


def pairwise_distances(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    r"""Euclidean distances :math:`\|a_i - b_j\|` of the rows of ``A (m, d)`` and ``B (n, d)``.

    Accumulates the squared coordinate differences one coordinate at a time (memory
    ``m x n``), then takes the square root: the difference is formed before squaring, so
    two points 1e-9 apart at 1e3 get 1e-9 to about 1e-13.
    """
    A = np.asarray(A, dtype=np.float64)
    B = np.asarray(B, dtype=np.float64)
    out = np.zeros((A.shape[0], B.shape[0]))
    for j in range(A.shape[1]):
        diff = A[:, j, None] - B[None, :, j]
        out += diff * diff
    return np.sqrt(out, out=out)


def budget_of(z: int, eps: float) -> int:
    r"""The bi-criteria outlier budget :math:`b = \lfloor (1+\varepsilon) z \rfloor`.

    A tiny relative tolerance keeps products that are integers in exact arithmetic (e.g.
    ``1.1 * 10``) from rounding down.
    """
    return int(math.floor((1.0 + eps) * z * (1.0 + 1e-12)))


def covering_radius(dist: np.ndarray, budget: int) -> tuple[float, np.ndarray]:
    r""":math:`r_b` from the distances ``dist (n,)`` of the points to their nearest center.

    Returns the radius (the :math:`(n-b)`-th smallest distance; 0 when :math:`b \ge n`) and
    the boolean mask ``(n,)`` of the points beyond it (at most :math:`b`).
    """
    n = dist.shape[0]
    if budget >= n:
        return 0.0, dist > 0.0
    radius = float(np.partition(dist, n - budget - 1)[n - budget - 1])
    return radius, dist > radius


def check_points(points, name: str = "points") -> np.ndarray:
    """``points`` as a float64 ``(n, d)`` array of finite values, or a one-line ValueError."""
    try:
        arr = np.asarray(points, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a numeric (n, d) array, got {type(points).__name__}."
                         ) from err
    if arr.ndim != 2 or arr.shape[1] < 1:
        raise ValueError(f"{name} must have shape (n, d) with d >= 1, got {arr.shape}.")
    if not np.isfinite(arr).all():
        bad = np.argwhere(~np.isfinite(arr))[0]
        raise ValueError(f"{name} must be finite, got {arr[tuple(bad)]} at row {bad[0]}.")
    return arr


def check_kz(k, z) -> tuple[int, int]:
    """``k >= 1`` and ``z >= 0`` as ints, or a one-line ValueError."""
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1:
        raise ValueError(f"k must be an integer >= 1, got {k!r}.")
    if isinstance(z, bool) or not isinstance(z, numbers.Integral) or z < 0:
        raise ValueError(f"z must be an integer >= 0, got {z!r}.")
    return int(k), int(z)


def check_eps(eps, *, positive: bool) -> float:
    """``eps`` as a finite float, > 0 (``positive``) or >= 0, or a one-line ValueError."""
    try:
        value = float(eps)
    except (TypeError, ValueError) as err:
        raise ValueError(f"eps must be a number, got {eps!r}.") from err
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        raise ValueError(f"eps must be {'>' if positive else '>='} 0, got {eps!r}.")
    return value


class PointStore:
    """The live points of a dynamic structure: coordinates by id, and O(1) delete and sample.

    Ids are ``0, 1, 2, ...`` in insertion order and never reused, so a deleted point's
    coordinates stay readable (the layered structure keeps deleted sample points as
    "ghosts"). The live ids sit in a dense array with a position map (swap-remove), so a
    deletion is O(1) and ``live`` is a deterministic function of the update sequence.
    """

    def __init__(self) -> None:
        self.d: int | None = None
        self.n_ids = 0
        self.n_live = 0
        self.X = np.empty((0, 0))
        self.alive = np.zeros(0, dtype=bool)
        self._live = np.zeros(0, dtype=np.int64)
        self._pos = np.zeros(0, dtype=np.int64)

    def _grow(self) -> None:
        cap = max(16, 2 * self.X.shape[0])
        X = np.empty((cap, self.d))
        X[: self.n_ids] = self.X[: self.n_ids]
        self.X = X
        for name, fill in (("alive", False), ("_live", -1), ("_pos", -1)):
            old = getattr(self, name)
            new = np.full(cap, fill, dtype=old.dtype)
            new[: old.shape[0]] = old
            setattr(self, name, new)

    def add(self, point) -> int:
        """Store a point (a finite ``(d,)`` vector, ``d`` fixed by the first) and return its id."""
        try:
            p = np.asarray(point, dtype=np.float64)
        except (TypeError, ValueError) as err:
            raise ValueError(f"point must be a numeric (d,) vector, got {type(point).__name__}."
                             ) from err
        if p.ndim != 1 or p.shape[0] < 1:
            raise ValueError(f"point must be a (d,) vector, got shape {p.shape}.")
        if self.d is None:
            self.d = p.shape[0]
            self.X = np.empty((0, self.d))
        if p.shape[0] != self.d:
            raise ValueError(f"point has d = {p.shape[0]} but earlier points have d = {self.d}.")
        if not np.isfinite(p).all():
            raise ValueError(f"point must be finite, got {p.tolist()}.")
        if self.n_ids == self.X.shape[0]:
            self._grow()
        i = self.n_ids
        self.X[i] = p
        self.alive[i] = True
        self._live[self.n_live] = i
        self._pos[i] = self.n_live
        self.n_ids += 1
        self.n_live += 1
        return i

    def check_live(self, i) -> int:
        """``i`` as an int if it is a live id, else a one-line KeyError."""
        if isinstance(i, bool) or not isinstance(i, numbers.Integral) \
                or not 0 <= i < self.n_ids or not self.alive[i]:
            raise KeyError(f"id {i!r} is not a live point.")
        return int(i)

    def remove(self, i: int) -> None:
        """Delete the live id ``i`` (swap-remove from the live array)."""
        i = self.check_live(i)
        p = self._pos[i]
        last = self._live[self.n_live - 1]
        self._live[p] = last
        self._pos[last] = p
        self._pos[i] = -1
        self.alive[i] = False
        self.n_live -= 1

    @property
    def live(self) -> np.ndarray:
        """The live ids ``(n_live,)`` (a copy), in the store's deterministic order."""
        return self._live[: self.n_live].copy()


def solution_on_live(store: PointStore, centers: list[int] | np.ndarray, budget: int
                     ) -> tuple[KCenterSolution, int]:
    """Evaluate ``centers`` on every live point; return the solution and the distances used.

    Costs ``n_live * |centers|`` distance evaluations (the second return value), the price
    of reporting an exact radius and exact outlier ids.
    """
    centers = [int(c) for c in centers]
    live = store.live
    if live.size == 0:
        return KCenterSolution(tuple(centers), 0.0, ()), 0
    if centers:
        dist = pairwise_distances(store.X[live], store.X[centers]).min(axis=1)
    else:
        dist = np.full(live.size, np.inf)
    radius, beyond = covering_radius(dist, budget)
    outliers = tuple(sorted(int(i) for i in live[beyond]))
    return KCenterSolution(tuple(centers), radius, outliers), live.size * len(centers)
