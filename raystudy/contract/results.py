"""A run's results as a study's ``analyze`` sees them: one ``TrialRecord`` per trial,
gathered in ``RunResults`` (the platform reads them from a run folder)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class TrialRecord:
    """One trial: its params (dotted config keys), reports, final metrics and status."""

    trial_id: str
    params: dict[str, Any]
    status: str
    history: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    logdir: Path | None = None
    config: dict[str, Any] = field(default_factory=dict)  # every dotted key, filled by report

    @property
    def last(self) -> dict[str, Any]:
        return self.history[-1] if self.history else {}

    def setting(self, key: str, default: Any = None) -> Any:
        """The trial's value of a dotted config key (``"train.seed"``): from its full config,
        else its params (the swept keys), else ``default``."""
        return (self.config or {}).get(key, self.params.get(key, default))

    def metric(self, name: str, default: float = math.nan) -> float:
        value = self.last.get(name, default)
        return float(value) if isinstance(value, (int, float)) else default

    def last_checkpoint(self) -> dict[str, Any] | None:
        """The state the trial's newest checkpoint holds (what its loop passed to
        ``report(..., checkpoint=)``), or None: no checkpoint, or the run is not local."""
        from raystudy.contract.context import CHECKPOINT_FILE  # torch: only when asked

        if self.logdir is None:
            return None
        files = sorted(Path(self.logdir).glob(f"checkpoint_*/{CHECKPOINT_FILE}"))
        if not files:
            return None
        import torch

        return torch.load(files[-1], weights_only=False)


@dataclass
class RunResults:
    """All trials of one run folder plus the request that started it."""

    run_dir: Path
    request: dict[str, Any]
    trials: list[TrialRecord]

    def __iter__(self) -> Iterator[TrialRecord]:
        return iter(self.trials)

    def by_status(self, status: str) -> list[TrialRecord]:
        return [t for t in self.trials if t.status == status]

    def param_keys(self) -> list[str]:
        keys: dict[str, None] = {}
        for trial in self.trials:
            keys.update(dict.fromkeys(trial.params))
        return list(keys)

    def frame(self) -> Any:
        """The run as a long pandas DataFrame: one row per trial and final metric, with
        ``trial_id``, ``status``, ``metric``, ``value`` and one column per config key (the
        full dotted config where the report filled it, else the trial's params), so an
        analysis groups with ``groupby`` instead of nested dictionaries."""
        import pandas as pd

        rows = []
        for trial in self.trials:
            settings = trial.config or trial.params
            for metric, value in trial.last.items():
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    continue
                rows.append({**settings, "trial_id": trial.trial_id, "status": trial.status,
                             "metric": metric, "value": float(value)})
        columns = ["trial_id", "status", "metric", "value"]
        frame = pd.DataFrame(rows)
        if frame.empty:
            return pd.DataFrame(columns=columns)
        return frame[columns + [c for c in frame.columns if c not in columns]]


def mean_metric(trials: list[TrialRecord], metric: str) -> float:
    """The mean of ``metric`` over the trials where it is finite (nan where none is)."""
    values = [t.metric(metric) for t in trials if math.isfinite(t.metric(metric))]
    return sum(values) / len(values) if values else math.nan


def by_seed(trials: list[TrialRecord], metric: str, seed_key: str = "train.seed"
            ) -> dict[int, float]:
    """One value of ``metric`` per seed (the ``seed_key`` setting): the mean of its trials'
    finite values, so duplicated trials of a seed count once."""
    values: dict[int, list[float]] = {}
    for t in trials:
        if math.isfinite(t.metric(metric)):
            values.setdefault(int(t.setting(seed_key, 0)), []).append(t.metric(metric))
    return {seed: sum(v) / len(v) for seed, v in values.items()}


def paired(a: dict[int, float], b: dict[int, float]) -> tuple[list[float], list[float]]:
    """The values of ``a`` and ``b`` on the seeds both have, in seed order: a paired test's
    two samples."""
    seeds = sorted(set(a) & set(b))
    return [a[s] for s in seeds], [b[s] for s in seeds]
