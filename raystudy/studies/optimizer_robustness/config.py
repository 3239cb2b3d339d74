"""The optimizer_robustness study's config: its frozen dataclasses (model, data, optimizer,
training), imported by the recipe."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Literal

from raystudy import (
    Fraction,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    Range,
)
from raystudy.algorithms.optim import OPTIMIZER_NAMES


@dataclass(frozen=True)
class ModelConfig:
    vocab_size: Annotated[int, Range(ge=2)] = 256
    """Token ids: 256 for the byte-level sources; the tokenizer's size for token files."""
    d_model: PositiveInt = 64
    """Residual width of the GPT."""
    n_layers: PositiveInt = 2
    """Transformer blocks."""
    n_heads: PositiveInt = 4
    """Attention heads."""
    seq_len: PositiveInt = 64
    """Context length in tokens."""


@dataclass(frozen=True)
class DataConfig:
    source: str = "stdlib"
    """'stdlib' (Python's own sources), a folder of text files, or 'tokens' (see path)."""
    path: str = ""
    """With source=tokens: folder (local, NFS or s3://) holding train.npy and val.npy."""
    max_bytes: PositiveInt = 1_000_000
    """Bytes of text read for the in-memory sources."""
    val_fraction: Fraction = 0.1
    """Tail of the corpus held out for validation."""


@dataclass(frozen=True)
class OptimizerConfig:
    name: Literal[OPTIMIZER_NAMES] = "adamw"  # type: ignore[valid-type]
    """One of raystudy.algorithms.optim.OPTIMIZER_NAMES."""
    lr: PositiveFloat = 1e-3
    """Learning rate (the swept quantity)."""
    weight_decay: NonNegativeFloat = 0.0
    """Decoupled weight decay."""
    f_star: float = 0.0
    """Momo variants: lower bound F* on the loss."""


@dataclass(frozen=True)
class TrainConfig:
    steps: PositiveInt = 120
    """Optimizer steps per trial."""
    batch_size: PositiveInt = 16
    """Sequences per step (per worker with --workers)."""
    eval_every: PositiveInt = 40
    """Steps between validation reports."""
    eval_batches: PositiveInt = 4
    """Validation batches per evaluation (a fixed set for every trial)."""
    seed: int = 0
    """Seed of model init and data order."""
    checkpoint_every: NonNegativeInt = 0
    """Evaluations between checkpoints (0: only the last step's)."""
    threads: PositiveInt = 1
    """torch CPU threads per trial (concurrent trials share the cores)."""
    precision: Literal["auto", "fp32", "bf16"] = "auto"
    """auto (bf16 autocast on CUDA, fp32 on CPU, where bf16 is ~14x slower) | fp32 | bf16."""


@dataclass(frozen=True)
class OptimizerRobustnessConfig:
    model: ModelConfig = field(default_factory=ModelConfig)
    data: DataConfig = field(default_factory=DataConfig)
    optimizer: OptimizerConfig = field(default_factory=OptimizerConfig)
    train: TrainConfig = field(default_factory=TrainConfig)

    def validate(self) -> None:
        """Rules across fields (each field's own bounds are declared on it)."""
        if self.model.d_model % self.model.n_heads:
            raise ValueError("model.d_model must be divisible by model.n_heads")
        if self.data.source == "tokens" and not self.data.path:
            raise ValueError("data.source=tokens needs data.path (folder with train.npy)")
