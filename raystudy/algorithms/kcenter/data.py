r"""Seeded point sets with a controlled aspect ratio, a local CSV reader, and update streams.

:func:`generate` returns ``(n, d)`` float64 points (``n`` rows; ``z`` of them outliers by
construction), from one seed, offline:

============== ===========================================================================
kind           points
============== ===========================================================================
blobs          :math:`k` Gaussian clusters (:math:`\sigma = 1`, centers at least
               :math:`10\sigma` apart) and :math:`z` points uniform in the clusters' box
               widened by :math:`4\sigma`, at least :math:`5\sigma` from every center;
               rows shuffled. ``log10_delta`` must be None.
twins          the **same instance for every** ``log10_delta`` :math:`a` (rows drawn from
               ``seed`` alone): :math:`k` *lattice clusters* (Gaussians rounded to the
               integer lattice, duplicates redrawn, each point jittered by at most 0.05 per
               coordinate, so distinct points are at least :math:`s_0 = 0.9` apart) and
               :math:`z` lattice outliers at least :math:`4\sigma` from every center, rows
               shuffled; plus :math:`m = \max(1, \mathrm{round}(n/100))` near-duplicate
               *partners* of random inliers, each right after its twin (so a window holding
               one holds both), at distance :math:`\delta_a = \min(D_{\max}/10^{a},
               s_0/2)` (:math:`D_{\max}` the instance's diameter) along the first of 16
               seeded directions that stays :math:`\delta_a` clear of third points. So
               :math:`\Delta = \max(10^a, 2 D_{\max}/s_0)` up to a relative
               :math:`\delta_a/D_{\max}`: :math:`10^a` for :math:`a` in 3..12 (the floor
               :math:`2D_{\max}/s_0` is about 10^2.4 at n = 1,000 and 10^2.8 at n = 4,000
               in 2-D), while OPT moves by at most :math:`\delta_a`.
               :math:`0 \le a \le 14`.
far_outliers   :math:`n - z` lattice-cluster inliers (least distance :math:`s_1 \ge s_0`,
               diameter :math:`D_0`) and :math:`z` outliers on the sphere of radius
               :math:`R = \max(10^a s_1 / 2, D_0)` around the inliers' mean (the first two
               antipodal, all at least :math:`s_1` apart), so :math:`\Delta = 10^a` once
               :math:`10^a \ge 2 D_0 / s_1`: :math:`\Delta` grows from the top.
file           the first ``n`` rows of a local CSV (``path=``; nothing is downloaded): numeric
               columns, an optional header; a header column named ``timestamp``, ``time``
               or ``t`` orders the rows (stable) and is dropped. ``d`` is the file's.
============== ===========================================================================

:func:`stream` turns ``N`` rows into a list of updates ``(op, row)``: the first ``window``
entries fill the window (``("insert", row)``), then ``n_updates`` updates follow:

* ``sliding_window``: insert the next row, delete the oldest live row, alternately
  (rows in file order; needs ``N >= window + ceil(n_updates / 2)``);
* ``random``: a random subset fills the window; then a fair coin inserts a uniformly random
  non-live row or deletes a uniformly random live row, the live count kept within
  ``[window / 2, 3 window / 2]``;
* ``delete_centers``: alternately ``("delete_center", -1)``, an adaptive deletion of a center
  of the structure's current answer (the driver resolves it: it queries and deletes the
  first returned center), and the insertion of the next row. A stress test outside the
  oblivious-adversary guarantees of randomized algorithms.
"""

from __future__ import annotations

import csv
import math
import os
from pathlib import Path

import numpy as np
from scipy.spatial import cKDTree

from .core import pairwise_distances

KINDS = ("blobs", "twins", "far_outliers", "file")
STREAMS = ("sliding_window", "random", "delete_centers")
TIME_COLUMNS = ("timestamp", "time", "t")
JITTER = 0.05
"""Half-width of the per-coordinate jitter of lattice points."""
SEPARATION = 1.0 - 2 * JITTER
"""The least distance of two distinct lattice points after jitter (0.9)."""
MAX_LOG10_DELTA = 14.0
CANDIDATE_DIRECTIONS = 16
"""Directions drawn per twins partner (the first that keeps clear of third points wins)."""


