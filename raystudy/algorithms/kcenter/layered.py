r"""Fully dynamic k-center with outliers by layered sampling: **raystudy's reconstruction**.

Paper: Huang, Li, Zhang, Li, Wang, Feng, "New Algorithms for Fully-Dynamic k-center with
Outliers" (ICML 2026 poster 64005). Only the abstract is public (no full text, no code), so
this is **raystudy's reconstruction** of the algorithm from the abstract
(``algorithm = "layered_reconstructed"``), **not the authors' algorithm**. What it keeps from
the abstract: no radius guess (every radius is a data quantile or a data distance, so no
cost depends on the aspect ratio :math:`\Delta`), "initial layers" that summarise most
inliers, a "transition" set of uncertain points kept exactly, a final refinement that
discards at most :math:`(1+\varepsilon)z` points, and an "update delay". The sampling
scheme is classic successive sampling (Mettu & Plaxton 2004; with outliers, Chen, Sadeqi
Azer & Zhang, NeurIPS 2018); the pseudocode is raystudy's (``docs/dynamic_kcenter.md``).

Symbols: live points :math:`P`, :math:`n = |P|`; :math:`k` centers; :math:`z` outliers;
:math:`\varepsilon > 0`; bi-criteria budget :math:`b = \lfloor (1+\varepsilon) z \rfloor`;
sample size :math:`s`; quantile :math:`\beta`; transition size :math:`\tau`; delay
:math:`D`. Defaults (each a knob, module constant :data:`KNOBS`):

.. math::
    s = \lceil 4 k \ln(k/\delta) \rceil,\ \delta = 0.1, \qquad \beta = \tfrac12, \qquad
    \tau = \max\!\big(\lceil 2(1+\varepsilon) z / \varepsilon \rceil,\ s\big), \qquad
    D = \min\!\big(\lceil \varepsilon z / 2 \rceil,\ b - z\big).

**Build** (the initial layers; ``rng`` draws the samples). :math:`R \leftarrow P`; while
:math:`|R| > \tau`: draw :math:`S_\ell` uniformly, :math:`\min(s, |R|)` points of
:math:`R` without replacement; :math:`d_p = d(p, S_\ell)`; :math:`r_\ell` = the
:math:`\lceil \beta |R| \rceil`-th smallest :math:`d_p` (a data quantile, no guess); every
:math:`p` with :math:`d_p \le r_\ell` joins the **group** of its nearest sample point;
remove them from :math:`R`. Then the **transition set** :math:`U \leftarrow R`. Each group
:math:`g` has a representative :math:`\mathrm{rep}(g)`, a live member (initially the sample
point), and a weight :math:`\omega_g` (its live members). With :math:`|R| > \tau` at least
:math:`1 - z/\tau` of :math:`R` are inliers; :math:`s` hits every optimal cluster holding
:math:`\ge |R|/(4k)` of :math:`R` with probability :math:`\ge 1 - \delta`
(:math:`k e^{-s/(4k)} \le \delta`), so (for :math:`z/\tau \le \varepsilon/(2(1+\varepsilon))
\le 1/4` when :math:`\varepsilon \le 1`) at least half of :math:`R` is within
:math:`2\,\mathrm{OPT}` of :math:`S_\ell`: :math:`r_\ell \le 2\,\mathrm{OPT}` (the
:math:`\beta = 1/2` quantile). Each layer removes at least :math:`\lceil \beta |R| \rceil`
points, so there are :math:`T \le \log_{1/(1-\beta)}(n/\tau) + 1` layers.

**Insert** :math:`p`. The **update delay**: :math:`p` waits in a buffer :math:`B`; when
:math:`|B| = D` the buffer is placed: each point scans the layers in order and joins the
group of its nearest :math:`S_\ell` point at the first layer with
:math:`d(p, S_\ell) \le r_\ell`, else joins :math:`U` (:math:`O(sT)` distances per point).
Buffered points are charged to the outlier slack at a query, :math:`|B| < D \le b - z`.

**Delete** :math:`p` (no distance evaluated): from :math:`B`, :math:`U` or its group
(:math:`\omega_g \mathrel{-}= 1`). A deleted sample point stays a **ghost**: its coordinates
still place new points, but if it was :math:`\mathrm{rep}(g)` the live member nearest the
ghost (distance stored at placement) takes over. Every member is within :math:`r_\ell` of the
ghost, so within :math:`2 r_\ell` of the representative, and a deleted point is never a
center, even when an adversary deletes every returned center.

**Rebuild** when :math:`|U| > 2\tau`, when :math:`n` doubled or halved since the last build,
or after ``rebuild_every`` updates (default: :math:`\max(n_{\text{build}}, \tau)`):
:math:`O(n s)` distances amortised over :math:`\Omega(n)` updates, :math:`O(s)` per update.

**Query** (the final refinement). The summary
:math:`W = \{\mathrm{rep}(g) : \omega_g > 0\} \cup U` with weights :math:`\omega_g` and 1;
the weighted Charikar greedy (``greedy.py``) over the distinct pairwise distances of
:math:`W` (distances among :math:`W` are cached: only new members are evaluated) with budget
:math:`b - |B|`; its centers (live points) are evaluated on every live point for the exact
radius :math:`r_b(C)` and outliers (:math:`n k` distances). Guarantee (union bound over the
layers): every non-buffered live point is within :math:`2 r_{\max}` of its :math:`W` point, so
the greedy's :math:`r^* \le \mathrm{OPT}_W \le 2\,\mathrm{OPT} + 4 r_{\max}` and
:math:`r_b(C) \le 3 r^* + 2 r_{\max} \le 6\,\mathrm{OPT} + 14\,r_{\max}`, a constant factor
while :math:`r_{\max} \le 2\,\mathrm{OPT}` holds (between rebuilds it is the build-time
OPT). No step reads a radius grid, so the cost in distance evaluations does not depend on
:math:`\Delta`; the amortised update cost is :math:`O(sT)`, not the paper's
:math:`\tilde O(k^2/\varepsilon^4)`.

Open choices, all raystudy's: :math:`s`, :math:`\delta`, :math:`\beta`, :math:`\tau`, the
rebuild triggers, the delay as an insertion buffer charged to the slack :math:`b - z`, the
representative promotion, and the greedy on :math:`W` as the "fine-grained division".
"""

