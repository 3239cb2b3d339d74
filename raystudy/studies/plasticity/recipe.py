"""Does the Hessian spectrum collapse before plasticity is lost, and does L2-ER prevent it?

Paper: Prakash, He, Guo et al., "Spectral Collapse Drives Loss of Plasticity in Deep
Continual Learning" (arXiv 2509.22335; code KevinGuo27/lop-jax). Claim: when a network
trained on a sequence of tasks stops being able to learn new ones, the Hessian of the
new task's loss at the task's start has collapsed first (its epsilon-rank, the share of
spectral mass with |lambda| > eps, falls, and predicts accuracy); an L2 penalty plus a
term keeping each layer's feature effective rank high (L2-ER) keeps late-task
performance at the level of a network reset at every task.

Launch::

    raystudy sweep plasticity --profile quick                 # random-label digits, 2 CPUs
    raystudy sweep plasticity --profile quick --space rl      # changing CartPole, PPO
    raystudy sweep plasticity --profile paper --gpus-per-worker 1    # Permuted MNIST
    raystudy sweep plasticity --profile slippery_ant --gpus-per-worker 1

One trial = one intervention (``intervention.spec``: method/strength, e.g. ``l2_er/1e-4/1e-2``)
x seed x stream. At every task boundary the trial measures, on a fixed sample of the new
task's data before training on it, the loss, each hidden layer's feature effective rank,
srank, dormant and dead units, the weight norm and (every ``metrics.hessian_every`` tasks)
the Hessian's top eigenvalues, spectral density and epsilon-ranks; while training it
counts the online training accuracy (each minibatch before its update); after training
the task it measures accuracy (or return) and reports all of it with ``ctx.report``, with
a checkpoint every ``train.checkpoint_every`` tasks (a resumed trial continues after its
last checkpoint). ``analyze`` draws per-task curves with seed bands, the score by task
window, late-task performance relative to reset, and the claim test (R^2 of the online
accuracy on the epsilon-rank at a fixed eps chosen in advance, at the post-hoc best eps
and for each variant; which falls first on aligned series; L2-ER, its strength chosen on
held-out seeds, vs reset).

Beside this recipe: ``config.py`` (the config and its rules), ``interventions.py`` (the
spec's grammar and pieces), ``measure.py`` (the task-start and within-task metrics),
``rl.py`` (the RL stream's loop) and ``analysis.py`` (the report).
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from raystudy import (
    Metric,
    Study,
    TrialContext,
)
from raystudy.algorithms.plasticity import MLP, ConvNet, Intervention, derive_seed
from raystudy.algorithms.plasticity.data import (
    DataFormatError,
    DataMissingError,
    check_image_data,
    load_image_data,
)
from raystudy.algorithms.plasticity.streams import (
    ImageData,
    Task,
    incremental_tasks,
    stream_task,
)
from raystudy.errors import DataError, MissingDataError
from raystudy.studies.plasticity.analysis import analyze
from raystudy.studies.plasticity.config import PlasticityConfig
from raystudy.studies.plasticity.interventions import build_intervention, uses_layernorm
from raystudy.studies.plasticity.measure import (
    late_mean,
    start_of_task_metrics,
    within_task_metrics,
)
from raystudy.studies.plasticity.rl import rl_loop


# ----------------------------------------------------------------------------- data
@functools.lru_cache(maxsize=2)
def load_images(dataset: str, path: str) -> ImageData:
    """The dataset as tensors (cached per process); a bad file is one DataError line."""
    try:
        return load_image_data(dataset, path)
    except DataFormatError as exc:
        raise DataError(str(exc)) from None


def check_data(config: PlasticityConfig) -> None:
    """On the driver: the local dataset files exist, with the expected format and labels."""
    if config.stream.kind != "rl":
        try:
            check_image_data(config.stream.dataset, config.stream.path)
        except DataMissingError as exc:
            raise MissingDataError(str(exc)) from None
        except DataFormatError as exc:
            raise DataError(str(exc)) from None


# ----------------------------------------------------------------------------- model
def build_model(config: PlasticityConfig, data: ImageData) -> torch.nn.Module:
    """The ConvNet or the MLP sized for ``data``, with LayerNorm where the spec asks."""
    layernorm = uses_layernorm(config)
    if config.model.arch == "convnet":
        return ConvNet(data.x_train.shape[1], data.classes, layernorm=layernorm)
    return MLP(data.x_train[0].numel(), config.model.hidden, data.classes, layernorm=layernorm)


def make_optimizer(config: PlasticityConfig, params) -> torch.optim.Optimizer:
    """``train.optimizer`` (SGD or Adam) at ``train.lr``."""
    if config.train.optimizer == "sgd":
        return torch.optim.SGD(params, lr=config.train.lr)
    return torch.optim.Adam(params, lr=config.train.lr)


class Flatten(torch.nn.Module):
    """An MLP reads flattened images; the ConvNet reads them as they are."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model
        self.flat = isinstance(model, MLP)

    def _in(self, x: torch.Tensor) -> torch.Tensor:
        return x.reshape(len(x), -1) if self.flat else x

    def forward_features(self, x):
        return self.model.forward_features(self._in(x))

    def forward(self, x):
        return self.model(self._in(x))

    def unit_pairs(self):
        return self.model.unit_pairs()


