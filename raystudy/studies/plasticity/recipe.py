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
the Hessian's top eigenvalues, spectral density and epsilon-ranks; after training the
task it measures accuracy (or return) and reports all of it with ``ctx.report``, with a
checkpoint every ``train.checkpoint_every`` tasks (a resumed trial continues after its
last checkpoint). ``analyze`` draws per-task curves with seed bands, late-task performance relative
to reset, and the claim test (R^2 of epsilon-rank vs accuracy at a fixed eps chosen in
advance and at the post-hoc best eps, which falls first, L2-ER vs reset).
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from raystudy import Analysis, Metric, Study, Table, TrialContext
from raystudy.algorithms.plasticity import (
    L2,
    MLP,
    Compose,
    ConvNet,
    EffectiveRankAscent,
    EffectiveRankPenalty,
    FullReset,
    Intervention,
    L2Init,
    ReDo,
    ShrinkPerturb,
    derive_seed,
)
from raystudy.algorithms.plasticity.analysis import (
    Run,
    claim_test,
    late_stats,
)
from raystudy.algorithms.plasticity.data import (
    DATASETS,
    DataFormatError,
    DataMissingError,
    check_image_data,
    load_image_data,
)
from raystudy.algorithms.plasticity.metrics import (
    feature_metrics,
    hessian_metrics,
    weight_norm,
)
from raystudy.algorithms.plasticity.plots import plot_claim, plot_per_task, plot_relative
from raystudy.algorithms.plasticity.ppo import PPOConfig
from raystudy.algorithms.plasticity.streams import (
    STREAMS,
    ImageData,
    Task,
    incremental_tasks,
    stream_task,
)
from raystudy.errors import DataError, MissingDataError
from raystudy.platform.config import to_flat_dict

# method -> names of its numbers in the spec "method/x/y"
METHODS: dict[str, tuple[str, ...]] = {
    "none": (), "reset": (), "layernorm": (),
    "l2": ("lambda",), "l2_init": ("lambda",), "shrink_perturb": ("shrink", "sigma"),
    "redo": ("tau",), "er": ("er_lr",), "l2_er": ("lambda", "er_lr"),
    "er_penalty": ("beta",), "l2_er_penalty": ("lambda", "beta"),
}


@dataclass
class StreamConfig:
    kind: str = "random_labels"
    """permuted | random_labels | incremental (supervised) | rl (changing dynamics, PPO)."""
    dataset: str = "digits"
    """digits (sklearn, offline) | mnist | cifar10 | cifar100 (local files in stream.path)."""
    path: str = ""
    """Folder with the dataset files (mnist, cifar10, cifar100); see check_data."""
    tasks: int = 60
    """Tasks in the stream (incremental: at most classes / classes_per_task)."""
    examples: int = 512
    """random_labels: images memorised per task; permuted: training images per task (0: all)."""
    classes_per_task: int = 2
    """incremental: classes added per task."""


@dataclass
class ModelConfig:
    arch: str = "mlp"
    """mlp | convnet (Dohare et al.'s ConvNet, 32x32 images)."""
    hidden: tuple[int, ...] = (256, 256)
    """MLP hidden widths (the issue's 64-256-256-10 on digits); PPO actor and critic too."""


@dataclass
class TrainConfig:
    optimizer: str = "adam"
    """adam | sgd (supervised streams)."""
    lr: float = 1e-3
    """Learning rate of the supervised streams."""
    batch_size: int = 32
    """Minibatch size."""
    steps_per_task: int = 200
    """Optimizer steps per supervised task."""
    seed: int = 0
    """Seed of the model init, the stream's tasks and the minibatch order."""
    threads: int = 1
    """torch CPU threads per trial (concurrent trials share the cores)."""
    checkpoint_every: int = 20
    """Tasks between checkpoints (0: none; the last task always checkpoints)."""


@dataclass
class InterventionConfig:
    spec: str = "none"
    """method[/numbers] (+ more): none, reset, layernorm, l2/lam, l2_init/lam,
    shrink_perturb/shrink/sigma, redo/tau, er/er_lr, l2_er/lam/er_lr, er_penalty/beta,
    l2_er_penalty/lam/beta."""
    er_every: int = 100
    """ER ascent: one step every er_every minibatches, on their concatenation (lop-jax)."""
    redo_every: int = 100
    """ReDo: steps between dormant-unit resets."""


