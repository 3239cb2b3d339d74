"""Small pieces for a study's ``check_data``: open a file with its reader, cheaply, and
turn every way it can be wrong into one ``DataError`` line naming the file.

A study's ``check_data(config)`` runs on the driver before Ray starts. It should look
at headers and small samples only (never read a whole collection), and say what it
expected: ``{what} {path}: expected ..., got ...``.
"""

from __future__ import annotations

import argparse
import errno
import importlib.util
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

from raystudy.errors import DataError, MissingDataError, UserError


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


GIB = 1024**3
MIN_FREE_MB_ENV = "RAYSTUDY_MIN_FREE_MB"
DEFAULT_MIN_FREE_MB = 100

# errno values that describe the user's environment (a path, a mount, a disk), not a bug.
USER_ERRNOS = {
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.EROFS: "read-only file system",
    errno.ENOSPC: "no space left on device",
    errno.EDQUOT: "disk quota exceeded",
    errno.ENOENT: "no such file or folder",
    errno.ENOTDIR: "a part of the path is not a folder",
    errno.EISDIR: "is a folder",
    errno.ENAMETOOLONG: "name too long",
    errno.EFBIG: "file too large",
}


def is_user_os_error(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in USER_ERRNOS


def describe_os_error(exc: OSError, action: str = "write") -> str:
    """``cannot write PATH: read-only file system`` from an OSError (``action``: what
    failed, when it is known; ``access`` when it may have been a read)."""
    reason = USER_ERRNOS.get(exc.errno or 0, exc.strerror or type(exc).__name__)
    return f"cannot {action} {exc.filename or '?'}: {reason}"


def _existing_ancestor(folder: Path) -> Path:
    folder = folder.absolute()
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return folder


def min_free_bytes() -> int:
    text = os.environ.get(MIN_FREE_MB_ENV, str(DEFAULT_MIN_FREE_MB))
    try:
        return max(0, int(float(text) * 1024**2))
    except ValueError:
        raise UserError(f"{MIN_FREE_MB_ENV}={text!r} is not a number of megabytes") from None


def check_writable(folder: str | os.PathLike, what: str, need_bytes: int = 0,
                   hint: str = "") -> None:
    """Probe-write into ``folder`` (or its nearest existing parent) without creating it.

    Raises a one-line UserError for a read-only mount, a permission or quota problem,
    a path through a file, or less free space than ``need_bytes`` (default: the
    ``RAYSTUDY_MIN_FREE_MB`` floor, 100 MB).
    """
    folder = Path(folder).expanduser()
    base = _existing_ancestor(folder)
    if not base.is_dir():
        raise UserError(f"{what} {folder}: {base} is a file, not a folder")
    try:
        with tempfile.NamedTemporaryFile(dir=base, prefix=".raystudy-probe-") as probe:
            probe.write(b"\0" * 4096)
            probe.flush()
            os.fsync(probe.fileno())
    except OSError as exc:
        if not is_user_os_error(exc):
            raise
        raise UserError(f"{what} {folder}: {USER_ERRNOS[exc.errno or 0]}{hint}") from None
    need = need_bytes or min_free_bytes()
    free = shutil.disk_usage(base).free
    if free < need:
        raise UserError(f"{what} {folder}: only {free / 1024**2:.0f} MB free, need at least "
                        f"{need / 1024**2:.0f} MB (free space, or set {MIN_FREE_MB_ENV}){hint}")


def is_disk_full(exc: BaseException) -> bool:
    """A write failed on a full disk (h5py reports it as RuntimeError with errno 28 in its
    text, not as OSError)."""
    return getattr(exc, "errno", None) == errno.ENOSPC or "errno = 28" in str(exc)


def bounded(kind: type, low: float, high: float | None = None) -> Callable[[str], float]:
    """An argparse ``type``: ``kind`` (int or float) within [low, high], else one usage line
    (``--seq-len: 1 must be >= 2``)."""

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{text!r} is not {'an integer' if kind is int else 'a number'}") from None
        if value != value or value < low or (high is not None and value > high):
            bound = f">= {low:g}" if high is None else f"in [{low:g}, {high:g}]"
            raise argparse.ArgumentTypeError(f"{text} must be {bound}")
        return value

    parse.__name__ = kind.__name__
    return parse


def missing_modules(modules: tuple[str, ...]) -> list[str]:
    """The modules of ``modules`` that cannot be imported here."""
    return [m for m in modules if importlib.util.find_spec(m) is None]


def require_extra(what: str, extra: str, modules: tuple[str, ...]) -> None:
    """Raise a one-line UserError naming the extra to install when a module is missing."""
    missing = missing_modules(modules)
    if missing:
        raise UserError(f"{what} needs {', '.join(missing)}: "
                        f"pip install 'raystudy[{extra}]'")