def masked_cross_entropy(logits: torch.Tensor, y: torch.Tensor, active: int) -> torch.Tensor:
    """Cross-entropy over the first ``active`` logits (the classes seen so far)."""
    return torch.nn.functional.cross_entropy(logits[:, :active], y)


@torch.no_grad()
def accuracy(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, active: int) -> float:
    """Share of ``x`` classified as ``y`` over the ``active`` logits (in batches of 4096)."""
    correct = sum(int((model(xb)[:, :active].argmax(1) == yb).sum())
                  for xb, yb in zip(x.split(4096), y.split(4096), strict=True))
    return correct / max(1, len(y))


# ----------------------------------------------------------------------------- loop
def num_tasks(config: PlasticityConfig, data: ImageData | None) -> int:
    """Tasks in the stream: ``stream.tasks``, capped by the classes an incremental one has."""
    if config.stream.kind == "incremental":
        if data is None:
            raise ValueError("stream.kind=incremental needs an image dataset")
        return min(config.stream.tasks, incremental_tasks(data.classes,
                                                          config.stream.classes_per_task))
    return config.stream.tasks


def train_task(config: PlasticityConfig, model, optimizer, intervention: Intervention,
               task: Task, probe: Callable[[int], None] | None = None) -> tuple[float, float]:
    """``train.steps_per_task`` minibatch steps (reshuffled epochs); returns the last loss and
    the online training accuracy (each minibatch's accuracy before its update, averaged over
    the task: the authors' per-task accuracy). ``probe(step)`` runs after every
    ``metrics.every_steps`` steps but the last."""
    every = config.metrics.every_steps
    n = len(task.x_train)
    batch = min(config.train.batch_size, n)
    generator = torch.Generator().manual_seed(derive_seed(config.train.seed, task.index, 21))
    order, position, loss = torch.randperm(n, generator=generator), 0, torch.tensor(math.nan)
    intervention.scoring_data(task.x_train)
    correct = torch.zeros((), dtype=torch.long, device=task.x_train.device)
    for step in range(1, config.train.steps_per_task + 1):
        if position + batch > n:
            order, position = torch.randperm(n, generator=generator), 0
        rows = order[position:position + batch].to(task.x_train.device)
        position += batch
        x, y = task.x_train[rows], task.y_train[rows]
        logits, features = model.forward_features(x)
        loss = masked_cross_entropy(logits, y, task.active)
        correct += (logits.detach()[:, :task.active].argmax(1) == y).sum()
        optimizer.zero_grad(set_to_none=True)
        (loss + intervention.penalty(model, features)).backward()
        optimizer.step()
        intervention.after_step(model, optimizer, x)
        if probe is not None and every and step % every == 0 \
                and step < config.train.steps_per_task:
            probe(step)
    return float(loss.detach()), int(correct) / (batch * config.train.steps_per_task)


def training_state(config: PlasticityConfig, data: ImageData, device: torch.device,
                   state: dict[str, Any] | None
                   ) -> tuple[Flatten, torch.optim.Optimizer, Intervention, list[float],
                              dict[str, float]]:
    """The network, its optimizer, the intervention, the end-of-task scores so far and the
    time totals: fresh from ``train.seed``, or restored from the checkpoint ``state``."""
    torch.manual_seed(config.train.seed)  # the initial weights, resumed or not
    model = Flatten(build_model(config, data)).to(device)
    optimizer = make_optimizer(config, model.parameters())
    intervention = build_intervention(config)
    if state is None:
        return model, optimizer, intervention, [], {"train": 0.0, "metrics": 0.0, "steps": 0}
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    intervention.load_state_dict(state["intervention"])
    return model, optimizer, intervention, state["history"], state["totals"]


