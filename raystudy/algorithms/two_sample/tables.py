r"""A local table of compositions in two groups: CSV or TSV of counts or proportions.

The paper names microbiome data (the seed abstracts' version also financial portfolios);
its datasets are not public, so raystudy reads the user's own file and downloads nothing.
Layout: a header row, one row per sample; one column holds the group label (exactly two
distinct labels, or ``groups`` picks two), every other column is a non-negative number
(a count or a proportion of one part). Rows are closed to proportions
:math:`x_{ij} / \sum_j x_{ij}`; a row of all zeros is an error. The delimiter is a tab
for ``.tsv``/``.tab``/``.txt`` files and a comma otherwise.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class CompositionTable:
    """Two groups of compositions read from a file (rows closed to proportions)."""

    parts: tuple[str, ...]
    """Names of the D part columns, in file order."""
    groups: tuple[str, str]
    """The two group labels, in order of first appearance (or as requested)."""
    x: np.ndarray
    """``(n, D)`` compositions of ``groups[0]``."""
    y: np.ndarray
    """``(m, D)`` compositions of ``groups[1]``."""


def read_table(path: str | Path, group_column: str,
               groups: tuple[str, str] | None = None) -> CompositionTable:
    """Read a CSV/TSV of counts or proportions with a group column (module docstring).

    Raises:
        FileNotFoundError: the file does not exist (the message says what to put there).
        ValueError: a missing group column, not exactly two groups, a non-numeric or
        negative entry, a row of zeros, or too few rows.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no composition table at {path}: put a CSV or TSV there with "
                                f"a header, a {group_column!r} column and one column per part.")
    delimiter = "\t" if path.suffix.lower() in (".tsv", ".tab", ".txt") else ","
    with path.open(newline="") as fh:
        rows = list(csv.reader(fh, delimiter=delimiter))
    if not rows:
        raise ValueError(f"{path} is empty; it needs a header row and one row per sample.")
    header = [h.strip() for h in rows[0]]
    if group_column not in header:
        raise ValueError(f"{path} has no column {group_column!r} (columns: "
                         f"{', '.join(header)}).")
    g = header.index(group_column)
    parts = tuple(h for i, h in enumerate(header) if i != g)
    if len(parts) < 2:
        raise ValueError(f"{path} needs at least 2 part columns besides {group_column!r}.")
    labels, values = [], []
    for line, row in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise ValueError(f"{path} line {line} has {len(row)} fields, the header has "
                             f"{len(header)}.")
        labels.append(row[g].strip())
        try:
            values.append([float(c) for i, c in enumerate(row) if i != g])
        except ValueError as err:
            raise ValueError(f"{path} line {line} has a non-numeric part value.") from err
    X = np.asarray(values, dtype=np.float64).reshape(-1, len(parts))
    if not np.isfinite(X).all() or (X < 0).any():
        raise ValueError(f"{path} has negative, NaN or infinite part values.")
    sums = X.sum(1)
    if (sums <= 0).any():
        line = int(np.argmax(sums <= 0)) + 2
        raise ValueError(f"{path} has a row of all zeros (line {line}), which has no "
                         "proportions.")
    X = X / sums[:, None]
    seen = tuple(dict.fromkeys(labels))
    if groups is None:
        if len(seen) != 2:
            raise ValueError(f"{path} column {group_column!r} has {len(seen)} groups "
                             f"({', '.join(seen)}); pass groups=(a, b) to pick two.")
        groups = (seen[0], seen[1])
    for label in groups:
        if label not in seen:
            raise ValueError(f"{path} column {group_column!r} has no group {label!r}.")
    lab = np.asarray(labels)
    x, y = X[lab == groups[0]], X[lab == groups[1]]
    if min(len(x), len(y)) < 2:
        raise ValueError(f"{path} needs at least 2 rows in each group, got {len(x)} and "
                         f"{len(y)}.")
    return CompositionTable(parts, (groups[0], groups[1]), x, y)
