"""The contrastive_imitation study's config: its frozen dataclasses, the method, source,
task and preset names they choose from, the baselines' published settings, and the
derived values ``validate`` checks (the reference returns, DualCOIL's settings)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from raystudy import Fraction, NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt
from raystudy.algorithms.imitation import MixSpec, ReferenceReturns, d4rl_reference, sources
from raystudy.algorithms.imitation.dualcoil import PAPER_CONSTANTS, DualCOILConfig

METHODS = ("dualcoil", "bc_good", "bc_all", "demodice", "safedice", "dwbc")
ORACLE = "bc_oracle"  # a reference, not a method: BC on the unlabeled expert episodes (hidden)
SAC = "sac"  # not an imitation method: trains the SAC expert of a MuJoCo task (--profile sac)
METHOD_CHOICES = (*METHODS, ORACLE, SAC)
DATA_SOURCES = sources.SOURCES
TASKS = tuple(sources.TASKS)
PRESETS = ("auto", "none", *PAPER_CONSTANTS)
# The baselines' published settings (no tuning here, none on the compared seeds)
DEMODICE_ALPHA = 0.05  # DemoDICE paper
DWBC_ALPHA, DWBC_ETA = 10.0, 0.5  # ryanxhr/DWBC run_dwbc.sh


@dataclass(frozen=True)
class DataConfig:
    source: Literal[DATA_SOURCES] = "generate"  # type: ignore[valid-type]
    """generate (roll the task's policies out here) | d4rl (HDF5 files) | minari (local store)."""
    task: Literal[TASKS] = "pendulum"  # type: ignore[valid-type]
    """pendulum, invertedpendulum, hopper, halfcheetah, walker2d, ant (env: sources.TASKS)."""
    mix: str = "random/1/10/30"
    """SOURCE/GOOD/BAD/UNLABELED_EXPERT[/UNLABELED_BAD]: expert episodes and undesirable
    trajectories per set."""
    bad_unit: Literal["slice", "episode"] = "slice"
    """An undesirable trajectory: slice (data.slice_length consecutive transitions, as the
    authors' code) | episode (one whole episode)."""
    slice_length: PositiveInt = 1000
    """Transitions per undesirable slice (the authors' 1000)."""
    overlap: bool = True
    """Good/bad episodes are also the first unlabeled ones, as in the public code."""
    root: str = ""
    """d4rl: folder of D4RL's files, {task}_{expert,random,medium}-v2.hdf5."""
    expert: str = ""
    """Expert episodes: a file (d4rl) or Minari id; '' = derived from task."""
    random: str = ""
    """Random episodes: a file (d4rl) or Minari id; '' = derived from task."""
    medium: str = ""
    """Medium episodes: a file (d4rl) or Minari id; '' = derived from task."""
    reference: tuple[float, ...] = ()
    """RANDOM,EXPERT returns for the normalised score; () = from the data."""
    cache_dir: str = "~/.cache/raystudy/contrastive_imitation"
    """generate: where the generated episodes are written once and reused."""
    expert_episodes: PositiveInt = 40
    """generate: expert episodes rolled out."""
    random_episodes: PositiveInt = 1000
    """generate: random episodes (the whole random source, as D4RL's 1M-step files)."""
    medium_episodes: PositiveInt = 1000
    """generate: medium episodes."""
    expert_dir: str = ""
    """generate on MuJoCo tasks: folder with the SAC trainer's expert.pt and medium.pt."""
    reference_episodes: PositiveInt = 100
    """generate: episodes of the random and expert policy for the reference returns."""
    state_norm: bool = True
    """Normalise states by the unlabeled set's mean/std (overridden by dualcoil.preset)."""


@dataclass(frozen=True)
class DualCOILParams:
    preset: Literal[PRESETS] = "none"  # type: ignore[valid-type]
    """auto (paper constants for task + mix source), a PAPER_CONSTANTS key, or none."""
    alpha: float = 0.6
    """Repulsion from the bad data, in [0, 1)."""
    c: float = 3.0
    """Weight scale: good +c, bad -c alpha."""
    beta: float = 20.0
    """Gumbel value-loss temperature."""
    actor_q_scale: float = 2.0
    """Actor weights exp(actor_q_scale / beta * Q)."""
    weight_decay: float = 0.01
    """L2 of the actor's and discriminators' Adam."""
    tau: float = 0.005
    """Target critic step."""
    extraction: Literal["q", "advantage"] = "q"
    """q (the paper's Q-weighted BC) | advantage (the public code's optional variant)."""


@dataclass(frozen=True)
class BaselineParams:
    demodice_alpha: NonNegativeFloat = DEMODICE_ALPHA
    """DemoDICE's KL(d || d_U) weight (its paper's 0.05)."""
    safedice_alpha: Fraction | None = None
    """SafeDICE's share of bad data in the unlabeled set; None: the composed set's share
    of undesirable transitions (as its paper)."""
    dwbc_alpha: float = DWBC_ALPHA
    """DWBC's plain-BC weight (its authors' run_dwbc.sh: 10)."""
    dwbc_eta: Fraction = DWBC_ETA
    """DWBC's positive-unlabeled prior (its authors' run_dwbc.sh: 0.5)."""


@dataclass(frozen=True)
class TrainConfig:
    steps: PositiveInt = 6000
    """Gradient steps after the discriminator pre-training."""
    disc_steps: NonNegativeInt = 1000
    """Discriminator-only steps (DualCOIL, DemoDICE, SafeDICE)."""
    batch_size: PositiveInt = 256
    """Transitions per source per step (the paper's 1024)."""
    hidden: PositiveInt = 128
    """Width of the hidden layers of every network (the paper's 256)."""
    layers: PositiveInt = 2
    """Hidden layers of every network."""
    lr: PositiveFloat = 3e-4
    """Learning rate of every network."""
    gamma: Fraction = 0.99
    """Discount."""
    eval_every: PositiveInt = 500
    """Gradient steps between evaluations (and at the end)."""
    eval_episodes: PositiveInt = 10
    """Deterministic evaluation episodes per evaluation."""
    seed: int = 0
    """Seed of the networks and the minibatches."""
    threads: PositiveInt = 1
    """torch CPU threads per trial."""
    checkpoint_every: NonNegativeInt = 0
    """Evaluations between checkpoints (0: only the last step's)."""


@dataclass(frozen=True)
class ContrastiveImitationConfig:
    method: Literal[METHOD_CHOICES] = "dualcoil"  # type: ignore[valid-type]
    """dualcoil | bc_good | bc_all | demodice | safedice | dwbc, or bc_oracle (a reference:
    BC on the hidden-label expert episodes) | sac (trains a MuJoCo task's SAC expert)."""
    data: DataConfig = field(default_factory=DataConfig)
    dualcoil: DualCOILParams = field(default_factory=DualCOILParams)
    baselines: BaselineParams = field(default_factory=BaselineParams)
    train: TrainConfig = field(default_factory=TrainConfig)

    def validate(self) -> None:
        """Rules across fields (each field's own bounds and choices are declared on it)."""
        d = self.data
        if self.method == SAC and d4rl_reference(d.task) is None:
            raise ValueError(f"method=sac trains MuJoCo experts; data.task={d.task!r} is not "
                             "one of hopper, halfcheetah, walker2d, ant")
        try:
            MixSpec.parse(d.mix)
            dualcoil_settings(self)
        except ValueError as exc:
            raise ValueError(f"{'data.mix' if 'mix' in str(exc) else 'dualcoil'}: {exc}") from None
        if d.reference:
            reference_returns(d.reference)
        if (self.method == "safedice" and self.baselines.safedice_alpha is None
                and MixSpec.parse(d.mix).unlabeled_expert == 0):
            raise ValueError(f"data.mix={d.mix}: SafeDICE needs expert data in the unlabeled "
                             "set (its alpha, the undesirable share, would be 1)")


# ----------------------------------------------------------------------------- derived
def reference_returns(values: tuple[float, ...]) -> ReferenceReturns:
    """``data.reference`` (RANDOM,EXPERT) as the score's 0 and 100."""
    try:
        low, high = values
        return ReferenceReturns(low, high, source="data.reference")
    except ValueError as exc:
        text = ",".join(f"{v:g}" for v in values)
        raise ValueError(f"data.reference={text!r}: expected 'RANDOM,EXPERT' returns "
                         f"({exc})") from None


def dualcoil_settings(config: ContrastiveImitationConfig) -> tuple[DualCOILConfig, bool]:
    """DualCOIL's constants and state normalisation (derived: preset or the fields)."""
    p, t = config.dualcoil, config.train
    preset = p.preset
    if preset == "auto":
        preset = f"{config.data.task}-{MixSpec.parse(config.data.mix).bad_source}"
        preset = preset if preset in PAPER_CONSTANTS else "none"
    if preset == "none":
        values = (p.weight_decay, p.actor_q_scale, p.beta, p.c, p.alpha, p.tau,
                  config.data.state_norm)
    else:
        values = PAPER_CONSTANTS[preset]
    wd, q_scale, beta, c, alpha, tau, norm = values
    return DualCOILConfig(alpha=alpha, c=c, beta=beta, actor_q_scale=q_scale, gamma=t.gamma,
                          tau=tau, lr=t.lr, weight_decay=wd, hidden=(t.hidden,) * t.layers,
                          pretrain_steps=t.disc_steps, extraction=p.extraction), norm
