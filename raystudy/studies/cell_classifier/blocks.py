"""Block-sampled rows of on-disk single-cell data as a Ray Dataset (scDataset in Ray Data).

Paper: D'Ascenzo & Cultrera di Montesano, "scDataset", arXiv 2506.01883.

:class:`BlockSampledDatasource` plans ``epochs`` epochs with
:func:`~raystudy.algorithms.sampling.plan_fetches` and turns them into read
tasks. Each read task reads whole fetches (sorted rows, coalesced slice reads)
and yields one block per fetch whose **rows are minibatches**, in the planned
order, so a pipeline gets block-sampled, quasi-random minibatches with no
``random_shuffle`` all-to-all. One row per minibatch (not per cell) keeps a
minibatch whole whatever Ray Data does to blocks: it merges small blocks up to
its target size, and a split moves whole rows. Columns (``large_list`` each,
one list per minibatch of ``B`` cells):

* ``row`` (int64): the cells' row ids; one column per obs column (category
  codes, e.g. ``plate``, ``cell_line``);
* ``output="csr"``: ``indptr`` (int64, ``B + 1``), ``indices`` (int32) and
  ``data`` (float32): the minibatch's CSR matrix;
* ``output="dense"``: ``X`` (float32, ``B * genes``, row-major).

``ds.count()`` therefore counts minibatches. Read them back with
:func:`iter_minibatches`, which gives
:class:`~raystudy.algorithms.sampling.Rows` (CSR or dense ``X`` + obs).

Splitting an epoch across N Ray Train workers. ``ray.train.get_dataset_shard``
hands each worker a ``streaming_split(N, equal=True)`` of the dataset: Ray Data's
output splitter hands each block, as it is produced, to exactly one worker (the
one that has received the fewest rows so far). We therefore plan the whole epoch
once (``rank=0, world_size=1``) and let the split assign minibatches: shards are
disjoint and together cover the epoch, no worker waits on a fetch planned for
it while another worker's read is slow, and every minibatch keeps its planned
composition. Two consequences: which worker gets which minibatch depends on the
order in which read tasks finish (not reproducible), and ``equal=True`` evens out the number
of minibatches per worker at the end of the stream by dropping fewer than N
minibatches (rows of the dataset), never part of one. For scDataset's fixed
assignment (rank ``r`` takes fetches ``r, r + W, ...``), build one datasource
per worker inside the train loop with ``rank`` and ``world_size`` instead of
passing it to the trainer.

The reader is shipped to read tasks through the object store once per dataset
(``ray.put``); each Ray worker process unpickles it once and keeps its open
files for the following tasks.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import scipy.sparse as sp
from ray.data import Dataset, read_datasource
from ray.data.block import Block, BlockMetadata
from ray.data.datasource import Datasource, ReadTask

from raystudy.algorithms.sampling import RowReader, Rows, SamplingStrategy, plan_fetches
from raystudy.algorithms.sampling.plan import Fetch
from raystudy.algorithms.sampling.readers import Output
from raystudy.algorithms.sampling.runs import concat_ranges

__all__ = [
    "BlockSampledDatasource",
    "iter_minibatches",
    "fetch_to_table",
    "read_block_sampled",
    "table_to_minibatches",
]

_READERS: dict[str, RowReader] = {}


def _reader_from(handle: Any) -> RowReader:
    """The reader behind an ObjectRef (unpickled once per process) or the reader itself."""
    if isinstance(handle, RowReader):
        return handle
    import ray

    key = handle.hex()
    if key not in _READERS:
        while len(_READERS) >= 4:
            _READERS.pop(next(iter(_READERS))).close()
        _READERS[key] = ray.get(handle)
    return _READERS[key]


def _lists(
    values: np.ndarray, offsets: np.ndarray, dtype: pa.DataType | None = None
) -> pa.LargeListArray:
    """``values`` cut at ``offsets`` (one list per minibatch) as an Arrow large_list column."""
    return pa.LargeListArray.from_arrays(
        pa.array(np.asarray(offsets, np.int64)), pa.array(values.reshape(-1), dtype)
    )


def fetch_to_table(fetched: Rows, batches: list[np.ndarray]) -> pa.Table:
    """A fetch's minibatches as an Arrow table, one row per minibatch (module docstring).

    Args:
        fetched: the fetch's rows as read (sorted).
        batches: positions in ``fetched`` of each minibatch, in serving order.
    """
    sizes = np.array([len(b) for b in batches], dtype=np.int64)
    cuts = np.r_[0, np.cumsum(sizes)]
    ordered = fetched.take(np.concatenate(batches) if batches else np.empty(0, np.int64))
    columns: dict[str, Any] = {"row": _lists(ordered.rows, cuts, pa.int64())}
    for name, values in ordered.obs.items():
        columns[name] = _lists(np.asarray(values), cuts)
    if sp.issparse(ordered.X):
        x = ordered.X.tocsr()
        indptr = x.indptr.astype(np.int64)
        columns["indptr"] = _lists(
            indptr[concat_ranges(cuts[:-1], sizes + 1)], cuts + np.arange(len(cuts)), pa.int64()
        )
        columns["indices"] = _lists(x.indices, indptr[cuts], pa.int32())
        columns["data"] = _lists(x.data, indptr[cuts], pa.float32())
    else:
        columns["X"] = _lists(np.asarray(ordered.X), cuts * fetched.X.shape[1], pa.float32())
    return pa.table(columns)


def _unlist(column: Any) -> tuple[np.ndarray, np.ndarray]:
    """(offsets starting at 0, values) of a (chunked) large_list column."""
    array = column.combine_chunks() if hasattr(column, "combine_chunks") else column
    offsets = array.offsets.to_numpy()
    return offsets - offsets[0], array.flatten().to_numpy(zero_copy_only=False)


def table_to_minibatches(table: pa.Table, n_cols: int) -> Iterator[Rows]:
    """The inverse of :func:`fetch_to_table`: one ``Rows`` per table row."""
    lists = {name: _unlist(table.column(name)) for name in table.column_names}
    obs_names = [n for n in table.column_names if n not in ("row", "indptr", "indices",
                                                              "data", "X")]
    def part(name: str, i: int) -> np.ndarray:
        offsets, values = lists[name]
        return values[offsets[i] : offsets[i + 1]]

    for i in range(table.num_rows):
        rows = part("row", i)
        if "indptr" in lists:
            indptr = part("indptr", i)
            x: Any = sp.csr_matrix((part("data", i), part("indices", i), indptr - indptr[0]),
                                   shape=(len(rows), n_cols))
        else:
            x = part("X", i).reshape(len(rows), n_cols)
        yield Rows(rows, x, {name: part(name, i) for name in obs_names})


def iter_minibatches(data: Any, n_cols: int, prefetch_batches: int = 2) -> Iterator[Rows]:
    """Minibatches of a block-sampled Dataset or of its shard (``ctx.dataset(name)``).

    Args:
        data: a ``ray.data.Dataset`` or ``DataIterator`` made by this module.
        n_cols: genes per cell (columns of ``X``).
        prefetch_batches: blocks fetched ahead of the consumer (default: 2).
    """
    for table in data.iter_batches(batch_size=None, batch_format="pyarrow",
                                   prefetch_batches=prefetch_batches):
        yield from table_to_minibatches(table, n_cols)


class BlockSampledDatasource(Datasource):
    """A Ray Data datasource of block-sampled minibatches (one block per minibatch).

    Args:
        reader: any :class:`~raystudy.algorithms.sampling.RowReader`.
        strategy: a :class:`~raystudy.algorithms.sampling.SamplingStrategy`.
        batch_size: minibatch size ``B``.
        fetch_factor: minibatches per fetch ``f`` (default: 16).
        seed: base seed; epoch ``e`` is drawn with ``seed + 1000 e`` (default: 0).
        epochs: epochs in the dataset, planned one after the other (default: 1).
        first_epoch: number of the first planned epoch (default: 0).
        output: ``"csr"`` or ``"dense"`` rows (default: ``"csr"``).
        rank, world_size: plan only fetches ``rank, rank + world_size, ...``
            (default: 0, 1 -- the whole epoch; see the module docstring).
        drop_last: drop each epoch's last short minibatch (default: ``False``).
        coalesce: merge consecutive rows into slice reads; ``False`` reads row
            by row like a random-access loader (default: ``True``).
        max_fetches: keep only the first ``max_fetches`` planned fetches, for
            benchmarks and smoke runs (default: all).
    """

    def __init__(
        self,
        reader: RowReader,
        strategy: SamplingStrategy,
        batch_size: int,
        fetch_factor: int = 16,
        seed: int = 0,
        epochs: int = 1,
        first_epoch: int = 0,
        output: Output = "csr",
        rank: int = 0,
        world_size: int = 1,
        drop_last: bool = False,
        coalesce: bool = True,
        max_fetches: int | None = None,
    ) -> None:
        super().__init__()
        if output not in ("csr", "dense"):
            raise ValueError(f"output must be 'csr' or 'dense', got {output!r}")
        if epochs < 1:
            raise ValueError(f"epochs must be >= 1, got {epochs}")
        self.reader, self.output, self.coalesce = reader, output, coalesce
        self.fetches: list[Fetch] = [
            fetch
            for epoch in range(first_epoch, first_epoch + epochs)
            for fetch in plan_fetches(strategy, reader.n_rows, batch_size, fetch_factor, seed,
                                      epoch, rank, world_size, drop_last)
        ][:max_fetches]
        self.n_cells = sum(len(b) for f in self.fetches for b in f.batches)
        self.n_minibatches = sum(len(f.batches) for f in self.fetches)
        value_bytes = 4 if output == "dense" else 8 * _density(reader)
        self.cell_bytes = int(8 + 8 * len(reader.obs) + reader.n_cols * value_bytes)

    def estimate_inmemory_data_size(self) -> int:
        return self.n_cells * self.cell_bytes

    def get_read_tasks(
        self,
        parallelism: int,
        per_task_row_limit: int | None = None,
        data_context: Any = None,
    ) -> list[ReadTask]:
        """Contiguous groups of fetches, ``min(parallelism, fetches)`` tasks (in plan order)."""
        import ray

        handle: Any = ray.put(self.reader) if ray.is_initialized() else self.reader
        n_tasks = max(1, min(parallelism if parallelism > 0 else len(self.fetches),
                             len(self.fetches)))
        bounds = np.linspace(0, len(self.fetches), n_tasks + 1).round().astype(int)
        tasks = []
        for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
            group = self.fetches[lo:hi]
            cells = sum(len(b) for f in group for b in f.batches)
            meta = BlockMetadata(num_rows=sum(len(f.batches) for f in group),
                                 size_bytes=cells * self.cell_bytes,
                                 input_files=None, exec_stats=None)
            tasks.append(ReadTask(self._read_fn(handle, group), meta,
                                  per_task_row_limit=per_task_row_limit))
        return tasks

    def _read_fn(self, handle: Any, fetches: list[Fetch]):
        output, coalesce = self.output, self.coalesce

        def read() -> Iterator[Block]:
            reader = _reader_from(handle)
            for fetch in fetches:
                yield fetch_to_table(reader.read(fetch.rows, output, coalesce), fetch.batches)

        return read

    def get_name(self) -> str:
        return "BlockSampled"


def _density(reader: RowReader) -> float:
    """Fraction of stored values (1 for dense readers), from the first file's indptr."""
    first = getattr(reader, "readers", [reader])[0]
    indptr = getattr(first, "indptr", None)
    if indptr is None or not first.n_rows or not first.n_cols:
        return 0.5
    return float(indptr[-1]) / (first.n_rows * first.n_cols)


def read_block_sampled(source: BlockSampledDatasource, **read_args: Any) -> Dataset:
    """``ray.data.read_datasource`` with one read task per fetch by default.

    Args:
        source: the datasource.
        read_args: passed on (e.g. ``override_num_blocks``, ``ray_remote_args``).
    """
    read_args.setdefault("override_num_blocks", max(1, len(source.fetches)))
    return read_datasource(source, **read_args)
