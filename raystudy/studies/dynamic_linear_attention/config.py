"""The dynamic_linear_attention study's config: frozen dataclasses (their defaults are the
quick profile), the tasks, and the state budget's resolution (``capacity_of``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Literal

from raystudy import NonNegativeInt, PositiveFloat, PositiveInt, Range
from raystudy.algorithms.linear_attention import SCORES, loglinear_levels
from raystudy.algorithms.models.mixer_lm import MIXERS

TASKS = ("recall", "mechanism")
"""recall: a MixerLM trained on (sparse) MQAR on the cadence; mechanism: training-free,
every policy on generated piecewise and needle streams in one trial."""
DATA_KINDS = ("mqar_sparse", "mqar")
BUDGETS = ("levels", "2x_levels")
"""levels: K = loglinear_levels(T) = ceil(log2 T) + 1, Log-Linear's count at T, for every
bounded policy (the equal budget); 2x_levels: twice that (the note's K = 30 vs 15)."""


@dataclass(frozen=True)
class DataConfig:
    kind: Literal[DATA_KINDS] = "mqar_sparse"  # type: ignore[valid-type]
    """mqar_sparse (key-value bigrams in stable filler runs: uneven information density) |
    mqar (Zoology's multi-query associative recall)."""
    seq_len: Annotated[int, Range(ge=8)] = 64
    """T, the sequence length."""
    vocab_size: Annotated[int, Range(ge=4)] = 24
    """V. mqar_sparse: filler ids, then (V - filler_vocab) // 2 keys, then values."""
    num_kv_pairs: PositiveInt = 4
    """P, key-value pairs per sequence (each asked once)."""
    filler_vocab: PositiveInt = 8
    """mqar_sparse: filler ids."""
    filler_run_mean: Annotated[float, Range(ge=1.0)] = 8.0
    """mqar_sparse: mean length of a filler run (geometric)."""
    power_a: PositiveFloat = 0.01
    """mqar: the power law of the query gaps (Zoology's default)."""
    test_size: PositiveInt = 256
    """Test sequences: one set per (T, data_seed), shared by every mixer and model seed."""
    data_seed: int = 0
    """The test set's seed."""


@dataclass(frozen=True)
class ModelConfig:
    mixer: Literal[MIXERS] = "dla"  # type: ignore[valid-type]
    """softmax (the reference) | linear | fixed_chunk | fifo | loglinear | dla | dla_tau0."""
    d_model: PositiveInt = 64
    """Residual width."""
    n_layers: PositiveInt = 1
    """Blocks of [mixer, MLP] (quick: 1; at 2, dla took 150 s per trial and loglinear learned
    slower)."""
    n_heads: PositiveInt = 4
    """Heads per mixer (d_head = d_model / n_heads; 16 makes the state budget bind)."""
    short_conv: NonNegativeInt = 4
    """Width of the multi-state mixers' causal short convolution (0: none)."""


@dataclass(frozen=True)
class DLAConfig:
    tau: Annotated[float, Range(ge=0.0)] = 0.1
    """DLA's boundary threshold: I_t >= tau opens a state (recall; chosen on seeds
    100-102 by spaces/tau.yaml)."""
    score: Literal[SCORES] = "state_drift"  # type: ignore[valid-type]
    """state_drift (the paper note's I_t) | token_vs_state (the proof of concept's)."""
    capacity: Annotated[int, Range(ge=1)] | Literal[BUDGETS] = "levels"  # type: ignore[valid-type]
    """K for every bounded policy: levels (loglinear_levels(T), the equal budget) |
    2x_levels | an integer >= 1."""
    tau_selection: str = ""
    """Where tau and score were chosen (a spaces/tau.yaml run), recorded for the report."""


@dataclass(frozen=True)
class TrainConfig:
    steps: PositiveInt = 800
    """AdamW steps, each on a fresh generated batch."""
    batch_size: PositiveInt = 32
    """Sequences per step."""
    lr: PositiveFloat = 3e-3
    """Peak learning rate."""
    warmup: NonNegativeInt = 30
    """Linear warm-up steps."""
    weight_decay: Annotated[float, Range(ge=0.0)] = 0.0
    """AdamW weight decay."""
    seed: int = 0
    """The model's initialisation and its batches (recall); the mechanism's claim streams
    are 0 .. mechanism.streams - 1 whatever this is."""
    eval_every: NonNegativeInt = 200
    """Steps between evaluations on the test set (and the last)."""
    checkpoint_every: NonNegativeInt = 1
    """Evaluations between checkpoints (0: only the last)."""
    threads: PositiveInt = 1
    """torch threads per trial."""


@dataclass(frozen=True)
class MechanismConfig:
    length: Annotated[int, Range(ge=16)] = 256
    """T of every generated stream; K = dla.capacity resolved at this T."""
    dk: Annotated[int, Range(ge=2)] = 16
    """Key dimension of the streams."""
    dv: PositiveInt = 16
    """Value dimension of the streams."""
    segments: Annotated[int, Range(ge=2)] = 6
    """Piecewise streams: segments (change points at uniform random places)."""
    noise: Annotated[float, Range(ge=0.0)] = 0.05
    """Piecewise streams: Gaussian noise per coordinate of k and v."""
    theme_noise: Annotated[float, Range(ge=0.0)] = 0.1
    """Needle streams: the filler's noise around its theme."""
    loads: tuple[float, ...] = (0.25, 0.5, 1.0, 1.5)
    """Needle loads (needles / K); D4 reads the loads <= 0.5."""
    streams: Annotated[int, Range(ge=1)] = 8
    """Claim streams per family (seeds 0 .. streams - 1: D3 and D4's paired unit)."""
    taus: tuple[float, ...] = (0.05, 0.1, 0.2, 0.4, 0.8, 1.2)
    """DLA's tau candidates, chosen per score on selection streams 100-102 (piecewise: the
    least mean bound; needles: the best mean recall) and frozen for the claim streams."""
    tol: NonNegativeInt = 1
    """Boundary F1: a predicted boundary matches a change point within tol tokens."""


@dataclass(frozen=True)
class DynamicLinearAttentionConfig:
    task: Literal[TASKS] = "recall"  # type: ignore[valid-type]
    """recall (train a MixerLM on MQAR) | mechanism (training-free streams)."""
    data: DataConfig = field(default_factory=DataConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    dla: DLAConfig = field(default_factory=DLAConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    mechanism: MechanismConfig = field(default_factory=MechanismConfig)

    def validate(self) -> None:
        d, m = self.data, self.model
        if m.d_model % m.n_heads:
            raise ValueError(f"model.d_model ({m.d_model}) must be a multiple of "
                             f"model.n_heads ({m.n_heads})")
        if 4 * d.num_kv_pairs > d.seq_len:
            raise ValueError(f"data.seq_len ({d.seq_len}) must be >= 4 x data.num_kv_pairs "
                             f"({d.num_kv_pairs}): room for the pairs and their queries")
        values = (d.vocab_size - d.filler_vocab) // 2 if d.kind == "mqar_sparse" else (
            d.vocab_size // 2 - 1)
        if values < d.num_kv_pairs:
            raise ValueError(f"data.vocab_size ({d.vocab_size}) leaves {values} keys for "
                             f"data.num_kv_pairs ({d.num_kv_pairs}) distinct pairs"
                             + (f" after data.filler_vocab ({d.filler_vocab})"
                                if d.kind == "mqar_sparse" else ""))
        mech = self.mechanism
        if not mech.loads or min(mech.loads) <= 0:
            raise ValueError(f"mechanism.loads must be loads > 0, got {mech.loads}")
        if not mech.taus or min(mech.taus) < 0:
            raise ValueError(f"mechanism.taus must be thresholds >= 0, got {mech.taus}")
        if mech.segments > mech.length // 4:
            raise ValueError(f"mechanism.segments ({mech.segments}) must be <= "
                             f"mechanism.length // 4 ({mech.length // 4})")
        K = capacity_of(self.dla.capacity, mech.length)
        if self.task == "mechanism" and max(1, round(max(mech.loads) * K)) > mech.length // 2:
            raise ValueError(f"mechanism.loads up to {max(mech.loads)} x K = {K} needles do "
                             f"not fit mechanism.length ({mech.length}) with filler between")


def capacity_of(capacity: int | str, T: int) -> int:
    """The state budget K at length T: ``levels`` = loglinear_levels(T), ``2x_levels`` = twice
    that, an integer as given."""
    if capacity == "levels":
        return loglinear_levels(T)
    if capacity == "2x_levels":
        return 2 * loglinear_levels(T)
    return int(capacity)
