"""Batched fetching: cut an epoch's order into sorted fetches and minibatches.

Paper: D'Ascenzo & Cultrera di Montesano, "scDataset", arXiv 2506.01883, Sec. 3.

With batch size ``B`` and fetch factor ``f`` the fetch size is ``F = B * f``.
For epoch ``e`` of base seed ``s`` the epoch seed is ``s_e = s + 1000 * e`` (the
``scdataset`` package's rule, so seeds ``s`` and ``s + 1000`` share epochs). The
strategy's order (drawn with ``s_e``) is cut into ``K = ceil(N / F)`` fetches;
fetch ``k`` holds order positions ``[k F, (k + 1) F)``, sorted so that runs of
consecutive rows can be read as slices. Rank ``r`` of ``W`` takes fetches
``k = r, r + W, r + 2W, ...``, so ranks are disjoint and together cover the
epoch. Inside a fetch the rows are shuffled by a permutation ``pi_k`` and cut
into minibatches of ``B`` (the last one of the epoch may be shorter unless
``drop_last``).

``pi_k`` is the ``k``-th draw of ``numpy.random.default_rng(s_e).permutation``
for every fetch of the epoch, whatever the rank, so the minibatches of a fetch
do not depend on ``W``. Agreement with the ``scdataset`` package (0.3.0):

* ``world_size = 1``: identical fetches and identical minibatches, in the same
  order, for the same strategy, seed, batch size and fetch factor.
* ``world_size > 1``: identical fetches per rank (the same sorted rows). The
  package draws the permutation of a rank's ``j``-th fetch as the ``j``-th draw
  of its own generator, so its minibatches depend on ``W``; ours equal the
  ``world_size = 1`` minibatches of the same fetch.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from .readers import Output, RowReader, Rows
from .strategies import SamplingStrategy

__all__ = ["Fetch", "epoch_seed", "plan_fetches", "read_minibatches"]


@dataclass(frozen=True)
class Fetch:
    """One batched read and the minibatches cut from it.

    Attributes:
        index: position ``k`` of the fetch in the epoch.
        rows: sorted int64 row ids, shape ``(F_k,)`` (repeats possible when a
            strategy samples with replacement).
        batches: int64 positions into ``rows``, one array of shape ``(B,)`` (or
            shorter) per minibatch, in the order they are served.
    """

    index: int
    rows: np.ndarray
    batches: list[np.ndarray]

    @property
    def batch_rows(self) -> list[np.ndarray]:
        """Row ids of each minibatch."""
        return [self.rows[b] for b in self.batches]


def epoch_seed(seed: int, epoch: int) -> int:
    """The seed ``s_e = s + 1000 * e`` that draws epoch ``e``'s order."""
    return int(seed) + 1000 * int(epoch)


def _check(batch_size: int, fetch_factor: int, rank: int, world_size: int) -> None:
    if batch_size < 1 or fetch_factor < 1:
        raise ValueError(f"need batch_size, fetch_factor >= 1, got {batch_size}, {fetch_factor}")
    if world_size < 1 or not 0 <= rank < world_size:
        raise ValueError(f"need 0 <= rank < world_size, got rank={rank}, world_size={world_size}")


def plan_fetches(
    strategy: SamplingStrategy,
    n_rows: int,
    batch_size: int,
    fetch_factor: int,
    seed: int,
    epoch: int,
    rank: int = 0,
    world_size: int = 1,
    drop_last: bool = False,
) -> list[Fetch]:
    """Plan one epoch for one rank: the fetches to read and their minibatches.

    Args:
        strategy: a :class:`~.strategies.SamplingStrategy`.
        n_rows: rows ``N`` in the data.
        batch_size: minibatch size ``B``.
        fetch_factor: minibatches per fetch ``f``; a fetch reads ``B * f`` rows.
        seed: base seed ``s``.
        epoch: epoch ``e``; the order is drawn with ``s + 1000 * e``.
        rank: this consumer's rank ``r`` (default: 0).
        world_size: number of consumers ``W`` (default: 1).
        drop_last: drop a last minibatch shorter than ``B`` (default: ``False``).

    Returns:
        The fetches ``k = r, r + W, ...`` of the epoch, in order.
    """
    _check(batch_size, fetch_factor, rank, world_size)
    s_e = epoch_seed(seed, epoch)
    order = strategy.order(n_rows, s_e)
    fetch_size = batch_size * fetch_factor
    rng = np.random.default_rng(s_e)
    fetches = []
    for k, start in enumerate(range(0, len(order), fetch_size)):
        n_k = min(fetch_size, len(order) - start)
        pi_k = rng.permutation(n_k) if strategy.shuffle_in_fetch else None
        if k % world_size != rank:
            continue
        if pi_k is None:
            pi_k = np.arange(n_k, dtype=np.int64)
        cuts = range(0, n_k - batch_size + 1 if drop_last else n_k, batch_size)
        batches = [pi_k[c : c + batch_size].astype(np.int64) for c in cuts]
        fetches.append(Fetch(k, np.sort(order[start : start + n_k]), batches))
    return fetches


def read_minibatches(
    reader: RowReader, fetches: Sequence[Fetch], output: Output = "csr", coalesce: bool = True
) -> Iterator[Rows]:
    """Read each fetch with one batched read and yield its minibatches in order.

    Args:
        reader: any :class:`~.readers.RowReader`.
        fetches: planned fetches (from :func:`plan_fetches`).
        output: ``"csr"`` or ``"dense"`` ``X`` (default: ``"csr"``).
        coalesce: merge consecutive rows into slice reads; ``False`` reads row by
            row as a random-access loader does (default: ``True``).
    """
    for fetch in fetches:
        got = reader.read(fetch.rows, output, coalesce)
        for batch in fetch.batches:
            yield got.take(batch)
