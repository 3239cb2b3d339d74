"""Block-sampled minibatches for a plain PyTorch ``DataLoader`` (no Ray).

Paper: D'Ascenzo & Cultrera di Montesano, "scDataset", arXiv 2506.01883, Sec. 3.

:func:`~.plan.read_minibatches` is the whole loader: for each planned fetch it
reads the fetch's sorted rows in one batched read and serves its minibatches in
the planned order. :class:`BlockSampledDataset` wraps it as a
``torch.utils.data.IterableDataset``; use it with ``batch_size=None`` because
every item already is a minibatch:

    >>> from torch.utils.data import DataLoader
    >>> from raystudy.algorithms.sampling import BlockShuffling, H5ADCollection
    >>> from raystudy.algorithms.sampling.torch_loader import BlockSampledDataset
    >>> coll = H5ADCollection(paths, obs_columns=["plate", "cell_line"])
    >>> ds = BlockSampledDataset(coll, BlockShuffling(16), batch_size=64, fetch_factor=256)
    >>> for epoch in range(3):
    ...     ds.set_epoch(epoch)
    ...     for mb in DataLoader(ds, batch_size=None, num_workers=2):
    ...         mb["X"], mb["cell_line"]   # float32 (64, genes), int64 (64,)

Splitting the epoch: consumer ``c`` of ``C = world_size * num_workers``
(``c = rank * num_workers + worker_id``) takes fetches ``c, c + C, ...``, so
DataLoader workers and distributed ranks are disjoint and together cover the
epoch; the minibatches of a fetch do not depend on ``C`` (see :mod:`.plan`).
With ``num_workers > 1`` the DataLoader interleaves its workers' minibatches.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import torch
from torch.utils.data import IterableDataset, get_worker_info

from .plan import Fetch, plan_fetches, read_minibatches
from .readers import RowReader, Rows
from .strategies import SamplingStrategy

__all__ = ["BlockSampledDataset", "rows_to_tensors"]


def rows_to_tensors(
    rows: Rows, log1p: bool = False, dtype: torch.dtype = torch.float32
) -> dict[str, torch.Tensor]:
    """A minibatch as tensors: ``X`` dense ``(B, genes)``, ``row`` and each obs column ``(B,)``.

    Args:
        rows: one minibatch.
        log1p: apply ``log(1 + x)`` to ``X`` (default: ``False``).
        dtype: dtype of ``X`` (default: float32).
    """
    x = rows.X.toarray() if hasattr(rows.X, "toarray") else np.array(rows.X)
    x = torch.from_numpy(np.ascontiguousarray(x)).to(dtype)
    out = {"X": torch.log1p(x) if log1p else x, "row": torch.tensor(rows.rows)}
    for name, values in rows.obs.items():
        values = np.asarray(values)
        out[name] = torch.tensor(values.astype(np.int64) if values.dtype.kind in "iub"
                                 else values)
    return out


class BlockSampledDataset(IterableDataset):
    """An ``IterableDataset`` of block-sampled minibatches (use ``batch_size=None``).

    Args:
        reader: any :class:`~.readers.RowReader` (picklable: workers reopen files).
        strategy: a :class:`~.strategies.SamplingStrategy`.
        batch_size: minibatch size ``B``.
        fetch_factor: minibatches per fetch ``f`` (default: 16).
        seed: base seed (default: 0).
        rank, world_size: this process's distributed rank and the number of
            ranks (default: from ``torch.distributed`` when initialised, else 0, 1).
        drop_last: drop the epoch's last short minibatch (default: ``False``).
        coalesce: merge consecutive rows into slice reads (default: ``True``).
        transform: maps each minibatch :class:`~.readers.Rows` to the yielded
            item (default: :func:`rows_to_tensors` with ``log1p=False``).
    """

    def __init__(
        self,
        reader: RowReader,
        strategy: SamplingStrategy,
        batch_size: int,
        fetch_factor: int = 16,
        seed: int = 0,
        rank: int | None = None,
        world_size: int | None = None,
        drop_last: bool = False,
        coalesce: bool = True,
        transform: Callable[[Rows], Any] | None = None,
    ) -> None:
        super().__init__()
        dist = torch.distributed.is_available() and torch.distributed.is_initialized()
        self.rank = rank if rank is not None else (torch.distributed.get_rank() if dist else 0)
        self.world_size = world_size if world_size is not None else (
            torch.distributed.get_world_size() if dist else 1)
        self.reader, self.strategy = reader, strategy
        self.batch_size, self.fetch_factor, self.seed = batch_size, fetch_factor, seed
        self.drop_last, self.coalesce = drop_last, coalesce
        self.transform = transform or rows_to_tensors
        self.epoch = 0
        if batch_size < 1 or fetch_factor < 1 or not 0 <= self.rank < self.world_size:
            raise ValueError(f"need batch_size, fetch_factor >= 1 and 0 <= rank < world_size, "
                             f"got {batch_size}, {fetch_factor}, {self.rank}, {self.world_size}")

    def set_epoch(self, epoch: int) -> None:
        """Draw the next iteration's order with epoch ``epoch`` (call before each epoch)."""
        self.epoch = int(epoch)

    def consumer(self) -> tuple[int, int]:
        """``(c, C)``: this iterator's consumer index and the number of consumers."""
        info = get_worker_info()
        n_workers, worker = (1, 0) if info is None else (info.num_workers, info.id)
        return self.rank * n_workers + worker, self.world_size * n_workers

    def fetches(self) -> list[Fetch]:
        """This consumer's fetches of the current epoch."""
        c, n_consumers = self.consumer()
        return plan_fetches(self.strategy, self.reader.n_rows, self.batch_size,
                            self.fetch_factor, self.seed, self.epoch, c, n_consumers,
                            self.drop_last)

    def __iter__(self) -> Iterator[Any]:
        for rows in read_minibatches(self.reader, self.fetches(), "csr", self.coalesce):
            yield self.transform(rows)
