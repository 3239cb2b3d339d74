"""Fidelity and coverage metrics of generated samples against held-out real data.

* ``mmd2_unbiased(X, Y, h)``: unbiased MMD^2 (Gretton et al. 2012, Eq. 3), RBF kernel
  exp(-||x - y||^2 / (2 h^2));
* ``frechet_distance(X, Y)``: ||mu_x - mu_y||^2 + tr(S_x + S_y - 2 (S_x S_y)^1/2), FID's
  formula on any features;
* ``sliced_wasserstein(X, Y, projections=128, p=2, seed=0)``: (mean over fixed random unit
  directions theta of W_p^p(theta.X, theta.Y))^(1/p), the exact 1-d W_p of the two
  empirical distributions (uniform weights, any sizes) through their quantile functions;
* ``precision_recall_knn(real, fake, k=3)``: ADM's ``ManifoldEstimator(nhood_sizes=(3,))``
  (Kynkaanniemi et al. 2019): precision = share of fake points inside some real point's
  k-NN ball, recall = share of real points inside some fake point's ball;
* ``class_accuracy(log_probs, labels)``: share of samples a fixed classifier assigns to the
  label they were generated for;
* ``tail_recall(tail, fake, k=3)``: the recall above restricted to held-out points of the
  low-density tail (share of them inside the generated k-NN manifold).

Shapes: X ``(m, d)``, Y ``(n, d)``; every function returns a float.
"""

from __future__ import annotations

import numpy as np


def sqdist(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """||a_i - b_j||^2 ``(m, n)`` by the Gram expansion (clipped at 0)."""
    A, B = np.asarray(A, np.float64), np.asarray(B, np.float64)
    d = (A * A).sum(1)[:, None] + (B * B).sum(1)[None] - 2 * A @ B.T
    return np.maximum(d, 0.0)


def mmd2_unbiased(X: np.ndarray, Y: np.ndarray, bandwidth: float) -> float:
    """Unbiased MMD^2 with k(x, y) = exp(-||x - y||^2 / (2 h^2)); h = ``bandwidth``."""
    def k(A: np.ndarray, B: np.ndarray) -> np.ndarray:
        return np.exp(-sqdist(A, B) / (2 * bandwidth ** 2))
    m, n = len(X), len(Y)
    Kxx, Kyy = k(X, X), k(Y, Y)
    return float((Kxx.sum() - np.trace(Kxx)) / (m * (m - 1))
                 + (Kyy.sum() - np.trace(Kyy)) / (n * (n - 1)) - 2 * k(X, Y).mean())


def median_bandwidth(X: np.ndarray) -> float:
    """The median pairwise distance of ``X`` (the usual MMD bandwidth heuristic)."""
    d = np.sqrt(sqdist(X, X))
    return float(np.median(d[np.triu_indices(len(X), 1)]))


def frechet_distance(X: np.ndarray, Y: np.ndarray) -> float:
    """||mu_x - mu_y||^2 + tr(S_x + S_y - 2 (S_x^1/2 S_y S_x^1/2)^1/2), by eigh."""
    mx, my = X.mean(0), Y.mean(0)
    Sx, Sy = np.cov(X, rowvar=False), np.cov(Y, rowvar=False)
    w, V = np.linalg.eigh(Sx)
    r = (V * np.sqrt(np.clip(w, 0, None))) @ V.T
    mid = np.linalg.eigvalsh(r @ Sy @ r)
    return float(((mx - my) ** 2).sum() + np.trace(Sx) + np.trace(Sy)
                 - 2 * np.sqrt(np.clip(mid, 0, None)).sum())


def projections(d: int, count: int = 128, seed: int = 0) -> np.ndarray:
    """``count`` unit directions ``(count, d)``, fixed by ``seed``."""
    theta = np.random.default_rng(seed).normal(size=(count, d))
    return theta / np.linalg.norm(theta, axis=1, keepdims=True)


def wasserstein_1d(u: np.ndarray, v: np.ndarray, p: float = 2.0) -> float:
    """W_p^p of two empirical 1-d distributions (uniform weights): the integral over
    q in (0, 1) of |F_u^-1(q) - F_v^-1(q)|^p, exact on the merged quantile breakpoints."""
    u, v = np.sort(u), np.sort(v)
    qs = np.unique(np.concatenate([np.arange(1, len(u) + 1) / len(u),
                                   np.arange(1, len(v) + 1) / len(v), [0.0]]))
    widths, mid = np.diff(qs), (qs[1:] + qs[:-1]) / 2
    iu = np.minimum((mid * len(u)).astype(int), len(u) - 1)
    iv = np.minimum((mid * len(v)).astype(int), len(v) - 1)
    return float((widths * np.abs(u[iu] - v[iv]) ** p).sum())


def sliced_wasserstein(X: np.ndarray, Y: np.ndarray, projections_count: int = 128,
                       p: float = 2.0, seed: int = 0) -> float:
    """(mean_theta W_p^p(theta.X, theta.Y))^(1/p) over fixed directions (module doc)."""
    theta = projections(X.shape[1], projections_count, seed)
    px, py = X @ theta.T, Y @ theta.T
    w = [wasserstein_1d(px[:, j], py[:, j], p) for j in range(len(theta))]
    return float(np.mean(w) ** (1 / p))


def knn_radii(ref: np.ndarray, k: int) -> np.ndarray:
    """Distance of each point of ``ref`` to its k-th nearest other point of ``ref``."""
    d = np.sqrt(sqdist(ref, ref))
    return np.partition(d, k, axis=1)[:, k]  # column 0 is the point itself (ADM's kth)


def _inside(ref: np.ndarray, radius: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``(len(q),)`` bool: q inside some ball (ref_i, radius_i)."""
    return (np.sqrt(sqdist(q, ref)) <= radius[None]).any(1)


def precision_recall_knn(real: np.ndarray, fake: np.ndarray, k: int = 3) -> tuple[float, float]:
    """ADM's estimator (module doc): (precision, recall)."""
    precision = float(_inside(real, knn_radii(real, k), fake).mean())
    recall = float(_inside(fake, knn_radii(fake, k), real).mean())
    return precision, recall


def tail_recall(tail: np.ndarray, fake: np.ndarray, k: int = 3) -> float:
    """Share of held-out low-density points ``tail`` inside the k-NN manifold of ``fake``."""
    if len(tail) == 0:
        return float("nan")
    return float(_inside(fake, knn_radii(fake, k), tail).mean())


def class_accuracy(log_probs: np.ndarray, labels: np.ndarray) -> float:
    """Share of samples whose classifier argmax ``(n, C)`` equals their label ``(n,)``."""
    return float((np.asarray(log_probs).argmax(1) == np.asarray(labels)).mean())
