"""Small pieces for a study's ``check_data``: open a file with its reader, cheaply, and
turn every way it can be wrong into one ``DataError`` line naming the file.

A study's ``check_data(config)`` runs on the driver before Ray starts. It should look
at headers and small samples only (never read a whole collection), and say what it
expected: ``{what} {path}: expected ..., got ...``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from raystudy.errors import DataError, MissingDataError


def is_remote(path: str) -> bool:
    """Object storage or another URI (s3://, gs://, hdfs://): not checkable from here."""
    return "://" in str(path)


def require_file(path: str | os.PathLike, what: str, hint: str = "") -> Path:
    """``path`` as a Path; a missing file is a MissingDataError naming ``what``."""
    path = Path(path).expanduser()
    if not path.is_file():
        state = "is a folder, not a file" if path.is_dir() else "no such file"
        raise MissingDataError(f"{what} {path}: {state}{hint}")
    if path.stat().st_size == 0:
        raise DataError(f"{what} {path}: the file is empty (0 bytes){hint}")
    return path


def require_dir(path: str | os.PathLike, what: str, hint: str = "") -> Path:
    path = Path(path).expanduser()
    if not path.is_dir():
        state = "is a file, not a folder" if path.exists() else "no such folder"
        raise MissingDataError(f"{what} {path}: {state}{hint}")
    return path


def open_npy(path: Path, what: str) -> np.ndarray:
    """A ``.npy`` array opened as a read-only memory map (only the header is read)."""
    try:
        return np.load(path, mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DataError(f"{what} {path}: not a readable .npy array, or truncated "
                        f"({reason})") from None


def open_hdf5(path: Path, what: str) -> Any:
    """An HDF5 file opened read-only with h5py; garbage or a cut header is one line."""
    import h5py

    try:
        return h5py.File(path, "r")
    except OSError as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DataError(f"{what} {path}: not a readable HDF5 file, or truncated "
                        f"({reason})") from None


def require_keys(container: Any, keys: Iterable[str], path: Path, what: str) -> None:
    missing = [k for k in keys if k not in container]
    if missing:
        raise DataError(f"{what} {path}: missing {', '.join(map(repr, missing))} "
                        f"(has {', '.join(map(repr, list(container)[:12])) or 'nothing'})")


def sample_rows(n_rows: int, k: int = 256) -> np.ndarray:
    """Up to ``k`` row indices spread evenly over ``n_rows`` (first and last included)."""
    if n_rows <= 0:
        return np.zeros(0, dtype=np.int64)
    return np.unique(np.linspace(0, n_rows - 1, min(k, n_rows)).astype(np.int64))
