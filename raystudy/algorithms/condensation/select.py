"""Subset selection: GADC's objective, greedy + steepest single swaps, and baselines.

J(S) = OT_kappa,eps(S, Y) + w_m * s_m * [1.25 ||mean S - mean Y||^2
       + sum_d (sqrt var_S,d - sqrt var_Y,d)^2] + w_ce * mean_{i in S} CE_i
(research note §3.1; variances unbiased, 0 for |S| = 1). Costs use the class's
precomputed (n, n) squared-distance matrix D, so a set S has C = D[S].
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np
import torch

from .partial_ot import gadc_shipped_cost, partial_ot, partial_ot_exact, row_error


def sqdist(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """||x_i - y_j||^2 ``(n, m)``."""
    return np.maximum(((X[:, None, :] - Y[None, :, :]) ** 2).sum(-1), 0.0)


@dataclass(frozen=True)
class SelectionObjective:
    """kappa, eps = eps_rel * median(D); solver 'converged' (entropic, to convergence) |
    'shipped' (the authors' n_iter iterations) | 'exact' (POT's LP, eps unused)."""

    kappa: float = 1.05
    eps_rel: float = 0.05
    solver: str = "converged"
    n_iter: int = 20
    moment_weight: float = 1.0
    scale_match: float = 6.0
    mean_factor: float = 1.25
    ce_weight: float = 0.0

    def terms(self, X: np.ndarray, D: np.ndarray, sets: np.ndarray,
              ce: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """X ``(n, d)`` class features, D ``(n, n)``, sets ``(B, K)`` -> each term ``(B,)``."""
        eps = self.eps_rel * float(np.median(D))
        C = torch.as_tensor(D[sets])
        K = sets.shape[1]
        if self.solver == "shipped":
            ot, plan = gadc_shipped_cost(C, self.kappa, eps, self.n_iter)
        elif self.solver == "exact":
            solved = [partial_ot_exact(c, self.kappa) for c in C.numpy()]
            ot = torch.tensor([value for value, _ in solved])
            plan = torch.as_tensor(np.stack([p for _, p in solved]))
        else:
            ot, plan = partial_ot(C, self.kappa, eps, None, tol=1e-9)
        S = X[sets]
        var_S = S.var(1, ddof=1) if K > 1 else np.zeros((len(sets), X.shape[1]))
        moment = (self.mean_factor * ((S.mean(1) - X.mean(0)) ** 2).sum(-1)
                  + ((np.sqrt(var_S) - np.sqrt(X.var(0, ddof=1))) ** 2).sum(-1))
        ce_term = ce[sets].mean(1) if ce is not None else np.zeros(len(sets))
        J = (ot.numpy() + self.moment_weight * self.scale_match * moment
             + self.ce_weight * ce_term)
        return {"J": J, "ot": ot.numpy(), "moment": moment, "ce": ce_term,
                "row_err": row_error(plan).numpy()}

    def J(self, X, D, sets, ce=None) -> np.ndarray:
        return self.terms(X, D, np.atleast_2d(sets), ce)["J"]


def greedy_select(X, D, K, objective, ce=None) -> list[int]:
    """Add argmin_c J(S + {c}) K times (the consistent weighting: J itself)."""
    S: list[int] = []
    for _ in range(K):
        cand = np.array([c for c in range(len(X)) if c not in S])
        sets = np.array([[*S, c] for c in cand])
        S.append(int(cand[int(np.argmin(objective.J(X, D, sets, ce)))]))
    return S


def swap_refine(X, D, S, objective, ce=None, max_iter=30, tol=1e-8) -> tuple[list[int], int]:
    """Steepest single swaps: take the best of all K (n - K) swaps while it lowers J by > tol."""
    S = list(S)
    current = float(objective.J(X, D, np.array(S), ce)[0])
    for it in range(max_iter):
        out = [c for c in range(len(X)) if c not in S]
        sets = np.array([S[:i] + [c] + S[i + 1:] for i in range(len(S)) for c in out])
        values = objective.J(X, D, sets, ce)
        best = int(np.argmin(values))
        if values[best] < current - tol:
            S, current = [int(v) for v in sets[best]], float(values[best])
        else:
            return S, it
    return S, max_iter


def brute_force(X, D, K, objective, ce=None) -> tuple[list[int], float]:
    sets = np.array(list(combinations(range(len(X)), K)))
    values = objective.J(X, D, sets, ce)
    return [int(v) for v in sets[int(np.argmin(values))]], float(values.min())


def kcenter_greedy(X: np.ndarray, K: int) -> list[int]:
    """Farthest-point: first centre nearest the mean, then argmax of the distance to S."""
    S = [int(np.argmin(((X - X.mean(0)) ** 2).sum(1)))]
    d = ((X - X[S[0]]) ** 2).sum(1)
    while len(S) < K:
        S.append(int(np.argmax(d)))
        d = np.minimum(d, ((X - X[S[-1]]) ** 2).sum(1))
    return S


def kcenter_radius(X: np.ndarray, S) -> float:
    return float(np.sqrt(sqdist(X, X[list(S)]).min(1).max()))


def herding(X: np.ndarray, K: int) -> list[int]:
    """iCaRL herding: k-th point argmin_x ||mu - (x + sum_{j<k} p_j)/k||."""
    mu, S, total = X.mean(0), [], np.zeros(X.shape[1])
    for k in range(1, K + 1):
        score = ((mu - (X + total) / k) ** 2).sum(1)
        score[S] = np.inf
        S.append(int(np.argmin(score)))
        total = total + X[S[-1]]
    return S


def d2c_style(scores: np.ndarray, K: int, interval: int = 20) -> list[int]:
    """D2C-style (a reconstruction: D2C's score is not published): sort by difficulty
    ascending, take every ``interval``-th (interval shrunk to fit n), first K."""
    order = np.argsort(scores, kind="stable")
    step = max(1, min(interval, len(order) // K))
    return [int(i) for i in order[::step][:K]]


METHODS = ("random", "kcenter", "herding", "d2c_style", "balanced_ot", "partial_ot", "gadc",
           "gadc_shipped")


def select_class(X: np.ndarray, K: int, method: str, rng: np.random.Generator,
                 scores: np.ndarray | None = None, ce: np.ndarray | None = None,
                 eps_rel: float = 0.05, kappa: float = 1.05, ce_weight: float = 1.0,
                 refine_iters: int = 10, solver: str = "converged", n_iter: int = 20
                 ) -> tuple[list[int], dict[str, float]]:
    """One class's subset (indices into X ``(n, d)``) and, for the OT methods, the trace of
    its two stages: J after greedy, J after the swaps, the swap rounds taken. ``n_iter``:
    gadc_shipped's Sinkhorn iterations (the authors' 20)."""
    if method not in METHODS:
        raise ValueError(f"method={method!r}: one of {', '.join(METHODS)}")
    if K > len(X):
        raise ValueError(f"a class has {len(X)} points < per_class={K}")
    if method == "random":
        return [int(i) for i in rng.choice(len(X), K, replace=False)], {}
    if method == "kcenter":
        return kcenter_greedy(X, K), {}
    if method == "herding":
        return herding(X, K), {}
    if method == "d2c_style":
        return d2c_style(scores if scores is not None else ((X - X.mean(0)) ** 2).sum(1), K), {}
    obj = SelectionObjective(
        kappa=1.0 if method == "balanced_ot" else kappa, eps_rel=eps_rel,
        solver="shipped" if method == "gadc_shipped" else solver, n_iter=n_iter,
        moment_weight=1.0 if method.startswith("gadc") else 0.0,
        ce_weight=ce_weight if method.startswith("gadc") else 0.0)
    D = sqdist(X, X)
    greedy = greedy_select(X, D, K, obj, ce)
    S, rounds = swap_refine(X, D, greedy, obj, ce, max_iter=refine_iters)
    trace = {"J_greedy": float(obj.J(X, D, np.array(greedy), ce)[0]),
             "J_swapped": float(obj.J(X, D, np.array(S), ce)[0]), "swap_rounds": float(rounds)}
    return S, trace


def select_subset(features: np.ndarray, labels: np.ndarray, per_class: int, method: str,
                  seed: int = 0, scores: np.ndarray | None = None,
                  ce: np.ndarray | None = None, eps_rel: float = 0.05, kappa: float = 1.05,
                  ce_weight: float = 1.0, refine_iters: int = 10,
                  solver: str = "converged", n_iter: int = 20) -> np.ndarray:
    """Indices (per_class per class, class by class) of ``features`` ``(N, d)``."""
    rng = np.random.default_rng(seed)
    out = []
    for c in np.unique(labels):
        idx = np.flatnonzero(labels == c)
        local, _ = select_class(features[idx], per_class, method, rng,
                                scores[idx] if scores is not None else None,
                                ce[idx] if ce is not None else None, eps_rel, kappa,
                                ce_weight, refine_iters, solver, n_iter)
        out.extend(int(idx[i]) for i in local)
    return np.array(out, dtype=np.int64)
