"""What a study's train loop sees: report, checkpoint, device, model and data preparation.

The same loop runs in three places, each with its own context:

* ``LocalContext``: plain Python, no Ray (unit tests, benchmarks, notebooks);
* ``TuneContext``: one process per trial inside a Ray Tune sweep;
* ``TrainContext``: one of N Ray Train workers (DDP) launched by a trial.

``report`` marks a trial as diverged when a reported study metric is NaN or infinite:
the value becomes the worst possible (``inf`` for a minimised metric), ``diverged`` is
set to 1, and ``TrialDiverged`` ends the loop so the sweep can go on.
"""

from __future__ import annotations

import copy
import math
import os
import tempfile
from collections.abc import Mapping
from typing import Any

import torch

from raystudy.platform.study import Metric

CHECKPOINT_FILE = "state.pt"


class TrialDiverged(Exception):
    """Raised by ``report`` after a non-finite metric; the platform ends the trial cleanly."""


def _is_nonfinite(value: Any) -> bool:
    return isinstance(value, float) and not math.isfinite(value)


def mark_divergence(
    metrics: Mapping[str, Any], declared: tuple[Metric, ...]
) -> tuple[dict[str, Any], bool]:
    """Return the metrics with ``diverged`` set, non-finite declared metrics made worst."""
    out = {k: (float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v)
           for k, v in metrics.items()}
    modes = {m.name: m.mode for m in declared}
    diverged = any(_is_nonfinite(out.get(name)) for name in modes)
    if diverged:
        for name, mode in modes.items():
            if _is_nonfinite(out.get(name)):
                out[name] = math.inf if mode == "min" else -math.inf
    out["diverged"] = int(diverged)
    return out, diverged


class TrialContext:
    """Base class: local single-process behaviour; Ray contexts override the hooks."""

    def __init__(
        self,
        metrics: tuple[Metric, ...] = (),
        datasets: Mapping[str, Any] | None = None,
        device: str = "auto",
    ) -> None:
        self.metrics = metrics
        self.datasets = dict(datasets or {})
        self._device = device
        self.world_size = 1
        self.rank = 0

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def device(self) -> torch.device:
        if self._device != "auto":
            return torch.device(self._device)
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")

    def report(self, metrics: Mapping[str, Any], checkpoint: Mapping[str, Any] | None = None):
        """Report metrics (and optionally a checkpoint state); raises TrialDiverged on NaN/inf."""
        marked, diverged = mark_divergence(metrics, self.metrics)
        self._send(marked, checkpoint if not diverged else None)
        if diverged:
            raise TrialDiverged(f"non-finite metric in {dict(metrics)}")

    def load_checkpoint(self) -> dict[str, Any] | None:
        """The state passed to the last ``report(..., checkpoint=)`` of a resumed run, or None."""
        return None

    def prepare_model(self, model: torch.nn.Module) -> torch.nn.Module:
        return model.to(self.device)

    def dataset(self, name: str) -> Any:
        """A Ray Dataset (or its shard on this worker) supplied by the study's ``datasets`` hook."""
        if name not in self.datasets:
            raise KeyError(f"no dataset '{name}'; the study supplied {sorted(self.datasets)}")
        return self.datasets[name]

    def all_reduce_mean(self, value: float) -> float:
        """Mean of ``value`` over workers (identity with one process)."""
        return value

    def _send(self, metrics: dict[str, Any], checkpoint: Mapping[str, Any] | None) -> None:
        raise NotImplementedError


class LocalContext(TrialContext):
    """No Ray: keeps reports and the last checkpoint in memory."""

    def __init__(self, *args: Any, checkpoint: Mapping[str, Any] | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.reports: list[dict[str, Any]] = []
        self.last_checkpoint = dict(checkpoint) if checkpoint else None
        self._resume_from = self.last_checkpoint

    def load_checkpoint(self) -> dict[str, Any] | None:
        return self._resume_from

    def _send(self, metrics: dict[str, Any], checkpoint: Mapping[str, Any] | None) -> None:
        self.reports.append(metrics)
        if checkpoint is not None:  # a snapshot, as torch.save makes under Ray
            self.last_checkpoint = copy.deepcopy(dict(checkpoint))


def _save_state(state: Mapping[str, Any], folder: str) -> None:
    torch.save(dict(state), os.path.join(folder, CHECKPOINT_FILE))


def _load_state(checkpoint: Any) -> dict[str, Any] | None:
    if checkpoint is None:
        return None
    with checkpoint.as_directory() as folder:
        return torch.load(os.path.join(folder, CHECKPOINT_FILE), weights_only=False)


class TuneContext(TrialContext):
    """One trial in one Ray Tune actor."""

    def _send(self, metrics: dict[str, Any], checkpoint: Mapping[str, Any] | None) -> None:
        from ray import tune

        if checkpoint is None:
            tune.report(metrics)
            return
        with tempfile.TemporaryDirectory() as folder:
            _save_state(checkpoint, folder)
            tune.report(metrics, checkpoint=tune.Checkpoint.from_directory(folder))

    def load_checkpoint(self) -> dict[str, Any] | None:
        from ray import tune

        return _load_state(tune.get_checkpoint())

    @property
    def device(self) -> torch.device:
        if self._device == "auto":
            import ray

            has_gpu = torch.cuda.is_available() and bool(ray.get_gpu_ids())
            return torch.device("cuda" if has_gpu else "cpu")
        return super().device


class TrainContext(TrialContext):
    """One Ray Train worker; rank 0 writes checkpoints, every rank reports."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        import ray.train

        train_context = ray.train.get_context()
        self.world_size = train_context.get_world_size()
        self.rank = train_context.get_world_rank()

    @property
    def device(self) -> torch.device:
        if self._device == "auto":
            import ray.train.torch

            return ray.train.torch.get_device()
        return super().device

    def _send(self, metrics: dict[str, Any], checkpoint: Mapping[str, Any] | None) -> None:
        import ray.train

        if checkpoint is None or not self.is_main:
            ray.train.report(metrics)
            return
        with tempfile.TemporaryDirectory() as folder:
            _save_state(checkpoint, folder)
            ray.train.report(metrics, checkpoint=ray.train.Checkpoint.from_directory(folder))

    def load_checkpoint(self) -> dict[str, Any] | None:
        import ray.train

        return _load_state(ray.train.get_checkpoint())

    def prepare_model(self, model: torch.nn.Module) -> torch.nn.Module:
        import ray.train.torch

        if self.world_size == 1:
            return model.to(self.device)
        return ray.train.torch.prepare_model(model)

    def dataset(self, name: str) -> Any:
        import ray.train

        return ray.train.get_dataset_shard(name)

    def all_reduce_mean(self, value: float) -> float:
        if self.world_size == 1 or not torch.distributed.is_initialized():
            return value
        tensor = torch.tensor([value], dtype=torch.float64, device=self.device)
        torch.distributed.all_reduce(tensor)
        return float(tensor.item()) / self.world_size