# --------------------------------------------------------------------------- helpers
def diameter(X: np.ndarray) -> float:
    r"""The exact largest pairwise distance of ``X (n, d)``.

    A double sweep gives a lower bound :math:`\ell`; a pair farther apart than :math:`\ell`
    has both points at least :math:`\ell - R` from the mean (:math:`R` the largest such
    distance), so only those candidates are compared, in chunks.
    """
    n = X.shape[0]
    if n < 2:
        return 0.0
    radius = pairwise_distances(X, X.mean(axis=0)[None])[:, 0]
    far = pairwise_distances(X[int(np.argmax(radius))][None], X)[0]
    back = pairwise_distances(X[int(np.argmax(far))][None], X)[0]
    best = max(float(far.max()), float(back.max()))
    candidates = np.flatnonzero(radius >= best - radius.max())
    for chunk in np.array_split(candidates, max(1, candidates.size // 1024)):
        best = max(best, float(pairwise_distances(X[chunk], X[candidates]).max()))
    return best


def _place_centers(k: int, d: int, sep: float, rng: np.random.Generator) -> np.ndarray:
    """``k`` points of a cube, pairwise at least ``sep`` apart (rejection; the cube grows)."""
    side = sep * max(1.0, k ** (1.0 / d)) * 1.2
    while True:
        centers: list[np.ndarray] = []
        for _ in range(200 * k):
            c = rng.uniform(0.0, side, d)
            if all(np.linalg.norm(c - o) >= sep for o in centers):
                centers.append(c)
                if len(centers) == k:
                    return np.array(centers)
        side *= 1.2


def _unit_vectors(m: int, d: int, rng: np.random.Generator) -> np.ndarray:
    u = rng.standard_normal((m, d))
    return u / np.linalg.norm(u, axis=1, keepdims=True)


def _lattice_clusters(n_in: int, n_out: int, d: int, k: int, rng: np.random.Generator
                      ) -> tuple[np.ndarray, np.ndarray]:
    """Lattice inliers ``(n_in, d)`` in k clusters and ``(n_out, d)`` lattice outliers."""
    n_c = math.ceil(n_in / k)
    ball = math.pi ** (d / 2) / math.gamma(d / 2 + 1)
    sigma = max(0.5, (2.0 * n_c / ball) ** (1.0 / d) / 3.0)   # ~2 n_c sites within 3 sigma
    centers = np.round(_place_centers(k, d, 8.0 * sigma + 2.0, rng))
    taken: set[tuple[int, ...]] = set()
    inliers = []
    sizes = [n_in // k + (1 if j < n_in % k else 0) for j in range(k)]
    for c, size in zip(centers, sizes, strict=True):
        got: list[tuple[int, ...]] = []
        while len(got) < size:
            for site in map(tuple, np.round(c + sigma * rng.standard_normal((2 * size, d)))
                            .astype(np.int64).tolist()):
                if site not in taken:
                    taken.add(site)
                    got.append(site)
                    if len(got) == size:
                        break
        inliers.extend(got)
    lo, hi = centers.min(axis=0) - 4 * sigma, centers.max(axis=0) + 4 * sigma
    outliers: list[tuple[int, ...]] = []
    while len(outliers) < n_out:
        site = tuple(np.round(rng.uniform(lo, hi)).astype(np.int64).tolist())
        if site in taken or np.linalg.norm(centers - np.array(site), axis=1).min() < 4 * sigma:
            continue
        taken.add(site)
        outliers.append(site)
    jitter = rng.uniform(-JITTER, JITTER, (n_in + n_out, d))
    points = np.array(inliers + outliers, dtype=np.float64).reshape(n_in + n_out, d) + jitter
    return points[:n_in], points[n_in:]


# --------------------------------------------------------------------------- kinds
def _blobs(n: int, d: int, k: int, z: int, rng: np.random.Generator) -> np.ndarray:
    centers = _place_centers(k, d, 10.0, rng)
    n_in = n - z
    labels = np.arange(n_in) % k
    inliers = centers[labels] + rng.standard_normal((n_in, d))
    lo, hi = centers.min(axis=0) - 4.0, centers.max(axis=0) + 4.0
    outliers = []
    while len(outliers) < z:
        p = rng.uniform(lo, hi)
        if np.linalg.norm(centers - p, axis=1).min() >= 5.0:
            outliers.append(p)
    points = np.concatenate([inliers, np.array(outliers).reshape(z, d)])
    return points[rng.permutation(n)]


def _partners(base: np.ndarray, twins: np.ndarray, offset: float, directions: np.ndarray
              ) -> np.ndarray:
    """Each twin's partner at ``offset`` (at most half the base separation 0.9) along the
    first candidate direction that keeps it at least ``offset`` from every other base
    point; one exists (a third point is >= 0.9 from the twin), so the partner-twin pairs
    are the closest pairs and Delta = D_max / offset exactly."""
    m, c, d = directions.shape
    candidates = twins[:, None, :] + offset * directions            # (m, c, d)
    dist, _ = cKDTree(base).query(candidates.reshape(m * c, d), k=2)
    clearance = dist[:, 1].reshape(m, c)        # nearest base point but the twin itself
    ok = clearance >= offset * (1 + 1e-9)
    pick = np.where(ok.any(axis=1), ok.argmax(axis=1), clearance.argmax(axis=1))
    return candidates[np.arange(m), pick]


def _twins(n: int, d: int, k: int, z: int, a: float, seed: int) -> np.ndarray:
    m = max(1, round(n / 100))
    base_rng = np.random.default_rng([seed, 0])             # the instance: independent of a
    inliers, outliers = _lattice_clusters(n - m - z, z, d, k, base_rng)
    base = np.concatenate([inliers, outliers])
    order = base_rng.permutation(base.shape[0])
    partner_rng = np.random.default_rng([seed, 1])          # partners: independent of a
    twins = np.sort(partner_rng.choice(inliers.shape[0], size=m, replace=False))
    directions = _unit_vectors(m * CANDIDATE_DIRECTIONS, d, partner_rng
                               ).reshape(m, CANDIDATE_DIRECTIONS, d)
    offset = min(diameter(base) / 10.0 ** a, SEPARATION / 2)
    partners = _partners(base, inliers[twins], offset, directions)
    position = np.empty(base.shape[0], dtype=np.int64)
    position[order] = np.arange(base.shape[0])
    # each partner goes right after its twin, so a window that holds one holds both
    return np.insert(base[order], position[twins] + 1, partners, axis=0)


def _far_outliers(n: int, d: int, k: int, z: int, a: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng([seed, 0])
    inliers, _ = _lattice_clusters(n - z, 0, d, k, rng)
    s0 = float(cKDTree(inliers).query(inliers, k=2)[0][:, 1].min()) if n - z > 1 else 1.0
    radius = max(10.0 ** a * s0 / 2.0, diameter(inliers))
    mean = inliers.mean(axis=0)
    outliers: list[np.ndarray] = []
    while len(outliers) < z:
        u = _unit_vectors(1, d, rng)[0]
        candidates = [u, -u] if not outliers and z >= 2 else [u]
        for c in candidates:
            p = mean + radius * c
            if all(np.linalg.norm(p - o) >= s0 for o in outliers) and len(outliers) < z:
                outliers.append(p)
    points = np.concatenate([inliers, np.array(outliers).reshape(z, d)])
    return points[rng.permutation(n)]


def _read_csv(path, n: int) -> np.ndarray:
    """The first ``n`` rows of a numeric CSV (optional header, optional time column)."""
    name = os.fspath(path)
    try:
        with open(name, newline="") as f:
            rows = [r for r in csv.reader(f) if r and any(c.strip() for c in r)]
    except (OSError, UnicodeDecodeError, csv.Error) as err:
        raise ValueError(f"cannot read {name}: {type(err).__name__}: {err}".replace("\n", " ")
                         ) from err
    if not rows:
        raise ValueError(f"{name} holds no rows.")

    def numeric(cell: str) -> bool:
        try:
            float(cell)
            return True
        except ValueError:
            return False

    header = None if all(numeric(c) for c in rows[0]) else [c.strip().lower() for c in rows[0]]
    body = rows[1:] if header else rows
    width = len(rows[0])
    values = np.empty((len(body), width))
    for line, row in enumerate(body, start=2 if header else 1):
        if len(row) != width:
            raise ValueError(f"{name}, line {line}: {len(row)} columns, expected {width}.")
        try:
            values[line - (2 if header else 1)] = [float(c) for c in row]
        except ValueError:
            raise ValueError(f"{name}, line {line}: a non-numeric cell in {row}.") from None
    if not np.isfinite(values).all():
        line = int(np.argwhere(~np.isfinite(values))[0][0]) + (2 if header else 1)
        raise ValueError(f"{name}, line {line}: a NaN or infinite value.")
    time = [j for j, c in enumerate(header or []) if c in TIME_COLUMNS]
    if time:
        values = values[np.argsort(values[:, time[0]], kind="stable")]
        values = np.delete(values, time[0], axis=1)
    if values.shape[1] < 1:
        raise ValueError(f"{name} has no coordinate column.")
    if values.shape[0] < n:
        raise ValueError(f"{name} has {values.shape[0]} rows, fewer than n = {n}.")
    return values[:n]


def generate(kind: str, n: int, *, d: int = 2, k: int = 5, z: int = 20,
             log10_delta: float | None = None, seed: int = 0,
             path: str | os.PathLike | None = None) -> np.ndarray:
    """Points ``(n, d)`` of one of :data:`KINDS` (module docstring), seeded and offline.

    Args:
        kind: ``"blobs"``, ``"twins"``, ``"far_outliers"`` or ``"file"``.
        n: number of rows (with ``z`` outliers and, for twins, about 1 % partners).
        d: dimension (the file's for ``file``).
        k: number of clusters.
        z: number of outliers by construction.
        log10_delta: the targeted aspect ratio's log10, a (twins and far_outliers only).
        seed: the one seed of the draw.
        path: the CSV for ``file``.

    Raises:
        ValueError: one line, for an unknown kind, bad sizes, a misplaced or missing
            ``log10_delta`` or ``path``, or an unreadable CSV.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}.")
    if kind == "file":
        if path is None:
            raise ValueError("kind 'file' needs path= (a local CSV).")
        if log10_delta is not None:
            raise ValueError("log10_delta applies to twins and far_outliers, not to file.")
        if not isinstance(n, int) or n < 1:
            raise ValueError(f"n must be an integer >= 1, got {n!r}.")
        return _read_csv(Path(path), n)
    if path is not None:
        raise ValueError(f"path= applies to kind 'file', not to {kind!r}.")
    for name, value, least in (("d", d, 1), ("k", k, 1), ("z", z, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise ValueError(f"{name} must be an integer >= {least}, got {value!r}.")
    partners = max(1, round(n / 100)) if kind == "twins" else 0
    if isinstance(n, bool) or not isinstance(n, int) or n < z + k + partners:
        raise ValueError(f"n must be an integer >= z + k{' + n/100' if partners else ''}"
                         f" = {z + k + partners}, got {n!r}.")
    if kind == "blobs":
        if log10_delta is not None:
            raise ValueError("log10_delta applies to twins and far_outliers, not to blobs.")
        return _blobs(n, d, k, z, np.random.default_rng(seed))
    if log10_delta is None:
        raise ValueError(f"kind {kind!r} needs log10_delta (the targeted log10 of Delta).")
    a = float(log10_delta)
    if not 0.0 <= a <= MAX_LOG10_DELTA:
        raise ValueError(f"log10_delta must lie in [0, {MAX_LOG10_DELTA:g}], got {log10_delta!r}.")
    if kind == "twins":
        return _twins(n, d, k, z, a, seed)
    return _far_outliers(n, d, k, z, a, seed)


# --------------------------------------------------------------------------- streams
def stream(points, kind: str = "sliding_window", window: int = 2000, n_updates: int = 4000,
           seed: int = 0) -> list[tuple[str, int]]:
    """Updates over the rows of ``points`` (module docstring): ``window`` fills, then updates.

    Returns:
        ``[(op, row), ...]`` of length ``window + n_updates``; ``op`` is ``"insert"``,
        ``"delete"`` or ``"delete_center"`` (``row`` -1: the driver deletes the first
        center of a fresh query).
    """
    if kind not in STREAMS:
        raise ValueError(f"kind must be one of {STREAMS}, got {kind!r}.")
    N = len(points)
    if isinstance(window, bool) or not isinstance(window, int) or window < 1:
        raise ValueError(f"window must be an integer >= 1, got {window!r}.")
    if isinstance(n_updates, bool) or not isinstance(n_updates, int) or n_updates < 0:
        raise ValueError(f"n_updates must be an integer >= 0, got {n_updates!r}.")
    if kind == "random":
        if N <= window:
            raise ValueError(f"a random stream needs more than window = {window} rows, got {N}.")
        return _random_stream(N, window, n_updates, np.random.default_rng(seed))
    need = window + math.ceil(n_updates / 2)
    if N < need:
        raise ValueError(f"a {kind} stream needs window + ceil(n_updates / 2) = {need} rows,"
                         f" got {N}.")
    ops = [("insert", row) for row in range(window)]
    for t in range(n_updates):
        if t % 2 == 0:
            ops.append(("insert", window + t // 2) if kind == "sliding_window"
                       else ("delete_center", -1))
        else:
            ops.append(("delete", t // 2) if kind == "sliding_window"
                       else ("insert", window + t // 2))
    return ops


def _random_stream(N: int, window: int, n_updates: int, rng: np.random.Generator
                   ) -> list[tuple[str, int]]:
    perm = rng.permutation(N)
    live, idle = perm[:window].tolist(), perm[window:].tolist()   # swap-remove pools
    ops = [("insert", row) for row in live]
    low, high = max(1, window // 2), min(N, (3 * window) // 2)
    for _ in range(n_updates):
        coin = rng.random() < 0.5
        insert = bool(idle) and len(live) < high and (len(live) <= low or coin)
        source, target = (idle, live) if insert else (live, idle)
        j = int(rng.integers(len(source)))
        row = source[j]
        source[j] = source[-1]
        source.pop()
        target.append(row)
        ops.append(("insert" if insert else "delete", int(row)))
    return ops
