"""Row readers that serve a sorted fetch with as few reads as possible.

Paper: D'Ascenzo & Cultrera di Montesano, "scDataset", arXiv 2506.01883.

Every reader maps a sorted array of row ids (repeats allowed) to a :class:`Rows`:
the rows' matrix ``X`` (``"csr"``: ``scipy.sparse.csr_matrix``, ``"dense"``:
``numpy.ndarray``), shape ``(n, n_cols)``, and one array per obs column, shape
``(n,)``. Categorical obs columns come as integer codes; ``reader.categories``
maps a column to its category names. obs columns are held in memory, so labels
cost no reads. ``reader.n_reads`` counts the slice reads sent to storage.

This module holds the base class and the dense readers (a 2-D HDF5 dataset, a
NumPy memmap); :mod:`.h5ad` holds the AnnData readers.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import h5py
import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike

from ...errors import DataError
from .direct import DirectSlices, SliceReader, slice_reader
from .runs import read_spans

__all__ = ["Rows", "RowReader", "HDF5ArrayReader", "MemmapReader", "Output"]

Output = Literal["csr", "dense"]
DEFAULT_MAX_GAP_BYTES = 1 << 16


@dataclass
class Rows:
    """The rows of one fetch (or minibatch).

    Attributes:
        rows: sorted int64 row ids, shape ``(n,)``.
        X: ``csr_matrix`` or ``ndarray``, shape ``(n, n_cols)``.
        obs: obs column name -> values or category codes, each shape ``(n,)``.
    """

    rows: np.ndarray
    X: sp.csr_matrix | np.ndarray
    obs: dict[str, np.ndarray] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.rows)

    def take(self, positions: ArrayLike) -> Rows:
        """The rows at ``positions`` (e.g. one minibatch of a fetch), in that order."""
        positions = np.asarray(positions, dtype=np.int64)
        return Rows(
            self.rows[positions], self.X[positions], {k: v[positions] for k, v in self.obs.items()}
        )


def check_rows(rows: ArrayLike, n_rows: int, where: str) -> np.ndarray:
    """``rows`` as sorted int64 within ``[0, n_rows)``, else ``ValueError``."""
    rows = np.asarray(rows, dtype=np.int64).reshape(-1)
    if rows.size and (np.any(rows[1:] < rows[:-1]) or rows[0] < 0 or rows[-1] >= n_rows):
        raise ValueError(f"{where}: rows must be sorted and lie in [0, {n_rows})")
    return rows


def gather_positions(
    rows: np.ndarray, span_starts: np.ndarray, span_stops: np.ndarray
) -> np.ndarray:
    """Position of each requested row inside the concatenated spans."""
    span = np.searchsorted(span_stops, rows, side="right")
    offsets = np.cumsum(span_stops - span_starts) - (span_stops - span_starts)
    return rows - span_starts[span] + offsets[span]


class RowReader(ABC):
    """Base class of all readers.

    Attributes:
        path: the file (or first file) read.
        n_rows, n_cols: shape of the matrix.
        obs: obs column name -> full column (values or codes), shape ``(n_rows,)``.
        categories: categorical obs column name -> category names, shape ``(C,)``.
        n_reads: slice reads issued so far.
    """

    path: Path
    n_rows: int
    n_cols: int

    def __init__(self) -> None:
        self._handles = {}
        self.obs: dict[str, np.ndarray] = {}
        self.categories: dict[str, np.ndarray] = {}
        self.n_reads = 0

    @abstractmethod
    def _read_x(self, rows: np.ndarray, output: Output, coalesce: bool) -> Any:
        """``X`` of the sorted ``rows``."""

    def read(self, rows: ArrayLike, output: Output = "csr", coalesce: bool = True) -> Rows:
        """Read sorted ``rows`` (repeats allowed) with their obs columns.

        Args:
            rows: sorted row ids, shape ``(n,)``.
            output: ``"csr"`` or ``"dense"`` (default: ``"csr"``).
            coalesce: merge consecutive rows into slice reads; ``False`` reads
                row by row, as a plain random-access loader does (default: ``True``).
        """
        if output not in ("csr", "dense"):
            raise ValueError(f"output must be 'csr' or 'dense', got {output!r}")
        rows = check_rows(rows, self.n_rows, str(self.path))
        x = self._read_x(rows, output, coalesce)
        return Rows(rows, x, {k: v[rows] for k, v in self.obs.items()})

    def __len__(self) -> int:
        return self.n_rows

    _file: h5py.File | None = None
    _handles: dict[str, SliceReader]
    direct: bool = True

    def _h5(self) -> h5py.File:
        """The open HDF5 file at ``path``, opened on first use (and after pickling)."""
        if self._file is None:
            self._file = open_h5(self.path)
        return self._file

    def _slices(self, key: str) -> SliceReader:
        """Row-slice reader of dataset ``key`` (direct from the file's bytes if possible)."""
        if key not in self._handles:
            self._handles[key] = slice_reader(self._h5()[key], self.path, self.direct)
        return self._handles[key]

    def close(self) -> None:
        """Release open file handles (reading again reopens them)."""
        self._handles = {}
        if self._file is not None:
            self._file.close()
            self._file = None

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_file": None, "_handles": {}}

    def __enter__(self) -> RowReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_h5(path: Path) -> h5py.File:
    """Open an HDF5 file read-only; ``DataError`` naming it when that fails."""
    if not path.is_file():
        raise DataError(f"{path}: no such file")
    try:
        return h5py.File(path, "r")
    except OSError as err:
        raise DataError(f"{path}: not a readable HDF5 file (truncated or corrupt?): {err}") from err


def read_dense_rows(
    rows: np.ndarray,
    n_cols: int,
    dtype: np.dtype,
    read_span: Callable[[int, int, np.ndarray], None],
    coalesce: bool = True,
    max_gap_bytes: int = DEFAULT_MAX_GAP_BYTES,
) -> tuple[np.ndarray, int]:
    """Rows of a dense row-major matrix, one ``read_span`` call per span.

    Args:
        rows: sorted row ids (repeats allowed), shape ``(n,)``.
        n_cols, dtype: the matrix's width and element type.
        read_span: ``read_span(start, stop, out)`` copies rows ``[start, stop)`` into ``out``;
            a reader with a ``will_need(starts, stops)`` method is told all spans first.
        coalesce: merge consecutive rows into one read (default: ``True``).
        max_gap_bytes: read through holes of at most this many bytes (default: 65536).

    Returns:
        ``(X, n_reads)`` with ``X`` of shape ``(n, n_cols)``.
    """
    row_bytes = max(1, n_cols * np.dtype(dtype).itemsize)
    starts, stops = read_spans(
        rows, coalesce, lambda a, b: a[1:] - b[:-1], max_gap_bytes / row_bytes
    )
    if hasattr(read_span, "will_need"):
        read_span.will_need(starts, stops)
    buf = np.empty((int((stops - starts).sum()), n_cols), dtype=dtype)
    at = 0
    for a, b in zip(starts.tolist(), stops.tolist(), strict=True):
        read_span(a, b, buf[at : at + b - a])
        at += b - a
    if len(rows) == len(buf):
        return buf, len(starts)
    return buf[gather_positions(rows, starts, stops)], len(starts)


class _DenseRowReader(RowReader):
    """Shared logic of readers whose ``X`` is a dense row-major 2-D array."""

    max_gap_bytes: int
    dtype: np.dtype

    @abstractmethod
    def _span_reader(self) -> Callable[[int, int, np.ndarray], None]:
        """``read(start, stop, out)`` copying rows ``[start, stop)`` into ``out`` (one read)."""

    def _read_x(self, rows: np.ndarray, output: Output, coalesce: bool) -> Any:
        x, n_reads = read_dense_rows(
            rows, self.n_cols, self.dtype, self._span_reader(), coalesce, self.max_gap_bytes
        )
        self.n_reads += n_reads
        return sp.csr_matrix(x) if output == "csr" else x


def _obs_arrays(
    obs: Mapping[str, ArrayLike] | None, n_rows: int, where: Path
) -> dict[str, np.ndarray]:
    out = {}
    for name, values in (obs or {}).items():
        values = np.asarray(values)
        if values.shape != (n_rows,):
            raise DataError(f"{where}: obs column {name!r} has {values.shape}, not ({n_rows},)")
        out[name] = values
    return out


class HDF5ArrayReader(_DenseRowReader):
    """Rows of a plain 2-D HDF5 dataset.

    Args:
        path: the HDF5 file.
        key: the 2-D dataset holding ``X`` (default: ``"X"``).
        obs: obs column name -> key of a 1-D dataset in the same file
            (default: none).
        max_gap_bytes: read through holes of at most this many bytes
            (default: 65536).
        direct: copy an unfiltered dataset straight out of the file instead of
            calling HDF5 per read (default: ``True``; see :mod:`.direct`).
    """

    def __init__(
        self,
        path: str | Path,
        key: str = "X",
        obs: Mapping[str, str] | None = None,
        max_gap_bytes: int = DEFAULT_MAX_GAP_BYTES,
        direct: bool = True,
    ) -> None:
        super().__init__()
        self.path, self.key, self.max_gap_bytes = Path(path), key, max_gap_bytes
        self.direct = direct
        f = self._h5()
        ds = self._dataset(f, key, ndim=2)
        self.n_rows, self.n_cols = ds.shape
        self.dtype = ds.dtype
        self.obs = {name: self._dataset(f, k, ndim=1)[()] for name, k in (obs or {}).items()}
        self.obs = _obs_arrays(self.obs, self.n_rows, self.path)

    def _dataset(self, f: h5py.File, key: str, ndim: int) -> h5py.Dataset:
        if key not in f or not isinstance(f[key], h5py.Dataset):
            raise DataError(f"{self.path}: missing dataset {key!r}")
        if f[key].ndim != ndim:
            raise DataError(f"{self.path}: dataset {key!r} is {f[key].ndim}-D, expected {ndim}-D")
        return f[key]

    def _span_reader(self) -> SliceReader:
        return self._slices(self.key)

    def _read_x(self, rows: np.ndarray, output: Output, coalesce: bool) -> Any:
        try:
            return super()._read_x(rows, output, coalesce)
        except OSError as err:
            raise DataError(f"{self.path}: cannot read {self.key!r}: {err}") from err


class MemmapReader(_DenseRowReader):
    """Rows of a C-ordered NumPy array on disk (``.npy`` or raw bytes).

    The file is memory-mapped once to check its layout; rows are then read with
    ``pread`` at known offsets (:class:`.direct.DirectSlices`), so the reader
    pickles without its data and cold reads fetch only what they need.

    Args:
        path: a ``.npy`` file, or a raw file read with ``dtype`` and ``shape``.
        obs: obs column name -> values, shape ``(n_rows,)`` (default: none).
        dtype, shape: layout of a raw file (ignored for ``.npy``).
        max_gap_bytes: copy through holes of at most this many bytes (default: 65536).
    """

    def __init__(
        self,
        path: str | Path,
        obs: Mapping[str, ArrayLike] | None = None,
        dtype: ArrayLike | None = None,
        shape: tuple[int, int] | None = None,
        max_gap_bytes: int = DEFAULT_MAX_GAP_BYTES,
    ) -> None:
        super().__init__()
        self.path, self.max_gap_bytes = Path(path), max_gap_bytes
        if not self.path.is_file():
            raise DataError(f"{self.path}: no such file")
        try:
            if self.path.suffix == ".npy":
                array = np.load(self.path, mmap_mode="r")
            else:
                if dtype is None or shape is None:
                    raise DataError(f"{self.path}: a raw memmap needs dtype and shape")
                array = np.memmap(self.path, dtype=dtype, mode="r", shape=tuple(shape))
        except (ValueError, OSError) as err:
            raise DataError(
                f"{self.path}: unreadable array (truncated or corrupt?): {err}"
            ) from err
        if array.ndim != 2:
            raise DataError(f"{self.path}: array is {array.ndim}-D, expected 2-D")
        if not array.flags.c_contiguous:
            raise DataError(f"{self.path}: array is not in C order (save np.ascontiguousarray)")
        self.n_rows, self.n_cols = array.shape
        self.dtype = array.dtype
        self.obs = _obs_arrays(obs, self.n_rows, self.path)
        self._direct = DirectSlices(
            self.path, array.shape, array.dtype, np.zeros(1, np.int64), np.array([array.offset])
        )

    def _span_reader(self) -> DirectSlices:
        return self._direct
