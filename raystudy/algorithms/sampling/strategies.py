"""Sampling strategies of scDataset: the order in which an epoch visits the rows.

Paper: D'Ascenzo & Cultrera di Montesano, "scDataset: Scalable Data Loading for
Deep Learning on Large-Scale Single-Cell Omics", arXiv 2506.01883.

A strategy maps ``(n_rows, seed)`` to the epoch's *order*: a 1-D int64 array of
row ids of length ``len_epoch(n_rows)``. :func:`~.plan.plan_fetches` then cuts
that order into fetches of ``batch_size * fetch_factor`` rows, sorts each fetch
for contiguous reads, and (when ``shuffle_in_fetch``) shuffles rows inside the
fetch before cutting minibatches.

* :class:`Streaming` -- rows in file order; ``shuffle=True`` only shuffles
  inside a fetch.
* :class:`BlockShuffling` -- the order ``0..n-1`` cut into blocks of ``b`` rows;
  the ``floor(n / b)`` complete blocks are permuted, the short remainder block
  is put at a uniformly drawn block boundary (or, with ``drop_last``,
  ``n mod b`` uniformly drawn rows are removed first).
* :class:`BlockWeightedSampling` -- draw ``total_size`` rows with probability
  ``w_i / sum(w)`` (with replacement, or without replacement in rounds of
  ``sampling_size``), sort them, then block-shuffle them as above.
* :class:`ClassBalancedSampling` -- :class:`BlockWeightedSampling` with
  ``w_i = 1 / count(label_i)``, so every class is equally likely.

Random draws, and their agreement with the ``scdataset`` package (0.3.0), the
paper's own code: every strategy draws from ``numpy.random.default_rng(seed)``
in the same sequence as the package, so for the same ``seed`` the order is
identical element for element. Two consequences are kept on purpose:

* BlockWeightedSampling draws the rows and then the block permutation from
  *two* generators seeded with the same ``seed`` (the package does the same),
  so the two draws restart the same random stream.
* ``len_epoch`` of the weighted strategies defaults to ``len(indices)`` (or
  ``n_rows``), also with ``replace=False`` where the package needs an explicit
  ``total_size``.

``indices`` (optional) restricts a strategy to a subset of rows, e.g. a
train split; it is sorted on construction.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "SamplingStrategy",
    "Streaming",
    "BlockShuffling",
    "BlockWeightedSampling",
    "ClassBalancedSampling",
]


def _sorted_subset(indices: ArrayLike | None) -> np.ndarray | None:
    if indices is None:
        return None
    return np.sort(np.asarray(indices, dtype=np.int64))


def _check_block_size(block_size: int) -> int:
    if int(block_size) < 1:
        raise ValueError(f"block_size must be >= 1, got {block_size}")
    return int(block_size)


class SamplingStrategy(ABC):
    """Base class: ``order(n_rows, seed)`` gives the epoch's row order.

    Args:
        indices: optional subset of row ids to sample from (default: all rows).
    """

    #: shuffle the rows of each fetch before cutting minibatches
    shuffle_in_fetch: bool = True

    def __init__(self, indices: ArrayLike | None = None) -> None:
        self.indices = _sorted_subset(indices)

    def _pool(self, n_rows: int) -> np.ndarray:
        if self.indices is None:
            return np.arange(n_rows, dtype=np.int64)
        if len(self.indices) and (self.indices[0] < 0 or self.indices[-1] >= n_rows):
            raise ValueError(f"indices must lie in [0, {n_rows})")
        return self.indices

    def _pool_len(self, n_rows: int) -> int:
        return n_rows if self.indices is None else len(self.indices)

    @abstractmethod
    def len_epoch(self, n_rows: int) -> int:
        """Number of rows one epoch visits."""

    @abstractmethod
    def order(self, n_rows: int, seed: int) -> np.ndarray:
        """The epoch's row order, int64 of shape ``(len_epoch(n_rows),)``."""


class Streaming(SamplingStrategy):
    """Rows in storage order (fast, but a minibatch sees a single plate).

    Args:
        shuffle: shuffle rows inside each fetch (default: ``False``).
        indices: optional subset of rows (default: all rows).
    """

    def __init__(self, shuffle: bool = False, indices: ArrayLike | None = None) -> None:
        super().__init__(indices)
        self.shuffle = bool(shuffle)
        self.shuffle_in_fetch = self.shuffle

    def len_epoch(self, n_rows: int) -> int:
        return self._pool_len(n_rows)

    def order(self, n_rows: int, seed: int) -> np.ndarray:
        return self._pool(n_rows).copy()

    def __repr__(self) -> str:
        return f"Streaming(shuffle={self.shuffle})"


def block_shuffle(
    pool: np.ndarray, block_size: int, rng: np.random.Generator, drop_last: bool = False
) -> np.ndarray:
    """Permute the complete blocks of ``pool``; place or drop the remainder.

    Args:
        pool: sorted row ids, shape ``(n,)``.
        block_size: rows per block ``b``.
        rng: the generator to draw from.
        drop_last: drop ``n mod b`` uniformly drawn rows instead of keeping a
            short block (default: ``False``).

    Returns:
        int64 row ids, shape ``(n,)`` or ``(n - n mod b,)`` with ``drop_last``.
    """
    n = len(pool)
    n_blocks, remainder = divmod(n, block_size)
    if drop_last and remainder:
        dropped = rng.choice(pool, size=remainder, replace=False)
        kept = pool[~np.isin(pool, dropped)]
    else:
        kept = pool[: n_blocks * block_size]
    block_order = rng.permutation(n_blocks)
    shuffled = kept.reshape(n_blocks, block_size)[block_order].reshape(-1)
    if drop_last or remainder == 0:
        return shuffled
    at = int(rng.integers(0, n_blocks + 1)) * block_size
    return np.concatenate([shuffled[:at], pool[n_blocks * block_size :], shuffled[at:]])


