"""``ctx.map``: in-process under LocalContext, Ray tasks in the trial's placement group."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

import pytest
import ray.cloudpickle

from raystudy.contract.context import LocalContext, MapTaskError
from raystudy.contract.study import Metric, Study
from raystudy.platform.execution.trainable import Compute, make_trainable

ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # Ray workers can't import us


def square_with_pid(x: int) -> tuple[int, int]:
    if x == 3:
        raise ValueError("three is not allowed")
    return x * x, os.getpid()


def test_local_map_keeps_order_and_names_the_failing_item():
    ctx = LocalContext()
    assert [r[0] for r in ctx.map(square_with_pid, [2, 0, 1])] == [4, 0, 1]
    assert ctx.map(square_with_pid, []) == []
    with pytest.raises(MapTaskError, match=r"square_with_pid failed on item 1 \(3\).*three"):
        ctx.map(square_with_pid, [1, 3, 2])


def test_map_slots_are_bundles_of_the_trial_placement_group():
    assert Compute().resources() == {"CPU": 1.0, "GPU": 0.0}
    group = Compute(cpus_per_worker=0, map_tasks=2, cpus_per_map_task=0.5).resources()
    assert group.bundles == [{"memory": 1}, {"CPU": 0.5}, {"CPU": 0.5}]
    assert Compute(workers=2, map_tasks=2).map_bundles() == []  # Train workers: in-process


@dataclass
class MapConfig:
    items: int = 6
    fail: bool = False


def map_loop(config: MapConfig, ctx) -> None:
    values = list(range(config.items)) if not config.fail else [0, 1, 3]
    values = [v for v in values if v != 3 or config.fail]
    results = ctx.map(square_with_pid, values)
    pids = {pid for _, pid in results}
    ctx.report({"train/loss": float(sum(r for r, _ in results)),
                "other_pids": float(os.getpid() not in pids), "n_pids": float(len(pids))})


MAP_STUDY = Study("map_test", "ctx.map test", MapConfig, map_loop,
                  (Metric("train/loss", "min"),))


@pytest.mark.ray
def test_map_runs_in_ray_tasks_inside_concurrent_trials_without_deadlock(ray_session, tmp_path):
    from ray import tune

    # Each trial reserves its 2 CPUs as two map bundles: the two trials take turns.
    compute = Compute(cpus_per_worker=0, map_tasks=2)
    trainable = tune.with_resources(make_trainable(MAP_STUDY, MapConfig(), compute, ""),
                                    compute.resources())
    tuner = tune.Tuner(trainable, param_space={"fail": tune.grid_search([False, True])},
                       tune_config=tune.TuneConfig(max_concurrent_trials=2),
                       run_config=tune.RunConfig(storage_path=str(tmp_path), name="map"))
    grid = tuner.fit()
    ok = next(r for r in grid if not r.config["fail"])
    assert ok.metrics["train/loss"] == sum(x * x for x in [0, 1, 2, 4, 5])
    assert ok.metrics["other_pids"] == 1.0  # the items ran in Ray tasks, not in the trial
    failed = next(r for r in grid if r.config["fail"])
    assert failed.error is not None
    assert "square_with_pid failed on item 2 (3)" in str(failed.error)
