"""The uniform_diffusion study's config: frozen dataclasses (their defaults are the quick
profile) and the names of the losses, masks and regularisers a trial can take."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Literal

from raystudy import NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt, Range

LOSSES = ("nelbo", "simple", "simple_reg")
"""nelbo: the UDLM continuous-time NELBO (the baseline); simple: CE of the clean token on
noise-replaced positions; simple_reg: simple plus the regulariser against uniform output
(both raystudy's reading of Zhu et al.)."""
SOURCES = ("markov", "stdlib", "tokens")


@dataclass(frozen=True)
class DataConfig:
    source: Literal[SOURCES] = "markov"  # type: ignore[valid-type]
    """markov (a generated Markov chain with an exact likelihood) | stdlib (bytes of
    Python's own library, V = 256) | tokens (a train.npy/val.npy token folder)."""
    vocab_size: Annotated[int, Range(ge=2)] = 32
    """markov: V (stdlib: 256; tokens: the largest id + 1 unless set larger)."""
    seq_len: PositiveInt = 32
    """Sequence length L."""
    order: Annotated[int, Range(ge=1, le=2)] = 1
    """markov: the chain's order."""
    concentration: PositiveFloat = 0.1
    """markov: Dirichlet concentration of each transition row (small = peaked rows)."""
    data_seed: int = 0
    """markov: the chain (fixed across trials, so every trial learns the same data)."""
    path: str = ""
    """tokens: the folder with train.npy and val.npy (``raystudy data make-tokens``)."""
    max_bytes: PositiveInt = 2_000_000
    """stdlib: bytes read."""


@dataclass(frozen=True)
class ModelConfig:
    d_model: PositiveInt = 64
    """Residual width of the bidirectional Denoiser."""
    n_layers: PositiveInt = 2
    """adaLN transformer blocks."""
    n_heads: PositiveInt = 4
    """Attention heads."""


@dataclass(frozen=True)
class LossConfig:
    name: Literal[LOSSES] = "simple"  # type: ignore[valid-type]
    """nelbo | simple | simple_reg."""
    mask: Literal["changed", "moved"] = "changed"
    """simple: the noise-replaced tokens (raystudy's reading): changed (z != x) | moved
    (the forward process's replacement draw, which may land on x)."""
    weight: Literal["none", "elbo"] = "none"
    """simple: per-token weight: none | elbo (-alpha'/(1 - alpha))."""
    normalize: Literal["masked", "all"] = "masked"
    """simple: divide by the masked tokens' count | by B L."""
    reg: Literal["mean_logp", "entropy", "neg_sample"] = "mean_logp"
    """simple_reg: the regulariser's form (raystudy's reading; chosen by spaces/reg.yaml)."""
    reg_weight: NonNegativeFloat = 0.01
    """simple_reg: its weight (chosen on selection seeds 100-102 by spaces/reg.yaml)."""
    n_neg: PositiveInt = 1
    """simple_reg with neg_sample: uniform draws per position."""
    reg_selection: str = ""
    """Where reg and reg_weight were chosen (a spaces/reg.yaml run), recorded for U2's
    precondition when the run itself has no selection seeds."""


@dataclass(frozen=True)
class TrainConfig:
    steps: PositiveInt = 800
    """Optimizer steps."""
    batch_size: PositiveInt = 64
    """Sequences per step."""
    lr: PositiveFloat = 3e-3
    """AdamW learning rate (after the warm-up)."""
    warmup: NonNegativeInt = 50
    """Linear warm-up steps."""
    ema: Annotated[float, Range(ge=0.0, lt=1.0)] = 0.0
    """EMA decay of the weights evaluated (0: none; Duo: 0.9999)."""
    t_min: Annotated[float, Range(gt=0.0, lt=1.0)] = 1e-3
    """Smallest training time (Duo's sampling_eps)."""
    seed: int = 0
    """Seed of the model, the batches and the noise."""
    eval_every: NonNegativeInt = 400
    """Steps between evaluations (and the last)."""
    checkpoint_every: NonNegativeInt = 1
    """Evaluations between checkpoints (0: only the last)."""
    threads: PositiveInt = 1
    """torch threads per trial."""


@dataclass(frozen=True)
class EvalConfig:
    n_samples: PositiveInt = 256
    """Samples drawn per step count S."""
    sample_steps: tuple[int, ...] = (8, 32)
    """Step counts S of the ancestral sampler (Gen NLL at S = 32 is the claims' metric)."""
    noise_removal: Literal["ancestral", "greedy", "none"] = "ancestral"
    """The sampler's last step (Duo's default: ancestral)."""
    nelbo_t_grid: PositiveInt = 16
    """Times of the validation NELBO's midpoint grid (common noise across trials)."""
    val_sequences: PositiveInt = 256
    """Validation sequences of the NELBO."""
    timing_repeats: PositiveInt = 5
    """Repeats of each loss's forward + backward on the same batch (median reported)."""
    ar_evaluator: str = ""
    """Text data: an AR evaluator file (``raystudy data train-ar-evaluator``); samples are
    then scored by their Gen PPL under it (``eval/gen_ppl_ar@S``), in place of GPT-2 Large."""


@dataclass(frozen=True)
class UniformDiffusionConfig:
    data: DataConfig = field(default_factory=DataConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    loss: LossConfig = field(default_factory=LossConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)

    def validate(self) -> None:
        if self.model.d_model % self.model.n_heads:
            raise ValueError(f"model.d_model ({self.model.d_model}) must be a multiple of "
                             f"model.n_heads ({self.model.n_heads})")
        if not self.eval.sample_steps or min(self.eval.sample_steps) < 1:
            raise ValueError(f"eval.sample_steps must be step counts >= 1, got "
                             f"{self.eval.sample_steps}")
        if self.data.source == "stdlib" and self.data.vocab_size != 256:
            raise ValueError("data.source=stdlib reads bytes: set data.vocab_size=256")
