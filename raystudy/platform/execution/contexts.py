"""The Ray contexts of a train loop: ``TuneContext`` (one trial in one Tune actor) and
``TrainContext`` (one of N Ray Train workers). Both implement the ``TrialContext``
protocol of ``raystudy.contract`` on top of its ``BaseContext``."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import torch

from raystudy.contract.context import CHECKPOINT_FILE, BaseContext, MapTaskError, _apply, _describe


def _save_state(state: Mapping[str, Any], folder: str) -> None:
    torch.save(dict(state), os.path.join(folder, CHECKPOINT_FILE))


def _load_state(checkpoint: Any) -> dict[str, Any] | None:
    if checkpoint is None:
        return None
    with checkpoint.as_directory() as folder:
        return torch.load(os.path.join(folder, CHECKPOINT_FILE), weights_only=False)


class _RayNode:
    @property
    def node_id(self) -> str:
        import ray

        return ray.get_runtime_context().get_node_id()


class TuneContext(_RayNode, BaseContext):
    """One trial in one Ray Tune actor."""

    def _map_remote(self, fn: Callable[[Any], Any], items: list[Any]) -> list[Any]:
        """Ray tasks in the trial's placement group: its map bundles, never another trial's."""
        import ray
        from ray.util.placement_group import get_current_placement_group
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        group = get_current_placement_group()
        strategy = (PlacementGroupSchedulingStrategy(group, placement_group_bundle_index=-1)
                    if group is not None else "DEFAULT")
        task = ray.remote(_apply).options(num_cpus=self.cpus_per_map_task,
                                          scheduling_strategy=strategy, max_retries=0)
        refs = [task.remote(fn, item) for item in items]
        out = []
        for index, ref in enumerate(refs):
            try:
                out.append(ray.get(ref))
            except ray.exceptions.RayTaskError as exc:
                for pending in refs[index + 1:]:
                    ray.cancel(pending)
                cause = exc.cause if getattr(exc, "cause", None) is not None else exc
                raise MapTaskError(f"{_describe(fn, index, items[index])}: {cause!r}") from cause
        return out

    def _send(self, metrics: dict[str, Any], checkpoint: Mapping[str, Any] | None) -> None:
        from ray import tune

        metrics = {**metrics, "node_id": self.node_id}
        if checkpoint is None:
            tune.report(metrics)
            return
        with tempfile.TemporaryDirectory() as folder:
            _save_state(checkpoint, folder)
            tune.report(metrics, checkpoint=tune.Checkpoint.from_directory(folder))

    def _read_checkpoint(self) -> dict[str, Any] | None:
        from ray import tune

        return _load_state(tune.get_checkpoint())

    @property
    def device(self) -> torch.device:
        if self._device == "auto":
            import ray

            has_gpu = torch.cuda.is_available() and bool(ray.get_gpu_ids())
            return torch.device("cuda" if has_gpu else "cpu")
        return super().device


class TrainContext(_RayNode, BaseContext):
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

        metrics = {**metrics, "node_id": self.node_id}
        if checkpoint is None or not self.is_main:
            ray.train.report(metrics)
            return
        with tempfile.TemporaryDirectory() as folder:
            _save_state(checkpoint, folder)
            ray.train.report(metrics, checkpoint=ray.train.Checkpoint.from_directory(folder))

    def _read_checkpoint(self) -> dict[str, Any] | None:
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

    def all_reduce_sum(self, value: float) -> float:
        if self.world_size == 1 or not torch.distributed.is_initialized():
            return value
        tensor = torch.tensor([value], dtype=torch.float64, device=self.device)
        torch.distributed.all_reduce(tensor)
        return float(tensor.item())

    def all_reduce_mean(self, value: float) -> float:
        return self.all_reduce_sum(value) / self.world_size


if TYPE_CHECKING:  # `make lint` holds every context to the contract a loop is written against
    from raystudy.contract.context import LocalContext
    from raystudy.contract.study import TrialContext

    def _conform(local: LocalContext, tune: TuneContext, train: TrainContext
                 ) -> list[TrialContext]:
        return [local, tune, train]
