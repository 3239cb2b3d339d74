"""Minibatch diversity: Shannon entropy (bits) of a label inside a minibatch.

Paper: D'Ascenzo & Cultrera di Montesano, "scDataset", arXiv 2506.01883. The
paper scores a loader by the mean entropy of the *plate* label over its
minibatches (Tahoe-100M: at most ``log2(14) = 3.81`` bits).

For a minibatch of ``B`` labels with ``n_c`` copies of class ``c``::

    H = - sum_c (n_c / B) log2(n_c / B)

Under true random sampling (a uniform random permutation cut into minibatches,
i.e. ``B`` rows drawn without replacement from ``N`` rows of which ``N_c`` are
class ``c``) ``n_c`` is hypergeometric, and because ``H`` is a sum of one term
per class the expectation is exact and cheap::

    E[H] = sum_c sum_{k=1..B} P(n_c = k) * (-(k / B) log2(k / B))

with ``n_c ~ Hypergeom(N, N_c, B)``; with ``replace=True`` ``n_c`` is
``Binomial(B, N_c / N)`` instead. :func:`monte_carlo_random_entropy` estimates
the same quantity by sampling, for checking.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

__all__ = [
    "entropy_bits",
    "minibatch_entropies",
    "expected_random_entropy",
    "monte_carlo_random_entropy",
]


def entropy_bits(labels: ArrayLike) -> float:
    """Shannon entropy (base 2) of the labels of one minibatch, shape ``(B,)``."""
    labels = np.asarray(labels).reshape(-1)
    if labels.size == 0:
        return 0.0
    _, n_c = np.unique(labels, return_counts=True)
    p_c = n_c / labels.size
    return float(-(p_c * np.log2(p_c)).sum() + 0.0)


def minibatch_entropies(batches: Iterable[ArrayLike]) -> np.ndarray:
    """Entropy in bits of each minibatch's labels, shape ``(n_batches,)``."""
    return np.array([entropy_bits(b) for b in batches], dtype=np.float64)


def expected_random_entropy(
    class_counts: ArrayLike, batch_size: int, replace: bool = False
) -> float:
    """Exact ``E[H]`` of a minibatch of ``B`` rows drawn uniformly at random.

    Args:
        class_counts: rows per class ``N_c``, shape ``(C,)``.
        batch_size: minibatch size ``B``.
        replace: draw with replacement (binomial) instead of without
            (hypergeometric, true random minibatches; default: ``False``).

    Returns:
        Expected entropy in bits.
    """
    n_c = np.asarray(class_counts, dtype=np.int64).reshape(-1)
    n_c = n_c[n_c > 0]
    n = int(n_c.sum())
    if not replace and batch_size > n:
        raise ValueError(f"batch_size {batch_size} exceeds the {n} rows without replacement")
    k = np.arange(1, batch_size + 1)
    term = -(k / batch_size) * np.log2(k / batch_size)
    if replace:
        pmf = stats.binom.pmf(k[None, :], batch_size, (n_c / n)[:, None])
    else:
        pmf = stats.hypergeom.pmf(k[None, :], n, n_c[:, None], batch_size)
    return float((pmf * term[None, :]).sum())


def monte_carlo_random_entropy(
    labels: ArrayLike, batch_size: int, n_batches: int = 1000, seed: int = 0
) -> float:
    """Mean entropy of ``n_batches`` minibatches drawn without replacement.

    Args:
        labels: the label of every row, shape ``(N,)``.
        batch_size: minibatch size ``B``.
        n_batches: minibatches to draw (default: 1000).
        seed: seed of ``numpy.random.default_rng`` (default: 0).
    """
    labels = np.asarray(labels).reshape(-1)
    rng = np.random.default_rng(seed)
    draws = (rng.choice(labels.size, size=batch_size, replace=False) for _ in range(n_batches))
    return float(minibatch_entropies(labels[d] for d in draws).mean())
