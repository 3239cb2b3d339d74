"""Fidelity metrics of generated samples against held-out real data (closed forms)."""

from __future__ import annotations

import numpy as np


def mmd2_unbiased(X: np.ndarray, Y: np.ndarray, bandwidth: float) -> float:
    """Unbiased MMD^2 with k(x, y) = exp(-||x - y||^2 / (2 h^2))."""
    def k(A, B):
        d = ((A[:, None] - B[None]) ** 2).sum(-1)
        return np.exp(-d / (2 * bandwidth ** 2))
    m, n = len(X), len(Y)
    Kxx, Kyy = k(X, X), k(Y, Y)
    return float((Kxx.sum() - np.trace(Kxx)) / (m * (m - 1))
                 + (Kyy.sum() - np.trace(Kyy)) / (n * (n - 1)) - 2 * k(X, Y).mean())


def frechet_distance(X: np.ndarray, Y: np.ndarray) -> float:
    """||mu_x - mu_y||^2 + tr(S_x + S_y - 2 (S_x^1/2 S_y S_x^1/2)^1/2), by eigh."""
    mx, my = X.mean(0), Y.mean(0)
    Sx, Sy = np.cov(X, rowvar=False), np.cov(Y, rowvar=False)
    w, V = np.linalg.eigh(Sx)
    r = (V * np.sqrt(np.clip(w, 0, None))) @ V.T
    mid = np.linalg.eigvalsh(r @ Sy @ r)
    return float(((mx - my) ** 2).sum() + np.trace(Sx) + np.trace(Sy)
                 - 2 * np.sqrt(np.clip(mid, 0, None)).sum())


def precision_recall_knn(real: np.ndarray, fake: np.ndarray, k: int = 3) -> tuple[float, float]:
    """ADM's estimator: precision = share of fake inside some real k-NN ball, recall the
    reverse."""
    def inside(ref, q):
        d = np.sqrt(((ref[:, None] - ref[None]) ** 2).sum(-1))
        radius = np.sort(d, 1)[:, k]  # column 0 is the point itself
        dq = np.sqrt(((q[:, None] - ref[None]) ** 2).sum(-1))
        return float((dq <= radius[None]).any(1).mean())
    return inside(real, fake), inside(fake, real)