class BlockShuffling(SamplingStrategy):
    """Contiguous blocks of ``block_size`` rows, visited in a random block order.

    Args:
        block_size: rows per block ``b`` (default: 8, as the package).
        indices: optional subset of rows (default: all rows).
        drop_last: drop ``n mod b`` random rows instead of keeping a short
            block (default: ``False``).
    """

    def __init__(
        self, block_size: int = 8, indices: ArrayLike | None = None, drop_last: bool = False
    ) -> None:
        super().__init__(indices)
        self.block_size = _check_block_size(block_size)
        self.drop_last = bool(drop_last)

    def len_epoch(self, n_rows: int) -> int:
        n = self._pool_len(n_rows)
        return n - n % self.block_size if self.drop_last else n

    def order(self, n_rows: int, seed: int) -> np.ndarray:
        rng = np.random.default_rng(seed)
        return block_shuffle(self._pool(n_rows), self.block_size, rng, self.drop_last)

    def __repr__(self) -> str:
        return f"BlockShuffling(block_size={self.block_size}, drop_last={self.drop_last})"


class BlockWeightedSampling(SamplingStrategy):
    """Weighted draw of ``total_size`` rows, sorted, then block-shuffled.

    Args:
        block_size: rows per block ``b`` (default: 8).
        weights: non-negative weight per row of ``indices`` (or per row of the
            data); ``None`` means uniform (default: ``None``).
        total_size: rows per epoch (default: ``len(indices)`` or ``n_rows``).
        replace: draw with replacement (default: ``True``).
        indices: optional subset of rows (default: all rows).
        sampling_size: rows per round when ``replace=False`` (default: the
            whole epoch in one round).
    """

    def __init__(
        self,
        block_size: int = 8,
        weights: ArrayLike | None = None,
        total_size: int | None = None,
        replace: bool = True,
        indices: ArrayLike | None = None,
        sampling_size: int | None = None,
    ) -> None:
        super().__init__(indices)
        self.block_size = _check_block_size(block_size)
        if weights is not None:
            weights = np.asarray(weights, dtype=np.float64)
            if weights.ndim != 1 or np.any(weights < 0) or not weights.sum() > 0:
                raise ValueError("weights must be a 1-D non-negative array with a positive sum")
        self.weights = weights
        self.total_size = None if total_size is None else int(total_size)
        self.replace = bool(replace)
        self.sampling_size = None if sampling_size is None else int(sampling_size)

    def len_epoch(self, n_rows: int) -> int:
        return self._pool_len(n_rows) if self.total_size is None else self.total_size

    def _probabilities(self, n_rows: int) -> np.ndarray | None:
        if self.weights is None:
            return None
        w = self.weights
        if self.indices is not None and len(w) != len(self.indices):
            if len(w) != n_rows:
                raise ValueError(
                    f"weights has {len(w)} entries; expected {len(self.indices)} "
                    f"(one per index) or {n_rows} (one per row)"
                )
            w = w[self.indices]
        elif self.indices is None and len(w) != n_rows:
            raise ValueError(f"weights has {len(w)} entries for {n_rows} rows")
        return w / w.sum()

    def order(self, n_rows: int, seed: int) -> np.ndarray:
        pool = self._pool(n_rows)
        p = self._probabilities(n_rows)
        size = self.len_epoch(n_rows)
        rng = np.random.default_rng(seed)
        if self.replace:
            drawn = rng.choice(pool, size=size, replace=True, p=p)
        else:
            step = self.sampling_size or size
            rounds = []
            while sum(len(r) for r in rounds) < size:
                left = size - sum(len(r) for r in rounds)
                rounds.append(rng.choice(pool, size=min(step, left), replace=False, p=p))
            drawn = np.concatenate(rounds) if rounds else np.empty(0, np.int64)
        drawn = np.sort(drawn.astype(np.int64))
        return block_shuffle(drawn, self.block_size, np.random.default_rng(seed))

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(block_size={self.block_size}, "
            f"total_size={self.total_size}, replace={self.replace})"
        )


class ClassBalancedSampling(BlockWeightedSampling):
    """Weighted block sampling with ``w_i = 1 / count(label_i)``.

    Args:
        labels: one label per row of ``indices`` (balance within the subset) or
            per row of the data (balance by global class counts).
        block_size: rows per block ``b`` (default: 8).
        total_size: rows per epoch (default: ``len(indices)`` or ``n_rows``).
        replace: draw with replacement (default: ``True``).
        indices: optional subset of rows (default: all rows).
        sampling_size: rows per round when ``replace=False`` (default: one round).
    """

    def __init__(
        self,
        labels: ArrayLike,
        block_size: int = 8,
        total_size: int | None = None,
        replace: bool = True,
        indices: ArrayLike | None = None,
        sampling_size: int | None = None,
    ) -> None:
        labels = np.asarray(labels)
        if labels.size == 0:
            raise ValueError("labels must not be empty")
        _, inverse, counts = np.unique(labels, return_inverse=True, return_counts=True)
        super().__init__(
            block_size=block_size,
            weights=1.0 / counts[inverse.reshape(-1)],
            total_size=total_size,
            replace=replace,
            indices=indices,
            sampling_size=sampling_size,
        )
