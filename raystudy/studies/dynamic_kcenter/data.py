"""The dynamic_kcenter study's data: the instance a trial streams (generated or a local
CSV), its aspect ratio, the driver-side check of a CSV, and ``raystudy data make-kcenter
OUT``, which writes generated points as the CSV ``data.kind=file`` reads.

Light to import (``raystudy data`` reads ``DATA_COMMANDS``): NumPy, SciPy and the
algorithm layer are imported inside the functions.
"""

from __future__ import annotations

import argparse
import functools
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from raystudy import (
    ConfigError,
    DataCommand,
    DataError,
    bounded,
    check_writable,
    require_file,
    storage,
)
from raystudy.studies.dynamic_kcenter.config import (
    FILE_HINT,
    KINDS,
    AlgorithmConfig,
    DynamicKCenterConfig,
    EvalConfig,
    outliers_of,
    rows_of,
)

if TYPE_CHECKING:
    import numpy as np

PDIST_MAX = 5_000
"""Up to this many rows the extent comes from ``scipy.spatial.distance.pdist`` (every pair);
above, from a k-d tree (nearest neighbours) and the exact diameter."""


@dataclass(frozen=True)
class Instance:
    """The rows ``X (N, d)`` a trial streams, its updates ``[(op, row), ...]`` (the window
    fill first) and the smallest positive and largest pairwise distances of ``X``."""

    X: np.ndarray
    updates: list[tuple[str, int]]
    d_min: float
    d_max: float

    @property
    def log10_delta(self) -> float:
        """The realised aspect ratio's log10."""
        return math.log10(self.d_max / self.d_min)


def extent(X: np.ndarray) -> tuple[float, float]:
    """Smallest positive and largest pairwise distance of the rows of ``X (N, d)``."""
    import numpy as np

    if len(X) <= PDIST_MAX:
        from scipy.spatial.distance import pdist

        D = pdist(X)                     # norms of differences: exact for near-duplicates
        D = D[D > 0]
        if D.size == 0:
            raise DataError("every point coincides: the aspect ratio is undefined")
        return float(D.min()), float(D.max())
    from scipy.spatial import cKDTree

    from raystudy.algorithms.kcenter.data import diameter

    U = np.unique(X, axis=0)
    if len(U) < 2:
        raise DataError("every point coincides: the aspect ratio is undefined")
    return float(cKDTree(U).query(U, k=2)[0][:, 1].min()), diameter(U)


def points_of(config: DynamicKCenterConfig) -> np.ndarray:
    """The rows the config's stream reads: generated from ``config.seed`` or the CSV's first."""
    from raystudy.algorithms.kcenter import generate

    data, rows = config.data, rows_of(config.stream)
    if data.kind == "file":
        try:
            return generate("file", rows, path=data.path)
        except ValueError as err:
            raise DataError(f"data.path: {err}") from None
    log10_delta = data.log10_delta if data.kind in ("twins", "far_outliers") else None
    try:
        return generate(data.kind, rows, d=data.d, k=config.problem.k, z=outliers_of(config),
                        log10_delta=log10_delta, seed=config.seed)
    except ValueError as err:
        raise ConfigError(f"data.kind={data.kind}: {err}") from None


def instance_of(config: DynamicKCenterConfig) -> Instance:
    """The config's instance, cached per process on what defines it (not the algorithm nor
    the evaluation), so trials of a worker at one seed and Delta share it."""
    return _instance(replace(config, algorithm=AlgorithmConfig(), eval=EvalConfig()))


@functools.lru_cache(maxsize=4)
def _instance(config: DynamicKCenterConfig) -> Instance:
    from raystudy.algorithms.kcenter import stream

    X = points_of(config)
    X.setflags(write=False)
    d_min, d_max = extent(X)
    s = config.stream
    return Instance(X, stream(X, s.kind, s.window, s.updates, seed=config.seed), d_min, d_max)


def check_data(config: DynamicKCenterConfig) -> None:
    """On the driver: a ``file`` CSV exists, parses, holds enough rows and distinct points."""
    if config.data.kind != "file":
        return
    require_file(config.data.path, "data.path", FILE_HINT)
    extent(points_of(config))


# ----------------------------------------------------------------------------- make-kcenter
def make_kcenter(out: str, kind: str, rows: int, d: int, k: int, z: int,
                 log10_delta: float | None, seed: int = 0) -> Path:
    """Write ``rows`` generated points as a CSV (a ``timestamp`` column, then x1..xd, every
    float to 17 significant digits so the file reads back exactly); return its path."""
    from raystudy.algorithms.kcenter import generate

    path = Path(out)
    if path.is_dir():
        raise DataError(f"make-kcenter: {out} is a folder; name the CSV file "
                        f"(e.g. {path / 'points.csv'})")
    check_writable(path.parent if str(path.parent) else ".", "make-kcenter output folder",
                   need_bytes=rows * (d + 1) * 26 + 1024**2)
    try:
        X = generate(kind, rows, d=d, k=k, z=z,
                     log10_delta=log10_delta if kind in ("twins", "far_outliers") else None,
                     seed=seed)
    except ValueError as err:
        raise DataError(f"make-kcenter: {err}") from None
    lines = [",".join(["timestamp", *(f"x{j + 1}" for j in range(d))])]
    lines += [",".join([str(t), *(f"{v:.17g}" for v in row)]) for t, row in enumerate(X)]
    path.parent.mkdir(parents=True, exist_ok=True)
    storage.write_text_atomic(path, "\n".join(lines) + "\n")
    return path


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("out", help="the CSV to write")
    parser.add_argument("--kind", choices=[k for k in KINDS if k != "file"], default="twins",
                        help="generator (default twins)")
    parser.add_argument("--rows", type=bounded(int, 2), default=4000,
                        help="rows (default 4000: window 2000 + 4000 updates)")
    parser.add_argument("--d", type=bounded(int, 1), default=2, help="dimension (default 2)")
    parser.add_argument("--k", type=bounded(int, 1), default=5, help="clusters (default 5)")
    parser.add_argument("--z", type=bounded(int, 0), default=40,
                        help="outliers among all rows (default 40)")
    parser.add_argument("--log10-delta", type=bounded(float, 0.0, 14.0), default=6.0,
                        help="twins, far_outliers: the targeted log10 Delta (default 6)")
    parser.add_argument("--seed", type=bounded(int, 0), default=0)


def _run(args: argparse.Namespace) -> str:
    path = make_kcenter(args.out, args.kind, args.rows, args.d, args.k, args.z,
                        args.log10_delta, args.seed)
    return (f"wrote {path} ({args.rows} {args.kind} points in {args.d}-D); run with "
            f"--set data.kind=file --set data.path={path}")


DATA_COMMANDS = (DataCommand("make-kcenter", "write generated k-center points as the CSV "
                             "data.kind=file reads", _arguments, _run),)