from __future__ import annotations

import math
import numbers

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
from .greedy import charikar

ALGORITHM = "layered_reconstructed"
KNOBS: dict[str, float | int | None] = {
    "sample_size": None,     # s; None: ceil(4 k ln(k / delta))
    "delta": 0.1,            # failure probability in the default s
    "beta": 0.5,             # the quantile of a layer's radius
    "tau": None,             # transition size; None: max(ceil(2 (1 + eps) z / eps), s)
    "delay": None,           # insertion buffer; None: min(ceil(eps z / 2), b - z)
    "rebuild_every": None,   # updates between rebuilds; None: n at the last build (>= tau)
}
"""The reconstruction's open choices and their defaults (module docstring)."""

_BUFFER, _TRANSITION = -2, -1


def _positive_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}.")
    return int(value)


class LayeredSampling:
    r"""Layered sampling for fully dynamic k-center with outliers (raystudy's reconstruction).

    Reconstructed from the abstract of Huang et al. (ICML 2026); not the authors' algorithm
    (module docstring for the steps, the guarantee and the open choices).

    Args:
        k: number of centers, >= 1.
        z: number of outliers, >= 0.
        eps: outlier slack, > 0; queries discard at most ``floor((1 + eps) z)`` points.
        seed: seed of the generator that draws the layer samples.
        **knobs: the open choices of :data:`KNOBS` (``sample_size``, ``delta``, ``beta``,
            ``tau``, ``delay``, ``rebuild_every``); an unknown name is a ValueError.

    Attributes:
        ops: point-to-point distance evaluations since creation, queries included.
        builds: how many times the layers were (re)built.
    """

    algorithm = ALGORITHM

    def __init__(self, k: int, z: int, eps: float = 0.5, *, seed: int = 0, **knobs) -> None:
        self.k, self.z = check_kz(k, z)
        self.eps = check_eps(eps, positive=True)
        unknown = sorted(set(knobs) - set(KNOBS))
        if unknown:
            raise ValueError(f"unknown knob(s) {unknown}; valid knobs: {sorted(KNOBS)}.")
        opts = {**KNOBS, **knobs}
        self.budget = budget_of(self.z, self.eps)
        delta = float(opts["delta"])
        if not 0.0 < delta < 1.0:
            raise ValueError(f"delta must lie in (0, 1), got {opts['delta']!r}.")
        self.s = (_positive_int("sample_size", opts["sample_size"])
                  if opts["sample_size"] is not None
                  else math.ceil(4 * self.k * math.log(self.k / delta)))
        self.beta = float(opts["beta"])
        if not 0.0 < self.beta < 1.0:
            raise ValueError(f"beta must lie in (0, 1), got {opts['beta']!r}.")
        self.tau = (_positive_int("tau", opts["tau"]) if opts["tau"] is not None
                    else max(math.ceil(2 * (1 + self.eps) * self.z / self.eps), self.s))
        slack = self.budget - self.z
        if opts["delay"] is None:
            self.delay = min(math.ceil(self.eps * self.z / 2), slack)
        else:
            self.delay = int(opts["delay"])
            if not 0 <= self.delay <= slack:
                raise ValueError(f"delay must lie in [0, floor((1+eps) z) - z] = [0, {slack}],"
                                 f" got {opts['delay']!r}.")
        self.rebuild_every = (None if opts["rebuild_every"] is None
                              else _positive_int("rebuild_every", opts["rebuild_every"]))
        self.rng = np.random.default_rng(seed)
        self.ops = 0
        self.builds = 0
        self._store = PointStore()
        self._n_build = 0
        self._since_build = 0
        self._cache_ids = np.zeros(0, dtype=np.int64)
        self._cache_D = np.zeros((0, 0))
        self._clear_summary()

    # ----------------------------------------------------------------- state
    def _clear_summary(self) -> None:
        self._layers: list[tuple[np.ndarray, float, int]] = []   # (S_l coords, r_l, first g)
        self._rep = np.zeros(0, dtype=np.int64)                  # rep(g), -1 if empty
        self._weight = np.zeros(0, dtype=np.int64)               # omega_g
        self._members: list[dict[int, float]] = []               # id -> d(p, ghost)
        self._slot: dict[int, int] = {}                          # id -> g, _TRANSITION, _BUFFER
        self._U: dict[int, None] = {}
        self._buffer: dict[int, None] = {}

    def __len__(self) -> int:
        return self._store.n_live

    @property
    def n_layers(self) -> int:
        """T, the number of initial layers of the current build."""
        return len(self._layers)

    # ----------------------------------------------------------------- build
    def _build(self) -> None:
        """Successive sampling over all live points (the buffer included)."""
        X = self._store.X
        self._clear_summary()
        rep: list[int] = []
        R = self._store.live
        while R.size > self.tau:
            m = min(self.s, R.size)
            S = self.rng.choice(R, size=m, replace=False)
            D = pairwise_distances(X[R], X[S])
            self.ops += R.size * m
            nearest = D.argmin(axis=1)
            d_p = D[np.arange(R.size), nearest]
            q = math.ceil(self.beta * R.size) - 1
            r_l = float(np.partition(d_p, q)[q])                 # the beta-quantile, no guess
            joined = d_p <= r_l
            g0 = len(rep)
            self._layers.append((X[S].copy(), r_l, g0))
            groups: list[dict[int, float]] = [{} for _ in range(m)]
            for i, j, d in zip(R[joined].tolist(), nearest[joined].tolist(),
                               d_p[joined].tolist(), strict=True):
                groups[j][i] = d
                self._slot[i] = g0 + j
            self._members.extend(groups)
            rep.extend(min(g, key=g.__getitem__) if g else -1 for g in groups)
            R = R[~joined]
        for i in R.tolist():
            self._U[i] = None
            self._slot[i] = _TRANSITION
        self._rep = np.array(rep, dtype=np.int64)
        self._weight = np.array([len(g) for g in self._members], dtype=np.int64)
        self._n_build = self._store.n_live
        self._since_build = 0
        self.builds += 1

    def _place(self, ids: np.ndarray) -> None:
        """Each point joins the first layer whose sample is within r_l, else U."""
        X = self._store.X
        pending = ids
        for S_X, r_l, g0 in self._layers:
            if pending.size == 0:
                break
            D = pairwise_distances(X[pending], S_X)
            self.ops += D.size
            nearest = D.argmin(axis=1)
            d_p = D[np.arange(pending.size), nearest]
            joined = d_p <= r_l
            for i, j, d in zip(pending[joined].tolist(), nearest[joined].tolist(),
                               d_p[joined].tolist(), strict=True):
                g = g0 + j
                self._members[g][i] = d
                self._weight[g] += 1
                self._slot[i] = g
                if self._rep[g] < 0:
                    self._rep[g] = i
            pending = pending[~joined]
        for i in pending.tolist():
            self._U[i] = None
            self._slot[i] = _TRANSITION

    def _flush(self) -> None:
        ids = np.fromiter(self._buffer, dtype=np.int64, count=len(self._buffer))
        self._buffer.clear()
        self._place(ids)

    def _maybe_rebuild(self) -> None:
        n = self._store.n_live
        period = self.rebuild_every or max(self._n_build, self.tau)
        resized = self._n_build > 0 and (n >= 2 * self._n_build or 2 * n <= self._n_build)
        if len(self._U) > 2 * self.tau or resized or self._since_build >= period:
            self._build()

    # ----------------------------------------------------------------- updates
    def insert(self, point) -> int:
        """Add a ``(d,)`` point; return its id (buffered until ``delay`` points wait)."""
        i = self._store.add(point)
        self._since_build += 1
        if self.delay > 0:
            self._buffer[i] = None
            self._slot[i] = _BUFFER
            if len(self._buffer) >= self.delay:
                self._flush()
        else:
            self._place(np.array([i], dtype=np.int64))
        self._maybe_rebuild()
        return i

    def delete(self, i: int) -> None:
        """Delete the live point ``i`` (KeyError if it is not live); evaluates no distance."""
        i = self._store.check_live(i)
        self._store.remove(i)
        slot = self._slot.pop(i)
        if slot == _BUFFER:
            del self._buffer[i]
        elif slot == _TRANSITION:
            del self._U[i]
        else:
            members = self._members[slot]
            del members[i]
            self._weight[slot] -= 1
            if self._rep[slot] == i:                 # promote the member nearest the ghost
                self._rep[slot] = min(members, key=members.__getitem__) if members else -1
        self._since_build += 1
        self._maybe_rebuild()

    # ----------------------------------------------------------------- query
    def summary(self) -> tuple[np.ndarray, np.ndarray]:
        """The summary W: ids ``(m,)`` (live representatives, then U) and weights ``(m,)``."""
        full = self._weight > 0
        ids = np.concatenate([self._rep[full],
                              np.fromiter(self._U, dtype=np.int64, count=len(self._U))])
        weights = np.concatenate([self._weight[full], np.ones(len(self._U), dtype=np.int64)])
        return ids, weights

    def _distances_among(self, ids: np.ndarray) -> np.ndarray:
        """The ``(m, m)`` distances of ``ids``, evaluating only pairs not cached already."""
        position = {int(v): p for p, v in enumerate(self._cache_ids.tolist())}
        old = np.array([position.get(v, -1) for v in ids.tolist()], dtype=np.int64)
        kept, new = np.flatnonzero(old >= 0), np.flatnonzero(old < 0)
        D = np.empty((ids.size, ids.size))
        D[np.ix_(kept, kept)] = self._cache_D[np.ix_(old[kept], old[kept])]
        if new.size:
            X = self._store.X
            cross = pairwise_distances(X[ids[new]], X[ids])
            D[new, :] = cross
            D[:, new] = cross.T
            self.ops += new.size * kept.size + new.size * (new.size - 1) // 2
        self._cache_ids, self._cache_D = ids.copy(), D
        return D

    def query(self) -> KCenterSolution:
        """At most k live centers, their radius after discarding b points, and the outliers."""
        ids, weights = self.summary()
        if ids.size == 0 and self._buffer:           # only waiting points: place them now
            self._flush()
            ids, weights = self.summary()
        D = self._distances_among(ids)
        centers, _ = charikar(D, weights, self.k, self.budget - len(self._buffer))
        solution, cost = solution_on_live(self._store, ids[centers], self.budget)
        self.ops += cost
        return solution
