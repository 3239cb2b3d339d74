"""Turn a study's train loop into a Ray Tune trainable, with or without Ray Train workers.

Without workers each trial runs the loop in its own Tune actor (actors are reused
between trials where the study allows it). With ``workers >= 1`` each trial is a
small driver that launches a ``TorchTrainer`` (DDP over N workers, checkpoints,
``FailureConfig``) and forwards its reports to Tune with ``TuneReportCallback`` --
the Train V2 way; ``Tuner(TorchTrainer(...))`` no longer works in Ray 2.60.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from raystudy.contract.context import TrialDiverged
from raystudy.contract.study import Study, TrialContext
from raystudy.platform.configuration.config import apply_overrides, flat_fields, validate
from raystudy.platform.execution.contexts import TrainContext, TuneContext


@dataclass(frozen=True)
class Compute:
    """Compute settings of one trial, kept apart from the study's config."""

    workers: int = 0
    cpus_per_worker: float = 1.0
    gpus_per_worker: float = 0.0
    worker_max_failures: int = 2
    device: str = "auto"
    map_tasks: int = 0
    """Extra one-task bundles the trial reserves for ``ctx.map`` (0: map runs in-process)."""
    cpus_per_map_task: float = 1.0

    def trial_bundle(self) -> dict[str, float]:
        """Resources of the trial process itself."""
        if self.workers:
            # The trial only drives the TorchTrainer; the workers hold the CPUs/GPUs.
            # Tune refuses an all-zero request, and any CPU fraction would keep N
            # one-CPU workers off an N-CPU machine: ask for one byte of memory instead.
            return {"CPU": 0, "memory": 1}
        bundle = {"CPU": self.cpus_per_worker, "GPU": self.gpus_per_worker}
        return bundle if any(bundle.values()) else {"CPU": 0, "memory": 1}

    def map_bundles(self) -> list[dict[str, float]]:
        """One bundle per ``ctx.map`` slot, reserved with the trial (no deadlock)."""
        if self.workers:
            return []
        return [{"CPU": self.cpus_per_map_task}] * self.map_tasks

    def worker_bundles(self) -> list[dict[str, float]]:
        """One bundle per Ray Train worker of a trial (none without --workers)."""
        bundle = {"CPU": self.cpus_per_worker, "GPU": self.gpus_per_worker}
        return [bundle] * self.workers

    def all_bundles(self) -> list[dict[str, float]]:
        """Everything one trial holds at once: itself, its map slots, its Train workers."""
        return [self.trial_bundle(), *self.map_bundles(), *self.worker_bundles()]

    def resources(self) -> Any:
        """What Tune reserves per trial: a dict, or a placement group with map bundles."""
        if not self.map_bundles():
            return self.trial_bundle()
        from ray.tune import PlacementGroupFactory

        return PlacementGroupFactory([self.trial_bundle(), *self.map_bundles()])


def resumable(run_trial: Callable[[dict[str, Any]], None]) -> type:
    """Tune's trainable class for the function ``run_trial``, whose restore outlives a
    checkpoint that the run's saved state names but storage no longer holds.

    Tune deletes a trial's checkpoints beyond ``num_to_keep`` as soon as a newer one is
    registered, yet saves the experiment state (which names the checkpoint a resumed
    trial starts from) only every second, asynchronously: a driver killed in between
    leaves a state naming a deleted checkpoint, and Tune's own restore fails the trial
    ("does not exist on storage anymore": 4 of 29 runs of the killed-driver test, 2026-12-05,
    in ``tests/platform/test_cluster_faults.py``). The trial resumes instead from
    :func:`surviving_checkpoint`, or afresh where none is left.
    """
    from ray import tune
    from ray.tune.trainable import wrap_function

    class Resumable(wrap_function(run_trial)):  # type: ignore[misc, valid-type]
        def restore(self, checkpoint_path: Any) -> Any:
            checkpoint = getattr(checkpoint_path, "checkpoint", checkpoint_path)
            if not isinstance(checkpoint, tune.Checkpoint):
                return super().restore(checkpoint_path)
            found = surviving_checkpoint(checkpoint.filesystem, checkpoint.path)
            if found == checkpoint.path:
                return super().restore(checkpoint_path)
            gone = checkpoint.path.rsplit("/", 1)[-1]
            if found is None:
                print(f"raystudy: {gone} of this trial is gone from storage and no later "
                      "checkpoint is left; the trial starts afresh", flush=True)
                return None
            print(f"raystudy: {gone} of this trial is gone from storage (deleted before "
                  f"the run's state was saved); resuming from {found.rsplit('/', 1)[-1]}",
                  flush=True)
            replacement = tune.Checkpoint(found, filesystem=checkpoint.filesystem)
            if checkpoint is checkpoint_path:
                return super().restore(replacement)
            return super().restore(type(checkpoint_path)(checkpoint=replacement,
                                                         metrics=checkpoint_path.metrics))

    Resumable.__name__ = Resumable.__qualname__ = run_trial.__name__
    return Resumable


