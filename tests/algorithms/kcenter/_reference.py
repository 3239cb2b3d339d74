"""Independent references: brute force, an assignment MILP, cdist recomputation, a driver.

None of these calls the package's distance kernel, greedy or exact solver: distances come
from ``scipy.spatial.distance.cdist``, the MILP is a different formulation (one program
minimising R over assignments, not a binary search over coverage programs).
"""

from __future__ import annotations

import itertools

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.spatial.distance import cdist


def radius_of(points: np.ndarray, centers: np.ndarray, budget: int) -> tuple[float, np.ndarray]:
    """Covering radius after discarding the ``budget`` farthest rows, and the mask beyond it."""
    d = cdist(points, centers).min(axis=1)
    if budget >= len(d):
        return 0.0, d > 0
    r = float(np.sort(d)[len(d) - budget - 1])
    return r, d > r


def brute_opt(points: np.ndarray, k: int, z: int) -> float:
    """OPT of the discrete k-center with z outliers by enumerating every k-subset."""
    n = len(points)
    return min(radius_of(points, points[list(c)], z)[0]
               for c in itertools.combinations(range(n), min(k, n)))


def assignment_milp_opt(points: np.ndarray, k: int, z: int) -> float:
    """OPT from one MILP: min R s.t. each point assigned to an open center or discarded.

    Variables [y_j (n), x_ij (n*n), o_i (n), R]; sum_j x_ij + o_i = 1, x_ij <= y_j,
    sum y <= k, sum o <= z, d_ij x_ij <= R.
    """
    n = len(points)
    D = cdist(points, points)
    nv = n + n * n + n + 1
    xi = lambda i, j: n + i * n + j  # noqa: E731
    rows, lo, hi = [], [], []

    def add(coefs: dict[int, float], low: float, high: float) -> None:
        row = np.zeros(nv)
        for j, v in coefs.items():
            row[j] = v
        rows.append(row)
        lo.append(low)
        hi.append(high)

    for i in range(n):
        add({**{xi(i, j): 1.0 for j in range(n)}, n + n * n + i: 1.0}, 1.0, 1.0)
        for j in range(n):
            add({xi(i, j): 1.0, j: -1.0}, -np.inf, 0.0)
            add({xi(i, j): D[i, j], nv - 1: -1.0}, -np.inf, 0.0)
    add(dict.fromkeys(range(n), 1.0), -np.inf, k)
    add(dict.fromkeys(range(n + n * n, n + n * n + n), 1.0), -np.inf, z)
    c = np.zeros(nv)
    c[-1] = 1.0
    integrality = np.ones(nv)
    integrality[-1] = 0
    upper = np.ones(nv)
    upper[-1] = np.inf
    res = milp(c, constraints=LinearConstraint(np.array(rows), lo, hi),
               integrality=integrality, bounds=Bounds(np.zeros(nv), upper))
    assert res.status == 0, res.message
    return float(res.x[-1])


def replay(structure, points: np.ndarray, updates, query_every: int, on_query) -> None:
    """Drive ``structure`` through ``updates`` (rows of ``points``); every ``query_every``
    updates call ``on_query(solution, live)`` with ``live`` a dict id -> row. A
    ``("delete_center", -1)`` deletes the first center of a fresh query."""
    row_of: dict[int, int] = {}
    id_of: dict[int, int] = {}
    for t, (op, row) in enumerate(updates, start=1):
        if op == "insert":
            i = structure.insert(points[row])
            row_of[i], id_of[row] = row, i
        elif op == "delete":
            i = id_of.pop(row)
            structure.delete(i)
            del row_of[i]
        else:
            sol = structure.query()
            on_query(sol, dict(row_of))
            i = sol.centers[0]
            structure.delete(i)
            del id_of[row_of.pop(i)]
        if t % query_every == 0:
            on_query(structure.query(), dict(row_of))
