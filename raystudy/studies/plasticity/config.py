"""The plasticity study's config: its frozen dataclasses, the stream and environment name
lists, and the rules across fields ``validate`` checks (PPO's bounds, the intervention spec)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Literal

from raystudy import NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt, Range
from raystudy.algorithms.plasticity.data import DATASETS
from raystudy.algorithms.plasticity.ppo import PPOConfig
from raystudy.algorithms.plasticity.streams import STREAMS
from raystudy.studies.plasticity.interventions import build_intervention

STREAM_KINDS = (*STREAMS, "rl")
RL_ENVS = ("CartPole-v1", "Acrobot-v1", "Ant-v5")


@dataclass(frozen=True)
class StreamConfig:
    kind: Literal[STREAM_KINDS] = "random_labels"  # type: ignore[valid-type]
    """permuted | random_labels | incremental (supervised) | rl (changing dynamics, PPO)."""
    dataset: Literal[DATASETS] = "digits"  # type: ignore[valid-type]
    """digits (sklearn, offline) | mnist | cifar10 | cifar100 (local files in stream.path)."""
    path: str = ""
    """Folder with the dataset files (mnist, cifar10, cifar100); see check_data."""
    tasks: PositiveInt = 60
    """Tasks in the stream (incremental: at most classes / classes_per_task)."""
    examples: NonNegativeInt = 512
    """random_labels: images memorised per task; permuted: training images per task (0: all)."""
    classes_per_task: PositiveInt = 2
    """incremental: classes added per task."""


@dataclass(frozen=True)
class ModelConfig:
    arch: Literal["mlp", "convnet"] = "mlp"
    """mlp | convnet (Dohare et al.'s ConvNet, 32x32 images)."""
    hidden: tuple[PositiveInt, ...] = (256, 256)
    """MLP hidden widths (the issue's 64-256-256-10 on digits); PPO actor and critic too."""


@dataclass(frozen=True)
class TrainConfig:
    optimizer: Literal["adam", "sgd"] = "adam"
    """adam | sgd (supervised streams)."""
    lr: PositiveFloat = 1e-3
    """Learning rate of the supervised streams."""
    batch_size: PositiveInt = 32
    """Minibatch size."""
    steps_per_task: PositiveInt = 200
    """Optimizer steps per supervised task."""
    seed: int = 0
    """Seed of the model init, the stream's tasks and the minibatch order."""
    threads: PositiveInt = 1
    """torch CPU threads per trial (concurrent trials share the cores)."""
    checkpoint_every: NonNegativeInt = 20
    """Tasks between checkpoints (0: none; the last task always checkpoints)."""


@dataclass(frozen=True)
class InterventionConfig:
    spec: str = "none"
    """method[/numbers] (+ more): none, reset, layernorm, l2/lam, l2_init/lam,
    shrink_perturb/shrink/sigma, redo/tau, er/er_lr, l2_er/lam/er_lr, er_penalty/beta,
    l2_er_penalty/lam/beta (see interventions.py)."""
    er_every: PositiveInt = 100
    """ER ascent: one step every er_every minibatches, on their concatenation (lop-jax)."""
    redo_every: PositiveInt = 100
    """ReDo: steps between dormant-unit resets."""
    redo_batch: PositiveInt = 256
    """ReDo: inputs drawn from the task's data to score dormancy on at each reset (a batch
    of its own, not the training minibatch; RL: from the latest rollout)."""


@dataclass(frozen=True)
class MetricsConfig:
    samples: PositiveInt = 256
    """Samples of the new task's training data for the start-of-task metrics (paper: 2000)."""
    hessian_every: NonNegativeInt = 10
    """Tasks between Hessian measurements, from task 1 (0: never)."""
    every_steps: NonNegativeInt = 0
    """Also measure inside each task every K training steps (RL: environment steps), on
    the same sample: reported with the task as within/step{s}/... (0: task starts only)."""
    hessian_within: bool = False
    """With every_steps: the Hessian (epsilon-rank, lambda_1) at those steps too."""
    lanczos_iterations: PositiveInt = 30
    """Lanczos steps per probe (the authors: 100)."""
    probes: PositiveInt = 1
    """SLQ probe vectors (the authors: 1)."""
    sigma2: PositiveFloat = 1e-5
    """Gaussian kernel variance factor of the density (the authors' 1e-5)."""
    top_k: PositiveInt = 5
    """Top Hessian eigenvalues reported."""
    eps: NonNegativeFloat = 0.02
    """Fixed epsilon, chosen before any run: the authors' Permuted-MNIST value."""
    rel_eps: NonNegativeFloat = 1e-3
    """Relative epsilon-rank threshold, as a fraction of |lambda|_max."""
    dormant_tau: float = 0.025
    """ReDo score threshold of a dormant unit (Sokar et al.)."""
    late_fraction: Annotated[float, Range(gt=0, le=1)] = 0.25
    """Late-task performance: mean over the last late_fraction of the tasks so far."""


@dataclass(frozen=True)
class RLConfig:
    env: Literal[RL_ENVS] = "CartPole-v1"  # type: ignore[valid-type]
    """CartPole-v1 | Acrobot-v1 (physics + observation order change per task) | Ant-v5."""
    steps_per_task: PositiveInt = 20_000
    """Environment steps per task (Slippery Ant: 2M)."""
    scale: Annotated[float, Range(ge=1)] = 2.0
    """Classic control: each physical parameter times a log-uniform factor in [1/s, s]."""
    permute_obs: bool = True
    """Classic control: a new observation permutation per task."""
    friction_low: PositiveFloat = 0.02
    """Slippery Ant: lower end of the log-uniform friction range."""
    friction_high: float = 2.0
    """Slippery Ant: upper end of the log-uniform friction range."""
    ppo: PPOConfig = field(default_factory=PPOConfig)
    """PPO's hyperparameters (defaults: CleanRL's for CartPole)."""


PPO_BOUNDS = {"num_envs": Range(ge=1), "num_steps": Range(ge=1), "update_epochs": Range(ge=1),
              "num_minibatches": Range(ge=1), "lr": Range(gt=0)}
"""rl.ppo is the algorithms' PPOConfig, which cannot name the config layer's bounds:
``validate`` checks these (same messages)."""


@dataclass(frozen=True)
class PlasticityConfig:
    stream: StreamConfig = field(default_factory=StreamConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    intervention: InterventionConfig = field(default_factory=InterventionConfig)
    metrics: MetricsConfig = field(default_factory=MetricsConfig)
    rl: RLConfig = field(default_factory=RLConfig)

    def validate(self) -> None:
        """Rules across fields (each field's own bounds and choices are declared on it)."""
        s, r = self.stream, self.rl
        if s.dataset != "digits" and s.kind != "rl" and not s.path:
            raise ValueError(f"stream.dataset={s.dataset} needs stream.path (its local files)")
        if self.model.arch == "convnet" and not s.dataset.startswith("cifar"):
            raise ValueError("model.arch=convnet needs stream.dataset=cifar10 or cifar100")
        if not self.model.hidden:
            raise ValueError("model.hidden needs at least one width")
        for name, bound in PPO_BOUNDS.items():
            bound.check(f"rl.ppo.{name}", getattr(r.ppo, name))
        if r.friction_high < r.friction_low:
            raise ValueError("rl.friction_high must be >= rl.friction_low")
        if r.ppo.minibatch_size < 1:
            raise ValueError("rl.ppo.num_minibatches must be <= num_envs x num_steps")
        try:
            build_intervention(self)  # each piece checks its own numbers
        except ValueError as exc:
            prefix = f"intervention.spec={self.intervention.spec!r}"
            message = str(exc)
            raise ValueError(message if message.startswith(prefix)
                             else f"{prefix}: {message}") from None
