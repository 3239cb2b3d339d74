"""Coalescing a sorted row set into as few slice reads as possible.

Paper: D'Ascenzo & Cultrera di Montesano, "scDataset", arXiv 2506.01883: on
disk a contiguous range costs one read where an index array costs one read per
row, which is why fetches are sorted before they are read.

A sorted set of row ids is covered by maximal runs ``[start_j, stop_j)`` of
consecutive rows. Two neighbouring runs are merged into one read when the hole
between them, measured in the caller's unit (rows, or stored values for a CSR
matrix), is at most ``max_gap``: reading a few unwanted values is cheaper than
a second call into HDF5. The wanted rows are then gathered out of the spans.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["runs", "merge_runs", "read_spans", "concat_ranges"]


def runs(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Maximal runs of consecutive ids in sorted ``rows`` (repeats allowed).

    Returns:
        ``(starts, stops)``, int64 arrays of shape ``(R,)``; run ``j`` covers
        rows ``starts[j] <= i < stops[j]``.
    """
    rows = np.asarray(rows, dtype=np.int64)
    if rows.size == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    unique = rows[np.r_[True, rows[1:] != rows[:-1]]]
    cut = np.flatnonzero(np.diff(unique) > 1) + 1
    starts = unique[np.r_[0, cut]]
    stops = unique[np.r_[cut - 1, unique.size - 1]] + 1
    return starts, stops


def merge_runs(
    starts: np.ndarray, stops: np.ndarray, gaps: np.ndarray, max_gap: float
) -> tuple[np.ndarray, np.ndarray]:
    """Merge run ``j`` with run ``j + 1`` wherever ``gaps[j] <= max_gap``.

    Args:
        starts, stops: runs from :func:`runs`, shape ``(R,)``.
        gaps: size of the hole after each run but the last, shape ``(R - 1,)``.
        max_gap: the largest hole worth reading through.

    Returns:
        ``(starts, stops)`` of the merged spans.
    """
    if starts.size <= 1:
        return starts, stops
    keep_break = np.asarray(gaps) > max_gap
    first = np.r_[True, keep_break]
    last = np.r_[keep_break, True]
    return starts[first], stops[last]


def read_spans(
    rows: np.ndarray, coalesce: bool, gap_of: Callable, max_gap: float
) -> tuple[np.ndarray, np.ndarray]:
    """The spans to read for sorted ``rows``.

    Args:
        rows: sorted row ids (repeats allowed), shape ``(n,)``.
        coalesce: ``False`` reads every distinct row on its own.
        gap_of: ``gap_of(starts, stops)`` -> hole size after each run but the last.
        max_gap: passed to :func:`merge_runs`.
    """
    if not coalesce:
        starts = np.unique(rows)
        return starts, starts + 1
    starts, stops = runs(rows)
    return merge_runs(starts, stops, gap_of(starts, stops), max_gap)


def concat_ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``concatenate([arange(s, s + l) for s, l in zip(starts, lengths)])``, vectorized."""
    lengths = np.asarray(lengths, dtype=np.int64)
    total = int(lengths.sum())
    if total == 0:
        return np.empty(0, np.int64)
    offsets = np.cumsum(lengths) - lengths
    return np.repeat(np.asarray(starts, np.int64) - offsets, lengths) + np.arange(total)
