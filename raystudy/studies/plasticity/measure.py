"""What the plasticity study measures on a task's sample: at the task's start, and inside it.

The loss, each hidden layer's feature effective rank, srank, dormant and dead units, the
weight norm and (when asked) the Hessian's top eigenvalues, spectral density and
epsilon-ranks (:mod:`raystudy.algorithms.plasticity.metrics`). Both loops (supervised in
``recipe.py``, RL in ``rl.py``) call these.
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING

import numpy as np
import torch

from raystudy.algorithms.plasticity import derive_seed
from raystudy.algorithms.plasticity.metrics import (
    feature_metrics,
    hessian_metrics,
    weight_norm,
)

if TYPE_CHECKING:
    from raystudy.studies.plasticity.config import PlasticityConfig


WITHIN_KEYS = ("task/loss_start", "features/erank", "features/srank", "features/dormant",
               "features/dead", "weights/norm", "hessian/eps_rank", "hessian/lambda_1")
"""What a within-task measurement reports (``task/loss_start`` as ``loss``)."""


def start_of_task_metrics(config: PlasticityConfig, model: torch.nn.Module, loss_fn, inputs,
                          targets, task: int, last: bool) -> dict[str, float]:
    """Loss, features and weights on the new task's sample; the Hessian every K tasks
    (from the first) and at the last task."""
    m = config.metrics
    hessian = bool(m.hessian_every) and (task % m.hessian_every == 0 or last)
    return measure(config, model, loss_fn, inputs, targets, task, hessian)


def within_task_metrics(config: PlasticityConfig, model: torch.nn.Module, loss_fn, inputs,
                        targets, task: int, step: int) -> dict[str, float]:
    """``metrics.every_steps``: the headline metrics at ``step`` of a task, keyed
    ``within/step{step}/...`` so that they travel in the task's report."""
    with torch.enable_grad():
        out = measure(config, model, loss_fn, inputs, targets, task,
                      config.metrics.hessian_within, salt=step)
    prefix = f"within/step{step}/"
    return {prefix + ("loss" if key == "task/loss_start" else key): out[key]
            for key in WITHIN_KEYS if key in out} | {"metrics/seconds": out["metrics/seconds"]}


def measure(config: PlasticityConfig, model: torch.nn.Module, loss_fn, inputs, targets,
            task: int, hessian: bool, salt: int = 0) -> dict[str, float]:
    m = config.metrics
    started = time.perf_counter()
    with torch.no_grad():
        output, features = model.forward_features(inputs)
        loss = float(loss_fn(output, targets))
    out = {"task/loss_start": loss,
           **feature_metrics(features, m.dormant_tau), "weights/norm": weight_norm(model)}
    if hessian:
        keys = (config.train.seed, task, 20, salt) if salt else (config.train.seed, task, 20)
        generator = torch.Generator().manual_seed(derive_seed(*keys))
        out.update(hessian_metrics(model, loss_fn, inputs, targets, m.lanczos_iterations,
                                   m.probes, m.sigma2, m.top_k, m.eps, m.rel_eps,
                                   generator=generator))
    out["metrics/seconds"] = time.perf_counter() - started
    return out


def late_mean(history: list[float], fraction: float) -> float:
    """Mean of the last ``fraction`` of ``history`` (at least one value)."""
    if not history:
        return math.nan
    return float(np.mean(history[-max(1, math.ceil(fraction * len(history))):]))
