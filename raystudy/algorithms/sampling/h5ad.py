"""AnnData ``.h5ad`` readers (one file, or a collection addressed as one).

Paper: D'Ascenzo & Cultrera di Montesano, "scDataset", arXiv 2506.01883: on
AnnData opened backed, ``X`` stays in HDF5 as CSR (``X/data``, ``X/indices``,
``X/indptr``); a contiguous row range ``[a, b)`` is one slice of ``data`` and
one of ``indices`` between ``indptr[a]`` and ``indptr[b]``, while an index
array costs a read per row.

The files are read with h5py in anndata's on-disk format: ``X`` is a
``csr_matrix`` group or a dense 2-D dataset; ``obs`` is a ``dataframe`` group
whose columns are ``categorical`` groups (``categories`` + integer ``codes``,
-1 meaning missing) or plain arrays; ``var/_index`` names the genes.
``indptr`` and the requested obs columns are loaded once, at open; each run of
consecutive rows then costs two reads (``data`` and ``indices``), and runs
whose hole holds at most ``max_gap_bytes`` of stored values share a read.

A :class:`H5ADCollection` numbers the rows of its files ``0..N-1`` in file
order (Tahoe-100M: 14 plate files). Category names are merged across files in
order of first appearance and codes are remapped to that merged list.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import scipy.sparse as sp

from ...errors import DataError
from .readers import (
    DEFAULT_MAX_GAP_BYTES,
    Output,
    RowReader,
    check_rows,
    read_dense_rows,
)
from .runs import concat_ranges, read_spans

__all__ = ["H5ADReader", "H5ADCollection"]


def _strings(values: np.ndarray) -> np.ndarray:
    if values.dtype.kind in "OS":
        return np.array([v.decode() if isinstance(v, bytes) else str(v) for v in values])
    return values


def _read_obs_column(path: Path, group: h5py.Group, name: str) -> tuple[np.ndarray, Any]:
    """(values or codes, categories or None) of obs column ``name``."""
    if name not in group:
        raise DataError(f"{path}: missing obs column {name!r}")
    node = group[name]
    if isinstance(node, h5py.Group):
        if "codes" not in node or "categories" not in node:
            raise DataError(f"{path}: obs column {name!r} is a group but not a categorical")
        return node["codes"][()], _strings(node["categories"][()])
    return _strings(node[()]), None


class H5ADReader(RowReader):
    """Rows of one ``.h5ad`` file (CSR sparse or dense ``X``).

    Args:
        path: the ``.h5ad`` file.
        obs_columns: obs columns to bring along (default: all of them).
        max_gap_bytes: read through holes of at most this many bytes of
            stored values (default: 65536).
        direct: copy unfiltered datasets straight out of the file instead of
            calling HDF5 per read (default: ``True``; see :mod:`.direct`).
    """

    def __init__(
        self,
        path: str | Path,
        obs_columns: Sequence[str] | None = None,
        max_gap_bytes: int = DEFAULT_MAX_GAP_BYTES,
        direct: bool = True,
    ) -> None:
        super().__init__()
        self.path, self.max_gap_bytes, self.direct = Path(path), max_gap_bytes, direct
        f = self._h5()
        try:
            self._open_x(f)
            self._open_obs(f, obs_columns)
            self.var_names = self._var_names(f)
        except (OSError, KeyError) as err:
            raise DataError(f"{self.path}: unreadable (truncated or corrupt?): {err}") from err

    def _open_x(self, f: h5py.File) -> None:
        if "X" not in f:
            raise DataError(f"{self.path}: missing 'X'")
        x = f["X"]
        if isinstance(x, h5py.Dataset):
            if x.ndim != 2:
                raise DataError(f"{self.path}: 'X' is {x.ndim}-D, expected 2-D")
            self.sparse = False
            self.n_rows, self.n_cols = x.shape
            self.dtype = x.dtype
            return
        encoding = x.attrs.get("encoding-type", "")
        if encoding != "csr_matrix":
            raise DataError(f"{self.path}: 'X' is {encoding or 'a plain group'}, need csr_matrix")
        for key in ("data", "indices", "indptr"):
            if key not in x:
                raise DataError(f"{self.path}: missing 'X/{key}'")
        self.sparse = True
        self.n_rows, self.n_cols = (int(v) for v in x.attrs["shape"])
        self.dtype, self.index_dtype = x["data"].dtype, x["indices"].dtype
        self.indptr = x["indptr"][()].astype(np.int64)
        nnz = len(x["data"])
        if len(self.indptr) != self.n_rows + 1 or len(x["indices"]) != nnz:
            raise DataError(f"{self.path}: 'X' arrays disagree with its shape (truncated?)")
        if self.indptr[0] != 0 or self.indptr[-1] != nnz or np.any(np.diff(self.indptr) < 0):
            raise DataError(f"{self.path}: 'X/indptr' is corrupt")

    def _open_obs(self, f: h5py.File, obs_columns: Sequence[str] | None) -> None:
        if "obs" not in f:
            raise DataError(f"{self.path}: missing 'obs'")
        group = f["obs"]
        index = group.attrs.get("_index", "_index")
        if obs_columns is None:
            obs_columns = [str(c) for c in group.attrs.get("column-order", [])]
            obs_columns = obs_columns or [k for k in group if k != index]
        for name in obs_columns:
            values, categories = _read_obs_column(self.path, group, name)
            if values.shape != (self.n_rows,):
                raise DataError(f"{self.path}: obs column {name!r} has {len(values)} rows")
            self.obs[name] = values
            if categories is not None:
                self.categories[name] = categories

    def _var_names(self, f: h5py.File) -> np.ndarray:
        if "var" not in f:
            raise DataError(f"{self.path}: missing 'var'")
        index = f["var"].attrs.get("_index", "_index")
        if index not in f["var"]:
            raise DataError(f"{self.path}: missing 'var/{index}'")
        return _strings(f["var"][index][()])

    def _read_x(self, rows: np.ndarray, output: Output, coalesce: bool) -> Any:
        try:
            if self.sparse:
                return self._read_csr(rows, output, coalesce)
            return self._read_dense(rows, output, coalesce)
        except OSError as err:
            raise DataError(f"{self.path}: cannot read 'X' (truncated or corrupt?): {err}") from err

    def _read_dense(self, rows: np.ndarray, output: Output, coalesce: bool) -> Any:
        x, n_reads = read_dense_rows(
            rows,
            self.n_cols,
            self.dtype,
            self._slices("X"),
            coalesce,
            self.max_gap_bytes,
        )
        self.n_reads += n_reads
        return sp.csr_matrix(x) if output == "csr" else x

    def _read_csr(self, rows: np.ndarray, output: Output, coalesce: bool) -> Any:
        ip = self.indptr
        read_data, read_indices = self._slices("X/data"), self._slices("X/indices")
        value_bytes = self.dtype.itemsize + self.index_dtype.itemsize
        starts, stops = read_spans(
            rows, coalesce, lambda a, b: ip[a[1:]] - ip[b[:-1]], self.max_gap_bytes / value_bytes
        )
        lo, hi = ip[starts], ip[stops]
        read_data.will_need(lo, hi)
        read_indices.will_need(lo, hi)
        data = np.empty(int((hi - lo).sum()), dtype=self.dtype)
        indices = np.empty(len(data), dtype=self.index_dtype)
        at = 0
        for a, b in zip(lo.tolist(), hi.tolist(), strict=True):
            if b > a:
                read_data(a, b, data[at : at + b - a])
                read_indices(a, b, indices[at : at + b - a])
                self.n_reads += 2
            at += b - a
        lengths = ip[rows + 1] - ip[rows]
        if len(data) != int(lengths.sum()):
            span_offsets = np.cumsum(hi - lo) - (hi - lo)
            span = np.searchsorted(stops, rows, side="right")
            pos = concat_ranges(ip[rows] - lo[span] + span_offsets[span], lengths)
            data, indices = data[pos], indices[pos]
        indptr = np.r_[0, np.cumsum(lengths)]
        csr = sp.csr_matrix((data, indices, indptr), shape=(len(rows), self.n_cols))
        return csr if output == "csr" else csr.toarray()


class H5ADCollection(RowReader):
    """Several ``.h5ad`` files with the same genes, read as one matrix.

    Args:
        paths: the files, in row order (rows of file ``i`` follow file ``i - 1``).
        obs_columns: obs columns to bring along (default: those of the first file).
        max_gap_bytes, direct: passed to each :class:`H5ADReader`.
    """

    def __init__(
        self,
        paths: Sequence[str | Path],
        obs_columns: Sequence[str] | None = None,
        max_gap_bytes: int = DEFAULT_MAX_GAP_BYTES,
        direct: bool = True,
    ) -> None:
        super().__init__()
        if not paths:
            raise DataError("empty h5ad collection: no files given")
        first = H5ADReader(paths[0], obs_columns, max_gap_bytes, direct)
        columns = list(first.obs) if obs_columns is None else list(obs_columns)
        self.readers = [first] + [H5ADReader(p, columns, max_gap_bytes, direct) for p in paths[1:]]
        self.path = first.path
        self.n_cols, self.var_names = first.n_cols, first.var_names
        for r in self.readers[1:]:
            if r.n_cols != self.n_cols or not np.array_equal(r.var_names, self.var_names):
                raise DataError(
                    f"{r.path}: its {r.n_cols} genes (var names) differ from the "
                    f"{self.n_cols} of {first.path}"
                )
        sizes = np.array([r.n_rows for r in self.readers], dtype=np.int64)
        self.offsets = np.r_[0, np.cumsum(sizes)]
        self.n_rows = int(self.offsets[-1])
        for name in columns:
            self._merge_column(name)

    def _merge_column(self, name: str) -> None:
        categorical = [name in r.categories for r in self.readers]
        if not any(categorical):
            self.obs[name] = np.concatenate([r.obs[name] for r in self.readers])
            return
        if not all(categorical):
            odd = self.readers[categorical.index(False)].path
            raise DataError(f"{odd}: obs column {name!r} is not categorical as in the other files")
        merged: dict[str, int] = {}
        for r in self.readers:
            for c in r.categories[name].tolist():
                merged.setdefault(c, len(merged))
        dtype = np.min_scalar_type(-len(merged))
        codes = []
        for r in self.readers:
            lookup = np.array([merged[c] for c in r.categories[name].tolist()] + [-1], dtype=dtype)
            codes.append(lookup[r.obs[name]])
        self.obs[name] = np.concatenate(codes)
        self.categories[name] = np.array(list(merged))

    def file_of(self, rows: np.ndarray) -> np.ndarray:
        """Index of the file holding each row, shape like ``rows``."""
        return np.searchsorted(self.offsets, rows, side="right") - 1

    def _read_x(self, rows: np.ndarray, output: Output, coalesce: bool) -> Any:
        bounds = np.searchsorted(rows, self.offsets)
        parts = []
        for i, r in enumerate(self.readers):
            local = rows[bounds[i] : bounds[i + 1]] - self.offsets[i]
            if local.size:
                before = r.n_reads
                parts.append(r._read_x(check_rows(local, r.n_rows, str(r.path)), output, coalesce))
                self.n_reads += r.n_reads - before
        if not parts:
            empty = np.empty((0, self.n_cols), dtype=self.readers[0].dtype)
            return sp.csr_matrix(empty) if output == "csr" else empty
        if len(parts) == 1:
            return parts[0]
        return sp.vstack(parts, format="csr") if output == "csr" else np.concatenate(parts)

    def close(self) -> None:
        for r in self.readers:
            r.close()
