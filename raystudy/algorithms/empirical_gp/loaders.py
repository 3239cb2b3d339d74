"""Real corpora from local files: LCBench (its JSON, BoTorch's LCBench-lite parquet), CSV series.

Nothing is downloaded. Each loader returns curves as a float64 array per group and
raises one ``DataError`` line naming the file and what was expected.

* ``load_lcbench_json(path)``: LCBench's ``data_2k.json`` layout,
  ``data[dataset][config_id]["log"]["Train/val_accuracy"]`` -> ``{dataset: (configs, 52)}``.
* ``load_lcbench_parquet(root)``: BoTorch's LCBench-lite layout,
  ``root/<dataset>/metrics.parquet.gzip`` (or any ``metrics*.parquet*`` below root, or one
  such file), a frame indexed by ``(trial, epoch)`` with a ``Train/val_accuracy`` column
  -> ``{dataset: (trials, epochs)}`` (all recorded epochs kept, 52 in LCBench).
* ``load_csv_folder(folder)``: one series per ``*.csv`` file, the numbers of its
  ``value`` column (or of its only column) in file order -> ``{file stem: (1, T)}``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ...errors import DataError

LCBENCH_METRIC = "Train/val_accuracy"
JSON_LAYOUT = "data[dataset][config_id]['log'][metric] as in LCBench's data_2k.json"


def _curve(values, where: str) -> np.ndarray:
    try:
        curve = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise DataError(f"{where}: expected a list of numbers") from None
    if curve.ndim != 1 or curve.size < 2:
        raise DataError(f"{where}: expected a list of at least 2 numbers, got shape {curve.shape}")
    if not np.isfinite(curve).all():
        raise DataError(f"{where}: has NaN or inf values")
    return curve


def _stack(curves: list[np.ndarray], where: str) -> np.ndarray:
    lengths = {len(c) for c in curves}
    if len(lengths) != 1:
        raise DataError(f"{where}: curves of different lengths {sorted(lengths)[:5]}; expected "
                        "one number of epochs per dataset")
    return np.stack(curves)


def load_lcbench_json(path: str | Path, metric: str = LCBENCH_METRIC) -> dict[str, np.ndarray]:
    """Curves of ``metric`` per LCBench dataset from its JSON file."""
    path = Path(path)
    try:
        with open(path) as handle:
            data = json.load(handle)
    except FileNotFoundError:
        raise DataError(f"{path}: no such file (expected LCBench's JSON, {JSON_LAYOUT})") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: not valid JSON ({str(exc).splitlines()[0]}); expected "
                        f"{JSON_LAYOUT}") from None
    if not isinstance(data, dict) or not data:
        raise DataError(f"{path}: expected a non-empty mapping {JSON_LAYOUT}")
    out = {}
    for dataset, configs in data.items():
        if not isinstance(configs, dict) or not configs:
            raise DataError(f"{path}: data[{dataset!r}] is not a mapping of config ids; "
                            f"expected {JSON_LAYOUT}")
        curves = []
        for config_id, entry in configs.items():
            log = entry.get("log") if isinstance(entry, dict) else None
            if not isinstance(log, dict) or metric not in log:
                raise DataError(f"{path}: data[{dataset!r}][{config_id!r}] has no "
                                f"['log'][{metric!r}]; expected {JSON_LAYOUT}")
            curves.append(_curve(log[metric], f"{path}: data[{dataset!r}][{config_id!r}]"
                                              f"['log'][{metric!r}]"))
        out[str(dataset)] = _stack(curves, f"{path}: data[{dataset!r}]")
    return out


def _parquet_files(root: Path) -> list[Path]:
    if root.is_file():
        return [root]
    if not root.is_dir():
        raise DataError(f"{root}: no such file or folder (expected LCBench-lite "
                        "<dataset>/metrics.parquet.gzip files)")
    files = sorted(root.rglob("metrics*.parquet*"))
    if not files:
        raise DataError(f"{root}: no metrics*.parquet* files (expected BoTorch's LCBench-lite "
                        "layout <dataset>/metrics.parquet.gzip)")
    return files


def load_lcbench_parquet(root: str | Path, metric: str = LCBENCH_METRIC
                         ) -> dict[str, np.ndarray]:
    """Curves of ``metric`` per dataset from LCBench-lite parquet files."""
    import pandas as pd

    out = {}
    for path in _parquet_files(Path(root)):
        try:
            frame = pd.read_parquet(path, engine="pyarrow")
        except Exception as exc:  # pyarrow raises several types for corrupt files
            raise DataError(f"{path}: unreadable as parquet ({str(exc).splitlines()[0][:120]})"
                            ) from None
        frame = frame.reset_index()
        missing = [c for c in ("trial", "epoch", metric) if c not in frame.columns]
        if missing:
            raise DataError(f"{path}: no {', '.join(map(repr, missing))} (expected a frame "
                            f"indexed by (trial, epoch) with a {metric!r} column)")
        table = frame.pivot(index="trial", columns="epoch", values=metric).sort_index(axis=1)
        values = table.to_numpy(dtype=np.float64)
        if values.shape[1] < 2 or not np.isfinite(values).all():
            raise DataError(f"{path}: {metric!r} must be finite for every (trial, epoch), with at "
                            f"least 2 epochs; got {values.shape[1]} epochs"
                            f"{' and missing values' if not np.isfinite(values).all() else ''}")
        name = path.parent.name if path.parent != Path(root) or Path(root).is_dir() else path.stem
        out[name if name not in out else f"{name}/{path.name}"] = values
    return out


def _is_number(text) -> bool:
    try:
        float(text)
    except (TypeError, ValueError):
        return False
    return True


def load_csv_folder(folder: str | Path) -> dict[str, np.ndarray]:
    """One series per CSV file: its ``value`` column (or its only column)."""
    import pandas as pd

    folder = Path(folder)
    if not folder.is_dir():
        raise DataError(f"{folder}: no such folder (expected a folder of *.csv series)")
    files = sorted(folder.glob("*.csv"))
    if not files:
        raise DataError(f"{folder}: no *.csv files (expected one series per file)")
    out = {}
    for path in files:
        try:
            frame = pd.read_csv(path)
            if frame.shape[1] == 1 and _is_number(frame.columns[0]):  # no header line
                frame = pd.read_csv(path, header=None, names=["value"])
        except Exception as exc:
            raise DataError(f"{path}: unreadable as CSV ({str(exc).splitlines()[0][:120]})"
                            ) from None
        if "value" in frame.columns:
            column = frame["value"]
        elif frame.shape[1] == 1:
            column = frame.iloc[:, 0]
        else:
            raise DataError(f"{path}: expected a 'value' column or a single column, got "
                            f"columns {list(frame.columns)[:6]}")
        values = pd.to_numeric(column, errors="coerce").to_numpy(dtype=np.float64)
        out[path.stem] = _curve(values, f"{path}: column {column.name!r}")[None, :]
    return out


def load_curves(path: str | Path, metric: str = LCBENCH_METRIC) -> dict[str, np.ndarray]:
    """Dispatch on the path: ``*.json`` LCBench, a folder of CSVs, else LCBench-lite parquet."""
    path = Path(path)
    if path.suffix == ".json":
        return load_lcbench_json(path, metric)
    if path.is_dir() and any(path.glob("*.csv")):
        return load_csv_folder(path)
    return load_lcbench_parquet(path, metric)