def surviving_checkpoint(filesystem: Any, path: str) -> str | None:
    """``path`` where it exists; else the oldest ``checkpoint_*`` after it in its trial
    folder (registered by Tune before the one that deleted ``path``, so complete; the
    newest may be an upload a killed run left half-written); ``None`` if there is none.
    ``filesystem`` is a ``pyarrow.fs.FileSystem``."""
    from pyarrow import fs as pafs

    if filesystem.get_file_info(path).type != pafs.FileType.NotFound:
        return path
    folder, _, name = path.rpartition("/")
    later = sorted(info.path for info in filesystem.get_file_info(
        pafs.FileSelector(folder, allow_not_found=True))
        if info.type == pafs.FileType.Directory and info.base_name.startswith("checkpoint_")
        and info.base_name > name)
    return later[0] if later else None


def run_loop(study: Study, config: Any, ctx: TrialContext) -> None:
    """Run the study's loop; a diverged trial ends normally after its last report."""
    try:
        study.train_loop(config, ctx)
    except TrialDiverged:
        return


def _train_worker(loop_config: dict[str, Any], study: Study, device: str) -> None:
    ctx = TrainContext(study.metrics, device=device)
    run_loop(study, loop_config["config"], ctx)


def make_trainable(
    study: Study, base_config: Any, compute: Compute, storage_path: str
) -> Callable[[dict[str, Any]], None]:
    """A Tune function trainable: trial params are dotted overrides of ``base_config``."""
    fields = flat_fields(type(base_config))  # here, where the config's module imports

    def run_trial(params: dict[str, Any]) -> None:
        config = validate(apply_overrides(base_config, params, fields), fields)
        if compute.workers == 0:
            datasets = study.datasets(config) if study.datasets else None
            ctx = TuneContext(study.metrics, datasets=datasets, device=compute.device,
                              map_tasks=compute.map_tasks,
                              cpus_per_map_task=compute.cpus_per_map_task)
            run_loop(study, config, ctx)
            return
        _fit_torch_trainer(study, config, compute, storage_path)

    run_trial.__name__ = study.name
    return run_trial


def _fit_torch_trainer(study: Study, config: Any, compute: Compute, storage_path: str) -> None:
    import ray.train
    from ray import tune
    from ray.train.torch import TorchTrainer
    from ray.tune.integration.ray_train import TuneReportCallback

    worker_resources = {"CPU": compute.cpus_per_worker}
    if compute.gpus_per_worker:
        worker_resources["GPU"] = compute.gpus_per_worker
    trainer = TorchTrainer(
        functools.partial(_train_worker, study=study, device=compute.device),
        train_loop_config={"config": config},
        scaling_config=ray.train.ScalingConfig(
            num_workers=compute.workers,
            use_gpu=compute.gpus_per_worker > 0,
            resources_per_worker=worker_resources,
        ),
        run_config=ray.train.RunConfig(
            # Same (storage_path, name) on a restarted trial => Train resumes its run.
            name=f"train-{tune.get_context().get_trial_id()}",
            storage_path=storage_path,
            failure_config=ray.train.FailureConfig(max_failures=compute.worker_max_failures),
            callbacks=[TuneReportCallback()],
        ),
        datasets=study.datasets(config) if study.datasets else None,
    )
    trainer.fit()