@dataclass
class MetricsConfig:
    samples: int = 256
    """Samples of the new task's training data for the start-of-task metrics (paper: 2000)."""
    hessian_every: int = 10
    """Tasks between Hessian measurements, from task 1 (0: never)."""
    every_steps: int = 0
    """Also measure inside each task every K training steps (RL: environment steps), on
    the same sample: reported with the task as within/step{s}/... (0: task starts only)."""
    hessian_within: bool = False
    """With every_steps: the Hessian (epsilon-rank, lambda_1) at those steps too."""
    lanczos_iterations: int = 30
    """Lanczos steps per probe (the authors: 100)."""
    probes: int = 1
    """SLQ probe vectors (the authors: 1)."""
    sigma2: float = 1e-5
    """Gaussian kernel variance factor of the density (the authors' 1e-5)."""
    top_k: int = 5
    """Top Hessian eigenvalues reported."""
    eps: float = 0.02
    """Fixed epsilon, chosen before any run: the authors' Permuted-MNIST value."""
    rel_eps: float = 1e-3
    """Relative epsilon-rank threshold, as a fraction of |lambda|_max."""
    dormant_tau: float = 0.025
    """ReDo score threshold of a dormant unit (Sokar et al.)."""
    late_fraction: float = 0.25
    """Late-task performance: mean over the last late_fraction of the tasks so far."""


@dataclass
class RLConfig:
    env: str = "CartPole-v1"
    """CartPole-v1 | Acrobot-v1 (physics + observation order change per task) | Ant-v5."""
    steps_per_task: int = 20_000
    """Environment steps per task (Slippery Ant: 2M)."""
    scale: float = 2.0
    """Classic control: each physical parameter times a log-uniform factor in [1/s, s]."""
    permute_obs: bool = True
    """Classic control: a new observation permutation per task."""
    friction_low: float = 0.02
    """Slippery Ant: lower end of the log-uniform friction range."""
    friction_high: float = 2.0
    """Slippery Ant: upper end of the log-uniform friction range."""
    ppo: PPOConfig = field(default_factory=PPOConfig)
    """PPO's hyperparameters (defaults: CleanRL's for CartPole)."""


