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
* ``load_curve_table(path)``: the same curves with the configuration id of each row
  (LCBench's config_id, LCBench-lite's trial, a CSV file's stem), and
  ``holdout_split(table, ...)``: test curves whose configurations (and, optionally,
  datasets) no corpus curve has.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
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


Table = dict[str, tuple[list[str], np.ndarray]]
"""``{dataset: (config ids, curves (configs, T))}``."""


def load_lcbench_json(path: str | Path, metric: str = LCBENCH_METRIC) -> dict[str, np.ndarray]:
    """Curves of ``metric`` per LCBench dataset from its JSON file."""
    return {name: curves for name, (_, curves) in lcbench_json_table(path, metric).items()}


def lcbench_json_table(path: str | Path, metric: str = LCBENCH_METRIC) -> Table:
    """Config ids and curves of ``metric`` per LCBench dataset from its JSON file."""
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
        out[str(dataset)] = ([str(c) for c in configs],
                             _stack(curves, f"{path}: data[{dataset!r}]"))
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
    return {name: curves for name, (_, curves) in lcbench_parquet_table(root, metric).items()}


def lcbench_parquet_table(root: str | Path, metric: str = LCBENCH_METRIC) -> Table:
    """Trial ids and curves of ``metric`` per dataset from LCBench-lite parquet files."""
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
        out[name if name not in out else f"{name}/{path.name}"] = (
            [str(i) for i in table.index], values)
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
    return {name: curves for name, (_, curves) in load_curve_table(path, metric).items()}


def load_curve_table(path: str | Path, metric: str = LCBENCH_METRIC) -> Table:
    """``load_curves`` with each row's configuration id (a CSV series is its own, its stem)."""
    path = Path(path)
    if path.suffix == ".json":
        return lcbench_json_table(path, metric)
    if path.is_dir() and any(path.glob("*.csv")):
        return {name: ([name], curves) for name, curves in load_csv_folder(path).items()}
    return lcbench_parquet_table(path, metric)


@dataclass
class Split:
    """Test curves (test_tasks, T) and the corpus pool (P, T), each row's (dataset, config)."""

    test: np.ndarray
    pool: np.ndarray
    test_keys: list[tuple[str, str]]
    pool_keys: list[tuple[str, str]]


def holdout_split(table: Table, test_tasks: int, test_datasets: int,
                  rng: np.random.Generator) -> Split:
    """Test curves from configurations that no corpus curve has (one test curve per held-out
    configuration, on a random dataset); with ``test_datasets`` > 0 those datasets are held out
    too, giving test curves only. The pool is every other curve, in a random order.
    """
    datasets = sorted(table)
    if test_datasets and test_datasets >= len(datasets):
        raise DataError(f"{test_datasets} test datasets asked for, the files have "
                        f"{len(datasets)}: at least one must be left for the corpus")
    held = sorted(rng.permutation(datasets)[:test_datasets]) if test_datasets else datasets
    candidates = [(d, i) for d in held for i in range(len(table[d][0]))]
    chosen, held_configs = [], set()
    for j in rng.permutation(len(candidates)):
        d, i = candidates[j]
        if table[d][0][i] not in held_configs:  # one test curve per held-out configuration
            chosen.append((d, i))
            held_configs.add(table[d][0][i])
            if len(chosen) == test_tasks:
                break
    if len(chosen) < test_tasks:
        raise DataError(f"only {len(chosen)} distinct configurations on the test datasets, "
                        f"need task.test_tasks={test_tasks}")
    corpus_datasets = [d for d in datasets if d not in held] if test_datasets else datasets
    pool = [(d, i) for d in corpus_datasets for i, c in enumerate(table[d][0])
            if c not in held_configs]
    pool = [pool[j] for j in rng.permutation(len(pool))]
    return Split(np.stack([table[d][1][i] for d, i in chosen]),
                 np.stack([table[d][1][i] for d, i in pool]) if pool else
                 np.empty((0, table[datasets[0]][1].shape[1])),
                 [(d, table[d][0][i]) for d, i in chosen], [(d, table[d][0][i]) for d, i in pool])
