"""The study's data: class-conditional 8-d Gaussian mixtures with a 5 % wide tail per class
(known densities, so the Bayes classifier and the tail are exact; research note §8)."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np


@dataclass
class Mixture:
    x_train: np.ndarray  # (C n_train, d)
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    tail_test: np.ndarray  # (C n_test,) bool: drawn from the wide tail
    means: np.ndarray  # (C, 3, d) mode centres
    scales: np.ndarray  # (C, 3, d) mode standard deviations


WEIGHTS = np.array([0.55, 0.30, 0.10, 0.05])  # three modes and the 5 % tail N(centre, 9 I)


@functools.lru_cache(maxsize=4)
def mixture(seed: int, classes: int, dim: int, n_train: int, n_test: int) -> Mixture:
    """Class-conditional Gaussian mixtures with known densities (research note §8)."""
    rng = np.random.default_rng(1000 + seed)
    means = rng.normal(0, 3.0, size=(classes, 3, dim))
    scales = rng.uniform(0.3, 1.0, size=(classes, 3, dim))

    def draw(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        xs, ys, tails = [], [], []
        for c in range(classes):
            comp = rng.choice(4, n, p=WEIGHTS)
            centre = means[c].mean(0)
            x = np.where((comp == 3)[:, None], centre + 3.0 * rng.normal(size=(n, dim)),
                         means[c][np.minimum(comp, 2)] + scales[c][np.minimum(comp, 2)]
                         * rng.normal(size=(n, dim)))
            xs.append(x)
            ys.append(np.full(n, c))
            tails.append(comp == 3)
        return np.concatenate(xs), np.concatenate(ys), np.concatenate(tails)
    xtr, ytr, _ = draw(n_train)
    xte, yte, tte = draw(n_test)
    return Mixture(xtr, ytr, xte, yte, tte, means, scales)


def log_density(m: Mixture, x: np.ndarray) -> np.ndarray:
    """log p(x | c) ``(n, C)`` of the known mixture."""
    out = []
    d = x.shape[1]
    for c in range(len(m.means)):
        parts = []
        for k in range(3):
            s = m.scales[c, k]
            parts.append(np.log(WEIGHTS[k]) - 0.5 * (((x - m.means[c, k]) / s) ** 2).sum(1)
                         - np.log(s).sum() - 0.5 * d * np.log(2 * np.pi))
        z = x - m.means[c].mean(0)
        parts.append(np.log(WEIGHTS[3]) - 0.5 * (z ** 2).sum(1) / 9 - d * np.log(3.0)
                     - 0.5 * d * np.log(2 * np.pi))
        out.append(np.logaddexp.reduce(np.stack(parts), axis=0))
    return np.stack(out, 1)


def bayes_log_probs(m: Mixture, x: np.ndarray) -> np.ndarray:
    """log p(c | x) ``(n, C)`` under equal class priors: the Bayes classifier."""
    lp = log_density(m, x)
    return lp - np.logaddexp.reduce(lp, axis=1, keepdims=True)