@dataclass
class PlasticityConfig:
    stream: StreamConfig = field(default_factory=StreamConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    intervention: InterventionConfig = field(default_factory=InterventionConfig)
    metrics: MetricsConfig = field(default_factory=MetricsConfig)
    rl: RLConfig = field(default_factory=RLConfig)

    def validate(self) -> None:
        s, t, m, r = self.stream, self.train, self.metrics, self.rl
        if s.kind not in (*STREAMS, "rl"):
            raise ValueError(f"stream.kind={s.kind!r} is not one of {', '.join(STREAMS)}, rl")
        if s.dataset not in DATASETS:
            raise ValueError(f"stream.dataset={s.dataset!r} is not one of {', '.join(DATASETS)}")
        if s.dataset != "digits" and s.kind != "rl" and not s.path:
            raise ValueError(f"stream.dataset={s.dataset} needs stream.path (its local files)")
        if self.model.arch not in ("mlp", "convnet"):
            raise ValueError(f"model.arch={self.model.arch!r} must be mlp or convnet")
        if self.model.arch == "convnet" and not s.dataset.startswith("cifar"):
            raise ValueError("model.arch=convnet needs stream.dataset=cifar10 or cifar100")
        if t.optimizer not in ("adam", "sgd"):
            raise ValueError(f"train.optimizer={t.optimizer!r} must be adam or sgd")
        flat = to_flat_dict(self)
        for key in POSITIVE:
            if not (flat[key] > 0 and math.isfinite(flat[key])):
                raise ValueError(f"{key}={flat[key]} must be a positive number")
        for key in AT_LEAST_ONE:
            if flat[key] < 1:
                raise ValueError(f"{key}={flat[key]} must be >= 1")
        for key in NON_NEGATIVE:
            if flat[key] < 0:
                raise ValueError(f"{key}={flat[key]} must be >= 0")
        if r.scale < 1 or r.friction_high < r.friction_low:
            raise ValueError("rl.scale must be >= 1 and rl.friction_high >= rl.friction_low")
        if r.ppo.minibatch_size < 1:
            raise ValueError("rl.ppo.num_minibatches must be <= num_envs x num_steps")
        if not 0 < m.late_fraction <= 1:
            raise ValueError(f"metrics.late_fraction={m.late_fraction} must be in (0, 1]")
        if min(self.model.hidden, default=0) < 1:
            raise ValueError(f"model.hidden={self.model.hidden} needs widths >= 1")
        if r.env not in RL_ENVS:
            raise ValueError(f"rl.env={r.env!r} is not one of {', '.join(RL_ENVS)}")
        try:
            build_intervention(self)  # each piece checks its own numbers
        except ValueError as exc:
            prefix = f"intervention.spec={self.intervention.spec!r}"
            message = str(exc)
            raise ValueError(message if message.startswith(prefix)
                             else f"{prefix}: {message}") from None


RL_ENVS = ("CartPole-v1", "Acrobot-v1", "Ant-v5")
POSITIVE = ("train.lr", "rl.ppo.lr", "rl.scale", "rl.friction_low", "metrics.sigma2")
AT_LEAST_ONE = ("stream.tasks", "stream.classes_per_task", "train.batch_size",
                "train.steps_per_task", "train.threads", "metrics.samples", "metrics.top_k",
                "metrics.probes", "metrics.lanczos_iterations", "intervention.er_every",
                "intervention.redo_every", "rl.steps_per_task", "rl.ppo.num_envs",
                "rl.ppo.num_steps", "rl.ppo.update_epochs", "rl.ppo.num_minibatches")
NON_NEGATIVE = ("stream.examples", "metrics.hessian_every", "train.checkpoint_every",
                "metrics.eps", "metrics.rel_eps", "metrics.every_steps")
WITHIN_KEYS = ("task/loss_start", "features/erank", "features/srank", "features/dormant",
               "features/dead", "weights/norm", "hessian/eps_rank", "hessian/lambda_1")
"""What a within-task measurement reports (``task/loss_start`` as ``loss``)."""


# ----------------------------------------------------------------------------- interventions
def parse_intervention(spec: str) -> list[tuple[str, dict[str, float]]]:
    """``"l2_er/1e-4/1e-2+layernorm"`` -> ``[("l2_er", {"lambda": 1e-4, "er_lr": 1e-2}), ...]``."""
    parts = []
    for part in spec.strip().split("+"):
        name, *numbers = part.strip().split("/")
        if name not in METHODS:
            raise ValueError(f"intervention.spec={spec!r}: unknown method {name!r}; choose "
                             f"{', '.join(METHODS)}")
        keys = METHODS[name]
        try:
            values = [float(v) for v in numbers]
        except ValueError:
            values = []
            numbers = [None] * (len(keys) + 1)  # forces the message below
        if len(numbers) != len(keys) or any(not (v >= 0 and math.isfinite(v)) for v in values):
            form = "/".join([name, *keys])
            raise ValueError(f"intervention.spec={spec!r}: expected {form} with numbers >= 0")
        parts.append((name, dict(zip(keys, values, strict=True))))
    return parts


def method_of(spec: str) -> str:
    """The spec's method names joined by '+', without the numbers (``l2_er``)."""
    return "+".join(name for name, _ in parse_intervention(spec))


def build_intervention(config: PlasticityConfig) -> Compose:
    """The spec's pieces, seeded from the trial's seed."""
    seed, every = config.train.seed, config.intervention
    pieces: list[Intervention] = []
    for name, v in parse_intervention(config.intervention.spec):
        if name in ("l2", "l2_er", "l2_er_penalty") and v["lambda"] > 0:
            pieces.append(L2(v["lambda"]))
        if name == "l2_init":
            pieces.append(L2Init(v["lambda"]))
        elif name == "shrink_perturb":
            pieces.append(ShrinkPerturb(v["shrink"], v["sigma"], seed))
        elif name == "redo":
            pieces.append(ReDo(v["tau"], every.redo_every, seed))
        elif name == "reset":
            pieces.append(FullReset(seed))
        elif name in ("er", "l2_er"):
            pieces.append(EffectiveRankAscent(v["er_lr"], every.er_every))
        elif name in ("er_penalty", "l2_er_penalty"):
            pieces.append(EffectiveRankPenalty(v["beta"]))
    return Compose(pieces)


def uses_layernorm(config: PlasticityConfig) -> bool:
    return any(name == "layernorm" for name, _ in parse_intervention(config.intervention.spec))


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
    layernorm = uses_layernorm(config)
    if config.model.arch == "convnet":
        return ConvNet(data.x_train.shape[1], data.classes, layernorm=layernorm)
    return MLP(data.x_train[0].numel(), config.model.hidden, data.classes, layernorm=layernorm)


def make_optimizer(config: PlasticityConfig, params) -> torch.optim.Optimizer:
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
    correct = sum(int((model(xb)[:, :active].argmax(1) == yb).sum())
                  for xb, yb in zip(x.split(4096), y.split(4096), strict=True))
    return correct / max(1, len(y))


# ----------------------------------------------------------------------------- metrics
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


# ----------------------------------------------------------------------------- loop
def num_tasks(config: PlasticityConfig, data: ImageData | None) -> int:
    if config.stream.kind == "incremental":
        return min(config.stream.tasks, incremental_tasks(data.classes,
                                                          config.stream.classes_per_task))
    return config.stream.tasks


def train_task(config: PlasticityConfig, model, optimizer, intervention: Intervention,
               task: Task, probe: Callable[[int], None] | None = None) -> float:
    """``train.steps_per_task`` minibatch steps (reshuffled epochs); returns the last loss.
    ``probe(step)`` runs after every ``metrics.every_steps`` steps but the last."""
    every = config.metrics.every_steps
    n = len(task.x_train)
    batch = min(config.train.batch_size, n)
    generator = torch.Generator().manual_seed(derive_seed(config.train.seed, task.index, 21))
    order, position, loss = torch.randperm(n, generator=generator), 0, torch.tensor(math.nan)
    for step in range(1, config.train.steps_per_task + 1):
        if position + batch > n:
            order, position = torch.randperm(n, generator=generator), 0
        rows = order[position:position + batch].to(task.x_train.device)
        position += batch
        x, y = task.x_train[rows], task.y_train[rows]
        logits, features = model.forward_features(x)
        loss = masked_cross_entropy(logits, y, task.active)
        optimizer.zero_grad(set_to_none=True)
        (loss + intervention.penalty(model, features)).backward()
        optimizer.step()
        intervention.after_step(model, optimizer, x)
        if probe is not None and every and step % every == 0 \
                and step < config.train.steps_per_task:
            probe(step)
    return float(loss.detach())


def train_loop(config: PlasticityConfig, ctx: TrialContext) -> None:
    torch.set_num_threads(config.train.threads)
    # Dead units' Adam moments (and L2-decayed weights) decay into subnormal floats, which
    # x86 CPUs process 10-100x slower; a 100-task L2 run took 2-3x longer than without L2.
    torch.set_flush_denormal(True)
    if config.stream.kind == "rl":
        return rl_loop(config, ctx)
    torch.manual_seed(config.train.seed)
    device, m = ctx.device, config.metrics
    data = load_images(config.stream.dataset, config.stream.path)
    model = Flatten(build_model(config, data)).to(device)
    optimizer = make_optimizer(config, model.parameters())
    intervention = build_intervention(config)
    history, totals = [], {"train": 0.0, "metrics": 0.0, "steps": 0}
    tasks = num_tasks(config, data)
    cadence = ctx.cadence(tasks, eval_every=1, checkpoint_every=config.train.checkpoint_every)
    state = ctx.load_checkpoint()
    if state is not None:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        intervention.load_state_dict(state["intervention"])
        history, totals = state["history"], state["totals"]

    for task_number in cadence:
        t = task_number - 1
        task = stream_task(config.stream.kind, data, t, config.train.seed, config.stream.examples,
                           config.stream.classes_per_task).to(device)
        intervention.task_start(model, optimizer, t)
        sample = torch.randperm(len(task.x_train), generator=torch.Generator().manual_seed(
            derive_seed(config.train.seed, t, 22)))[:m.samples].to(device)
        loss_fn = functools.partial(masked_cross_entropy, active=task.active)
        start = start_of_task_metrics(config, model, loss_fn, task.x_train[sample],
                                      task.y_train[sample], t, last=t + 1 == tasks)
        within: dict[str, float] = {}
        spent = [0.0]  # seconds of within-task measurements: not training time

        def probe(step: int, t=t, task=task, loss_fn=loss_fn, sample=sample, within=within,
                  spent=spent) -> None:
            found = within_task_metrics(config, model, loss_fn, task.x_train[sample],
                                        task.y_train[sample], t, step)
            spent[0] += found.pop("metrics/seconds")
            within.update(found)

        started = time.perf_counter()
        loss_end = train_task(config, model, optimizer, intervention, task, probe)
        totals["train"] += time.perf_counter() - started - spent[0]
        totals["metrics"] += start["metrics/seconds"] + spent[0]
        totals["steps"] += config.train.steps_per_task
        score = accuracy(model, task.x_eval, task.y_eval, task.active)
        history.append(score)
        train_score = score if task.eval_is_train else accuracy(
            model, task.x_train[sample], task.y_train[sample], task.active)
        checkpoint = None
        if cadence.checkpoints(task_number):
            checkpoint = {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                          "intervention": intervention.state_dict(),
                          "history": history, "totals": totals}
        ctx.report({
            "eval/late_score": late_mean(history, m.late_fraction),
            "task/index": t + 1, "task/accuracy": score, "task/score": score,
            "task/train_accuracy": train_score, "task/loss_end": loss_end,
            "eval/mean_score": float(np.mean(history)), **start, **within,
            "train/steps": totals["steps"], "train/seconds": totals["train"],
            "metrics/overhead": totals["metrics"] / max(totals["train"], 1e-9),
        }, checkpoint=checkpoint, step=task_number)


# ----------------------------------------------------------------------------- RL stream
def rl_loop(config: PlasticityConfig, ctx: TrialContext) -> None:
    """PPO on an environment whose dynamics change every ``rl.steps_per_task`` steps."""
    import gymnasium as gym

    from raystudy.algorithms.plasticity.envs import make_env
    from raystudy.algorithms.plasticity.ppo import PPO, ActorCritic, ppo_loss

    r, m, seed = config.rl, config.metrics, config.train.seed
    torch.manual_seed(seed)
    device = ctx.device
    envs = gym.vector.SyncVectorEnv(
        [functools.partial(make_env, r.env, seed, r.scale, r.permute_obs, r.friction_low,
                           r.friction_high)] * r.ppo.num_envs,
        autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
    agent = ActorCritic(envs.single_observation_space.shape[0], envs.single_action_space,
                        config.model.hidden, layernorm=uses_layernorm(config)).to(device)
    ppo_config = r.ppo
    intervention = build_intervention(config)
    ppo = PPO(agent, envs, ppo_config, intervention, device, seed)
    history, totals = [], {"train": 0.0, "metrics": 0.0, "steps": 0}
    cadence = ctx.cadence(config.stream.tasks, eval_every=1,
                          checkpoint_every=config.train.checkpoint_every)
    state = ctx.load_checkpoint()
    if state is not None:
        agent.load_state_dict(state["model"])
        ppo.optimizer.load_state_dict(state["optimizer"])
        intervention.load_state_dict(state["intervention"])
        history, totals = state["history"], state["totals"]
    iterations = math.ceil(r.steps_per_task / ppo_config.batch_size)
    loss_fn = functools.partial(ppo_loss, config=ppo_config)

    for task_number in cadence:
        t = task_number - 1
        for env in envs.envs:
            env.set_task(t)
        torch.manual_seed(derive_seed(seed, t, 25))  # action sampling: same after a resume
        ppo.generator.manual_seed(derive_seed(seed, t, 24))
        ppo.restart(derive_seed(seed, t, 23) % 2**31)
        intervention.task_start(agent, ppo.optimizer, t)
        sample = ppo.collect(math.ceil(m.samples / r.ppo.num_envs))  # metrics only, not trained on
        start = start_of_task_metrics(config, agent, loss_fn, sample.obs, sample, t,
                                      last=t + 1 == config.stream.tasks)
        ppo.episode_returns = []
        within, spent = {}, 0.0
        started, late_from, loss = time.perf_counter(), 0, math.nan
        for i in range(iterations):
            if i == iterations - max(1, math.ceil(m.late_fraction * iterations)):
                late_from = len(ppo.episode_returns)
            loss = ppo.iterate()
            steps = (i + 1) * ppo_config.batch_size  # environment steps into the task
            if m.every_steps and i + 1 < iterations and \
                    steps // m.every_steps > i * ppo_config.batch_size // m.every_steps:
                found = within_task_metrics(config, agent, loss_fn, sample.obs, sample, t, steps)
                spent += found.pop("metrics/seconds")
                within.update(found)
        totals["train"] += time.perf_counter() - started - spent
        totals["metrics"] += start["metrics/seconds"] + spent
        totals["steps"] += iterations * ppo_config.batch_size
        returns = ppo.episode_returns
        # no episode ended in the late part: the last one, else the unfinished ones so far
        late = returns[late_from:] or returns[-1:] or ppo.running_return.tolist()
        score = float(np.mean(late))
        history.append(score)
        checkpoint = None
        if cadence.checkpoints(task_number):
            checkpoint = {"model": agent.state_dict(), "optimizer": ppo.optimizer.state_dict(),
                          "intervention": intervention.state_dict(),
                          "history": history, "totals": totals}
        ctx.report({
            "eval/late_score": late_mean(history, m.late_fraction),
            "task/index": t + 1, "task/return": score, "task/score": score,
            "task/mean_return": float(np.mean(returns)) if returns else math.nan,
            "task/episodes": len(returns), "task/loss_end": loss,
            "eval/mean_score": float(np.mean(history)), **start, **within,
            "train/steps": totals["steps"], "train/seconds": totals["train"],
            "metrics/overhead": totals["metrics"] / max(totals["train"], 1e-9),
            **{f"env/{k}": v for k, v in env_task_info(envs.envs[0]).items()},
        }, checkpoint=checkpoint, step=task_number)
    envs.close()


def env_task_info(env) -> dict[str, float]:
    """What changed in this task: the physical parameters or the friction."""
    if hasattr(env, "physics"):
        return dict(env.physics)
    return {"friction": env.friction}


# ----------------------------------------------------------------------------- report
def stream_label(flat: dict[str, Any]) -> str:
    if flat["stream.kind"] == "rl":
        return f"rl {flat['rl.env']}"
    return f"{flat['stream.kind']} {flat['stream.dataset']}"


def collect_runs(results) -> list[Run]:
    runs = []
    for trial in results.trials:
        # one row per task: a resumed trial re-reports the tasks after its last checkpoint
        last = {r["task/index"]: r for r in trial.history if "task/index" in r}
        rows = [last[t] for t in sorted(last)]
        if rows and trial.config:
            spec = str(trial.config["intervention.spec"])
            runs.append(Run(trial.trial_id, trial.status, stream_label(trial.config), spec,
                            method_of(spec), int(trial.config["train.seed"]),
                            float(trial.config["metrics.eps"]), rows))
    return runs


def _verdict(stream: str, claim: dict[str, Any]) -> list[str]:
    notes = [f"{stream}: at eps = {claim['eps']:g} (fixed before any run) the start-of-task "
             f"epsilon-rank explains R^2 = {claim['r2_fixed']:.2f} of the end-of-task score "
             f"across interventions and tasks ({claim['points']} seed-mean points, slope "
             f"{claim['slope_fixed']:+.3g}); the post-hoc best eps = {claim['best_eps']:g} "
             f"gives R^2 = {claim['r2_best']:.2f}; the relative epsilon-rank (threshold "
             f"rel_eps x |lambda|_max) gives R^2 = {claim['r2_relative']:.2f}."]
    o = claim["onsets"]
    fell = o["eps_first"] + o["same"] + o["score_first"]
    notes.append(f"{stream}: of the runs whose score and epsilon-rank both fell (by half their "
                 f"fall), the epsilon-rank fell first in {o['eps_first']}, at the same task in "
                 f"{o['same']} and later in {o['score_first']} (of {fell}); only the "
                 f"epsilon-rank fell in {o['eps_only']}, only the score in {o['score_only']}, "
                 f"neither in {o['neither']}.")
    for family, v in claim["l2er_vs_reset"].items():
        word = "at or above" if v["at_or_above_reset"] else "below"
        notes.append(f"{stream}: {family} ({v['spec']}, best strength) late score "
                     f"{v['late']:.3g} +- {v['late_std']:.2g} vs reset {v['reset']:.3g} +- "
                     f"{v['reset_std']:.2g}: {word} reset ({v['difference']:+.3g}).")
    return notes


def analyze(results, figures_dir: Path) -> Analysis:
    """Per-task curves, late performance vs reset, and the claim test, per stream."""
    runs = collect_runs(results)
    if not runs:
        return Analysis(notes=["no trial reported a finished task yet: nothing to plot"])
    streams: dict[str, dict[str, list[Run]]] = {}
    for run in runs:
        streams.setdefault(run.stream, {}).setdefault(run.spec, []).append(run)
    rows, summary, notes, figures, claim_rows = [], {"streams": {}}, [], [], []
    for stream, groups in sorted(streams.items()):
        reset = [r for rs in groups.values() for r in rs if r.method == "reset"]
        base = late_stats(reset)[0]
        summary["streams"][stream] = {"interventions": {}}
        for spec, group in sorted(groups.items(), key=lambda kv: -late_stats(kv[1])[0]):
            mean, std = late_stats(group)
            last = [r.rows[-1] for r in group]
            entry = {
                "late": mean, "late_std": std,
                "relative_to_reset": mean / base if math.isfinite(base) and base else math.nan,
                "first_task": float(np.mean([r.rows[0]["task/score"] for r in group])),
                "tasks": int(np.mean([len(r.rows) for r in group])),
                "erank_end": float(np.mean([x.get("features/erank", math.nan) for x in last])),
                "dead_end": float(np.mean([x.get("features/dead", math.nan) for x in last])),
                "eps_rank_end": float(np.nanmean([r.series("hessian/eps_rank")[1][-1]
                                                  if len(r.series("hessian/eps_rank")[1])
                                                  else math.nan for r in group])),
                "seeds": len(group),
                "not_finished": sum(r.status != "finished" for r in group)}
            summary["streams"][stream]["interventions"][spec] = entry
            rows.append([stream, spec, entry["late"], entry["late_std"],
                         entry["relative_to_reset"], entry["first_task"], entry["erank_end"],
                         entry["eps_rank_end"], entry["dead_end"], entry["tasks"],
                         entry["seeds"], entry["not_finished"]])
        if any(len(r.series("hessian/eps_rank")[0]) for rs in groups.values() for r in rs):
            claim = claim_test(groups, next(iter(groups.values()))[0].eps)  # this stream's eps
            summary["streams"][stream]["claim"] = claim
            notes += _verdict(stream, claim)
            o, v = claim["onsets"], claim["l2er_vs_reset"].get("l2_er", {})
            claim_rows.append([stream, claim["eps"], claim["r2_fixed"], claim["slope_fixed"],
                               claim["best_eps"], claim["r2_best"], claim["r2_relative"],
                               claim["points"],
                               f"{o['eps_first']}/{o['same']}/{o['score_first']}",
                               v.get("spec", "-"), v.get("difference", math.nan)])
            slug = stream.replace(" ", "_").replace("-", "_").lower()
            figures.append((f"claim test: {stream}", plot_claim(
                stream, groups, claim, figures_dir / f"claim_{slug}.png")))
    figures.insert(0, ("score per task (seed mean +- std)", plot_per_task(
        streams, [("task/score", "{score}")], figures_dir / "scores.png",
        "score per task by intervention (band: seed std)")))
    figures.insert(1, ("spectra and feature ranks per task", plot_per_task(
        streams, [("hessian/eps_rank", "Hessian epsilon-rank at task start (%)"),
                  ("features/erank", "feature effective rank (mean over layers)")],
        figures_dir / "spectra.png", "epsilon-rank (fixed eps) and feature effective rank")))
    figures.insert(2, ("late-task score relative to full reset", plot_relative(
        streams, figures_dir / "late_vs_reset.png")))
    tables = [Table("Late-task performance", [
        "stream", "intervention", "late score", "std", "/ reset", "first task", "erank (end)",
        "eps-rank (end, %)", "dead units (end)", "tasks", "seeds", "not finished"], rows,
        note="late score: mean end-of-task score over the last metrics.late_fraction of the "
             "tasks, averaged over seeds; score = accuracy (supervised) or return (RL)")]
    if claim_rows:
        tables.append(Table("Claim test", [
            "stream", "fixed eps", "R^2 (fixed eps)", "slope", "best eps (post hoc)",
            "R^2 (best eps)", "R^2 (relative eps)", "points",
            "eps-rank falls first/same/later", "best L2-ER",
            "L2-ER - reset"], claim_rows,
            note="points: seed-mean (epsilon-rank at task start, score at task end) per "
                 "intervention and measured task, reset and the first task left out"))
    return Analysis(tables=tables, figures=figures, summary=summary, notes=notes)


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
