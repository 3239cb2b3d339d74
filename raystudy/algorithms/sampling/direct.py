"""Slices of an uncompressed HDF5 dataset read straight from the file.

An HDF5 dataset stored without filters (no compression, no shuffle, no checksum)
keeps its elements as raw bytes: one contiguous extent, or one extent per chunk.
Where every extent is known, a slice ``ds[a:b]`` is one ``pread`` per extent it
touches, straight into the caller's buffer, with no call into HDF5 and no trip
through its chunk cache (which, for chunks of 1 MiB or more, reads a whole chunk
to serve a few hundred bytes). That per-call cost, not the bytes, is what
dominates a block-sampled fetch of many short runs, so this is the readers'
default. ``pread`` rather than a memory map: a page fault on a map reads the
device's whole read-ahead window around the page (8 MiB on some VMs), which on
cold storage turns a random row into megabytes of reads. Any dataset this cannot
place (filtered, compact, partly unallocated, or chunked across rows of a 2-D
array) is read through h5py as before.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import h5py
import numpy as np

from ...errors import DataError

__all__ = ["DirectSlices", "H5PySlices", "SliceReader", "slice_reader"]


def _extents(ds: h5py.Dataset) -> tuple[np.ndarray, np.ndarray] | None:
    """(first row, byte offset) of each stored extent in row order, or ``None``."""
    dsid = ds.id
    if ds.size == 0 or dsid.get_create_plist().get_nfilters() > 0:
        return None
    if ds.chunks is None:
        offset = dsid.get_offset()
        return None if offset is None else (np.zeros(1, np.int64), np.array([offset]))
    if any(c != s for c, s in zip(ds.chunks[1:], ds.shape[1:], strict=True)):
        return None
    infos: list = []
    if hasattr(dsid, "chunk_iter"):
        dsid.chunk_iter(infos.append)
    else:
        infos = [dsid.get_chunk_info(i) for i in range(dsid.get_num_chunks())]
    if len(infos) != -(-ds.shape[0] // ds.chunks[0]):
        return None
    first = np.array([info.chunk_offset[0] for info in infos], dtype=np.int64)
    offsets = np.array([info.byte_offset for info in infos], dtype=np.int64)
    order = np.argsort(first)
    return first[order], offsets[order]


class DirectSlices:
    """Row slices of one unfiltered HDF5 dataset, read with ``pread`` at known offsets.

    Build with :meth:`of`, which returns ``None`` when the dataset's storage
    cannot be placed. Picklable: the file is reopened on first use.
    """

    def __init__(
        self,
        path: Path,
        shape: tuple[int, ...],
        dtype: np.dtype,
        first: np.ndarray,
        offsets: np.ndarray,
    ) -> None:
        self.path, self.shape, self.dtype = path, shape, np.dtype(dtype)
        self.first_row, self.byte_offset = first, offsets
        self.row_bytes = int(np.prod(shape[1:], dtype=np.int64)) * self.dtype.itemsize
        self._file = None

    @classmethod
    def of(cls, ds: h5py.Dataset, path: Path) -> DirectSlices | None:
        """The direct reader of ``ds`` in file ``path``, or ``None`` if h5py must read it."""
        extents = _extents(ds)
        if extents is None:
            return None
        first, offsets = extents
        reader = cls(path, ds.shape, ds.dtype, first, offsets)
        last_rows = ds.shape[0] - first[-1]
        end = offsets[-1] + last_rows * reader.row_bytes
        if end > path.stat().st_size or np.any(offsets < 0):
            raise DataError(
                f"{path}: dataset {ds.name!r} runs past the end of the file (truncated?)"
            )
        return reader

    def _fd(self) -> int:
        if self._file is None:
            self._file = open(self.path, "rb", buffering=0)
        return self._file.fileno()

    def _parts(self, start: int, stop: int) -> Iterator[tuple[int, int, int]]:
        """``(first row, end row, byte offset)`` of each extent's share of ``[start, stop)``."""
        first, offsets = self.first_row, self.byte_offset
        k = int(np.searchsorted(first, start, side="right")) - 1
        at = start
        while at < stop:
            end = stop if k + 1 == len(first) else min(stop, int(first[k + 1]))
            yield at, end, int(offsets[k]) + (at - int(first[k])) * self.row_bytes
            at, k = end, k + 1

    def __call__(self, start: int, stop: int, out: np.ndarray) -> None:
        """Copy rows ``[start, stop)`` into ``out`` (shape ``(stop - start, ...)``)."""
        direct = out.dtype == self.dtype and out.flags.c_contiguous
        buf = out if direct else np.empty(out.shape, self.dtype)
        raw = memoryview(buf.reshape(-1).view(np.uint8))
        fd = self._fd()
        for at, end, offset in self._parts(start, stop):
            done, want = (at - start) * self.row_bytes, (end - at) * self.row_bytes
            while want:
                got = os.preadv(fd, [raw[done : done + want]], offset)
                if got == 0:
                    raise DataError(f"{self.path}: file ends inside a dataset (truncated?)")
                done, want, offset = done + got, want - got, offset + got
        if not direct:
            out[...] = buf

    def will_need(self, starts: np.ndarray, stops: np.ndarray) -> None:
        """Start reading the spans ``[starts[j], stops[j])`` now, all at once.

        ``posix_fadvise(WILLNEED)`` queues each span's pages for reading without
        waiting, so the reads of a fetch overlap on the device instead of paying
        its latency one after another: 2.8-3.4x faster fetches than plain ``pread``
        with a cold page cache, ~10% slower with a warm one (one more system call
        per span; ``bench/read_paths.py``).
        """
        if not hasattr(os, "posix_fadvise") or len(starts) == 0:
            return
        fd, first, advise = self._fd(), self.first_row, os.POSIX_FADV_WILLNEED
        starts, stops = np.asarray(starts, np.int64), np.asarray(stops, np.int64)
        k = np.searchsorted(first, starts, side="right") - 1
        whole = k == np.searchsorted(first, stops - 1, side="right") - 1
        offsets = self.byte_offset[k] + (starts - first[k]) * self.row_bytes
        lengths = (stops - starts) * self.row_bytes
        for offset, length in zip(offsets[whole].tolist(), lengths[whole].tolist(), strict=True):
            os.posix_fadvise(fd, offset, length, advise)
        for start, stop in zip(starts[~whole].tolist(), stops[~whole].tolist(), strict=True):
            for at, end, offset in self._parts(start, stop):
                os.posix_fadvise(fd, offset, (end - at) * self.row_bytes, advise)

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_file": None}


class H5PySlices:
    """Row slices through h5py, one call each, for storage :class:`DirectSlices` cannot place.

    Plain slicing takes h5py's fast path for simple slices, measured 4-8x quicker
    per call than ``read_direct`` or the low-level API on chunked data.
    """

    def __init__(self, ds: h5py.Dataset) -> None:
        self.ds = ds

    def __call__(self, start: int, stop: int, out: np.ndarray) -> None:
        out[...] = self.ds[start:stop]

    def will_need(self, starts: np.ndarray, stops: np.ndarray) -> None:
        """Nothing to do: HDF5 reads each slice when asked."""


SliceReader = DirectSlices | H5PySlices


def slice_reader(ds: h5py.Dataset, path: Path, direct: bool = True) -> SliceReader:
    """The row-slice reader of ``ds``: direct when ``direct`` and the storage allows it."""
    fast = DirectSlices.of(ds, path) if direct else None
    return fast if fast is not None else H5PySlices(ds)
