"""The temporal_pretraining study's config: its frozen dataclasses (world, data, model,
training) and the rules across them that ``validate`` checks."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Literal

from raystudy import NonNegativeInt, PositiveFloat, PositiveInt, Range
from raystudy.algorithms.temporal import parse

Share = Annotated[float, Range(ge=0, le=1)]
"""A share or probability in [0, 1] (0 and 1 allowed)."""


# ----------------------------------------------------------------------------- config
@dataclass(frozen=True)
class WorldConfig:
    entities: PositiveInt = 16
    """E: entities (pseudo-word names)."""
    relations: PositiveInt = 2
    """R: time-varying relations (at most 8)."""
    first_year: int = 2020
    """The first snapshot's year."""
    years: PositiveInt = 6
    """T: yearly snapshots (>= 3)."""
    values: PositiveInt = 12
    """V: value names per relation."""
    p_change: Share = 0.6
    """Probability that a fact's value changes from one year to the next."""
    zipf: float = 0.0
    """Popularity exponent of entity mentions (0: uniform)."""


@dataclass(frozen=True)
class DataConfig:
    source: Literal["world", "tokens"] = "world"
    """world (generated snapshots) | tokens (data.path/YEAR/train.npy and val.npy)."""
    path: str = ""
    """tokens: folder of per-year token files (rows of seq_len + 1 byte ids)."""
    kairosqa: str = ""
    """A local KairosQA .jsonl, scored with the kairos prompts at every boundary ('' none)."""
    k_shot: NonNegativeInt = 5
    """kairosqa: shots per year (the kairos default 5)."""
    fact_share: Share = 0.6
    """Share of statements about time-varying facts."""
    hist_share: Share = 0.2
    """Share of those that restate an earlier year (the "factual repetition" knob)."""
    dated_share: Share = 0.7
    """Share of current statements that carry the year."""
    decay: Share = 0.7
    """Weight decay^(t - s) of a historical statement about year s in snapshot t."""
    invariant_share: Share = 0.15
    """Share of time-invariant statements ("Kelvor is in Ostra.")."""
    filler_bytes: PositiveInt = 400_000
    """Bytes of general text (Python's stdlib sources) behind the filler."""
    val_rows: PositiveInt = 128
    """Held-out filler rows for the general-text validation loss."""


@dataclass(frozen=True)
class ModelConfig:
    d_model: PositiveInt = 64
    """Residual width."""
    n_layers: PositiveInt = 2
    """Transformer blocks."""
    n_heads: PositiveInt = 4
    """Attention heads."""
    seq_len: PositiveInt = 64
    """Context length in bytes."""


@dataclass(frozen=True)
class TrainConfig:
    schedule: str = "sequential"
    """sequential | shuffled | reverse | shuffled_upto/T (year index) | replay/RHO."""
    steps_per_year: PositiveInt = 200
    """Optimizer steps per snapshot (one pass over its rows)."""
    batch_size: PositiveInt = 16
    """Rows per step."""
    lr: PositiveFloat = 3e-3
    """AdamW peak learning rate."""
    weight_decay: float = 0.1
    """AdamW decoupled weight decay."""
    warmup: NonNegativeInt = 50
    """Linear warmup steps."""
    cooldown: Share = 0.1
    """Final share of steps with a linear cooldown to 0 (WSD, the same for all schedules)."""
    seed: int = 0
    """Seed of the world, the snapshots, the row order and the init (paired over)."""
    threads: PositiveInt = 1
    """torch CPU threads per trial."""


@dataclass(frozen=True)
class TemporalConfig:
    world: WorldConfig = field(default_factory=WorldConfig)
    data: DataConfig = field(default_factory=DataConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)

    def validate(self) -> None:
        parse(self.train.schedule)
        if self.model.d_model % self.model.n_heads:
            raise ValueError("model.d_model must be divisible by model.n_heads")
        if self.world.years < 3:
            raise ValueError("world.years must be >= 3 (KairosQA keeps facts with >= 3 values)")
        if self.data.fact_share + self.data.invariant_share > 1:
            raise ValueError("data.fact_share + data.invariant_share must be <= 1")
        if self.data.source == "tokens" and not self.data.path:
            raise ValueError("data.source=tokens needs data.path (folder of YEAR/train.npy)")