def measurement_sample(config: PlasticityConfig, task: Task, index: int,
                       device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """The fixed ``metrics.samples`` rows of the task's training data every measurement of
    the task reads (from a seed of their own, so a resumed run draws the same rows)."""
    generator = torch.Generator().manual_seed(derive_seed(config.train.seed, index, 22))
    rows = torch.randperm(len(task.x_train), generator=generator)[:config.metrics.samples]
    rows = rows.to(device)
    return task.x_train[rows], task.y_train[rows]


class WithinTaskProbe:
    """``train_task``'s probe: the within-task metrics on the task's sample, and the seconds
    they took (measurement time, not training time)."""

    def __init__(self, config: PlasticityConfig, model: torch.nn.Module,
                 loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
                 inputs: torch.Tensor, targets: torch.Tensor, index: int) -> None:
        self.config, self.model, self.loss_fn = config, model, loss_fn
        self.inputs, self.targets, self.index = inputs, targets, index
        self.metrics: dict[str, float] = {}
        self.seconds = 0.0

    def __call__(self, step: int) -> None:
        found = within_task_metrics(self.config, self.model, self.loss_fn, self.inputs,
                                    self.targets, self.index, step)
        self.seconds += found.pop("metrics/seconds")
        self.metrics.update(found)


def timed_train_task(config: PlasticityConfig, model: torch.nn.Module,
                     optimizer: torch.optim.Optimizer, intervention: Intervention, task: Task,
                     probe: WithinTaskProbe, start_seconds: float,
                     totals: dict[str, float]) -> tuple[float, float]:
    """``train_task`` with the probe; adds its training seconds (the probe's left out), the
    task's measurement seconds and its steps to ``totals``. The last loss, online accuracy."""
    started = time.perf_counter()
    loss_end, online = train_task(config, model, optimizer, intervention, task, probe)
    totals["train"] += time.perf_counter() - started - probe.seconds
    totals["metrics"] += start_seconds + probe.seconds
    totals["steps"] += config.train.steps_per_task
    return loss_end, online


def end_of_task_accuracy(model: torch.nn.Module, task: Task, inputs: torch.Tensor,
                         targets: torch.Tensor) -> tuple[float, float]:
    """Accuracy on the task's evaluation data (its score) and on its training sample (the
    same number where the task is scored on its training data)."""
    score = accuracy(model, task.x_eval, task.y_eval, task.active)
    train_score = score if task.eval_is_train else accuracy(model, inputs, targets, task.active)
    return score, train_score


def task_report(config: PlasticityConfig, index: int, history: list[float], train_score: float,
                loss_end: float, online: float, start: dict[str, float],
                within: dict[str, float], totals: dict[str, float]) -> dict[str, float]:
    """The task's report: its score (the last of ``history``) and the scores so far, its
    training, its start-of-task and within-task metrics, and the time totals."""
    score = history[-1]
    return {
        "eval/late_score": late_mean(history, config.metrics.late_fraction),
        "task/index": index + 1, "task/accuracy": score, "task/score": score,
        "task/train_accuracy": train_score, "task/loss_end": loss_end,
        "task/online_accuracy": online, "task/online_score": online,
        "eval/mean_score": float(np.mean(history)), **start, **within,
        "train/steps": totals["steps"], "train/seconds": totals["train"],
        "metrics/overhead": totals["metrics"] / max(totals["train"], 1e-9),
    }


def train_loop(config: PlasticityConfig, ctx: TrialContext) -> None:
    """Each task of the stream in turn: measure it at its start, train on it, score it and
    report (``stream.kind=rl``: PPO, in ``rl.py``)."""
    torch.set_num_threads(config.train.threads)
    # Dead units' Adam moments (and L2-decayed weights) decay into subnormal floats, which
    # x86 CPUs process 10-100x slower; a 100-task L2 run took 2-3x longer than without L2.
    torch.set_flush_denormal(True)
    if config.stream.kind == "rl":
        return rl_loop(config, ctx)
    device = ctx.device
    data = load_images(config.stream.dataset, config.stream.path)
    tasks = num_tasks(config, data)
    cadence = ctx.cadence(tasks, eval_every=1, checkpoint_every=config.train.checkpoint_every)
    model, optimizer, intervention, history, totals = training_state(
        config, data, device, ctx.load_checkpoint())
    for task_number in cadence:
        t = task_number - 1  # the stream's 0-based task index
        task = stream_task(config.stream.kind, data, t, config.train.seed, config.stream.examples,
                           config.stream.classes_per_task).to(device)
        intervention.task_start(model, optimizer, t)
        inputs, targets = measurement_sample(config, task, t, device)
        loss_fn = functools.partial(masked_cross_entropy, active=task.active)
        start = start_of_task_metrics(config, model, loss_fn, inputs, targets, t,
                                      last=task_number == tasks)
        probe = WithinTaskProbe(config, model, loss_fn, inputs, targets, t)
        loss_end, online = timed_train_task(config, model, optimizer, intervention, task, probe,
                                            start["metrics/seconds"], totals)
        score, train_score = end_of_task_accuracy(model, task, inputs, targets)
        history.append(score)
        report = task_report(config, t, history, train_score, loss_end, online, start,
                             probe.metrics, totals)
        checkpoint = ({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                       "intervention": intervention.state_dict(), "history": history,
                       "totals": totals} if cadence.checkpoints(task_number) else None)
        ctx.report(report, checkpoint=checkpoint, step=task_number)


STUDY = Study(
    name="plasticity",
    description="Hessian spectral collapse and L2-ER in continual learning (Prakash et al.)",
    config_cls=PlasticityConfig,
    train_loop=train_loop,
    metrics=(
        Metric("eval/late_score", "max",
               "mean end-of-task accuracy (or return) over the last quarter of the tasks"),
        Metric("task/loss_end", "min", "training loss of the last step of the latest task"),
        Metric("task/score", "max", "accuracy (or return) at the end of the latest task"),
        Metric("hessian/eps_rank", "max", "Hessian epsilon-rank at the latest measured task"),
    ),
    analyze=analyze,
    check_data=check_data,
)
