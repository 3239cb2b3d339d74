"""The speculative_decoding study's config: frozen dataclasses (their defaults are the quick
profile's), the draft kinds a trial can run and the category renames of the file source."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from raystudy import (
    ConfigError,
    Fraction,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
)

DRAFT_KINDS = ("gpt", "ngram")
"""gpt: a small GPT trained here (model.source=trained) or the model.draft checkpoint
(model.source=hf); ngram: the add-k byte n-gram fitted on the training bytes."""
RANDOM = "random"
"""The domain of uniform random-token prompts (raystudy's reading of "random-token")."""
SUBSETS = ("diverse", "random", "near_duplicate")
"""S3's subset rules: select_diverse (farthest-point, raystudy's reading of the Qualitative
selection), uniform without replacement, and the nearest neighbours of one seeded prompt."""


@dataclass(frozen=True)
class ModelConfig:
    source: Literal["trained", "hf"] = "trained"
    """trained (byte-level GPTs trained in the trial, cached per seed) | hf (the local Hugging
    Face checkpoints model.target and model.draft, with the target's tokenizer)."""
    target: str = ""
    """hf: the target's checkpoint folder (config.json and weights; nothing is downloaded)."""
    draft: str = ""
    """hf: the draft's checkpoint folder (the same vocabulary as the target's)."""
    dtype: Literal["float32", "bfloat16", "float16"] = "float32"
    """hf: the weights' dtype."""
    seq_len: PositiveInt = 128
    """trained: the context of both GPTs (longer histories are cropped to it)."""
    d_model: PositiveInt = 96
    """trained: the target's width."""
    n_layers: PositiveInt = 2
    """trained: the target's blocks."""
    n_heads: PositiveInt = 4
    """trained: the target's heads."""
    draft_d_model: PositiveInt = 32
    """trained: the GPT draft's width."""
    draft_n_layers: PositiveInt = 1
    """trained: the GPT draft's blocks."""
    draft_n_heads: PositiveInt = 2
    """trained: the GPT draft's heads."""


@dataclass(frozen=True)
class TrainConfig:
    steps: NonNegativeInt = 1000
    """trained: the target's AdamW steps on random windows of the training mixture."""
    draft_steps: NonNegativeInt = 1000
    """trained: the GPT draft's steps (draft.kind=gpt only)."""
    batch_size: PositiveInt = 16
    """Windows of model.seq_len bytes per step."""
    lr: PositiveFloat = 3e-3
    """Peak learning rate: linear warmup, then cosine decay to a tenth of it."""
    warmup: NonNegativeInt = 20
    """Warmup steps."""


@dataclass(frozen=True)
class DraftConfig:
    kind: Literal[DRAFT_KINDS] = "gpt"  # type: ignore[valid-type]
    """gpt | ngram (see DRAFT_KINDS; ngram needs model.source=trained, checked when the trial
    starts, so that the paper profile still loads with every space)."""
    order: PositiveInt = 3
    """ngram: n (contexts of n - 1 bytes, backing off to the longest seen)."""
    k: PositiveFloat = 0.01
    """ngram: the add-k pseudo-count."""


@dataclass(frozen=True)
class DataConfig:
    source: Literal["stdlib", "file"] = "stdlib"
    """stdlib (code, prose and longtail from Python's standard library, random bytes) | file
    (a folder of *.jsonl prompts with a 'category' field, plus random tokens)."""
    path: str = ""
    """file: the prompt folder (for example a locally materialised SPEED-Bench split)."""
    train_bytes: PositiveInt = 600_000
    """stdlib: bytes of the training mixture (longtail at data.longtail_fraction of them)."""
    longtail_fraction: Fraction = 0.05
    """stdlib: the longtail domain's share of the training bytes."""
    held_out_bytes: PositiveInt = 65_536
    """stdlib: bytes held out per domain after its training part (the prompts' source)."""
    n_prompts: PositiveInt = 24
    """Prompts per domain (file: a seeded sample of each category, all where it has fewer)."""
    prompt_len: PositiveInt = 64
    """Tokens per prompt (stdlib: a byte window; file: the first tokens; random: exactly)."""
    rename: tuple[str, ...] = ("coding=code", "writing=prose", "multilingual=longtail")
    """file: category=domain pairs, so the claims find code, prose and longtail; other
    categories keep their names."""


@dataclass(frozen=True)
class DecodeConfig:
    gamma: PositiveInt = 4
    """Draft tokens proposed per target call."""
    new_tokens: PositiveInt = 48
    """Tokens decoded after each prompt."""
    temperature: NonNegativeFloat = 1.0
    """Sampling temperature of target and draft (0: greedy)."""
    check_greedy: bool = True
    """Decode every prompt greedily by SD and by the target alone, and count the prompts
    whose outputs differ (eval/greedy_mismatches, the claims' gate)."""


@dataclass(frozen=True)
class PruneConfig:
    vocab: NonNegativeInt = 64
    """m: the pruned draft keeps the m most frequent training tokens (0: no pruned decode)."""
    domains: tuple[str, ...] = ("code", "longtail")
    """Domains decoded again with the pruned draft (S4 compares longtail with code)."""


@dataclass(frozen=True)
class SubsetConfig:
    fraction: Fraction = 0.1
    """Subset size as a share of the pooled real prompts (S3)."""
    draws: PositiveInt = 20
    """Seeded draws of each subset rule; the errors are averaged over them."""


@dataclass(frozen=True)
class RunConfig:
    seed: int = 0
    """Seed of the models' training, the prompts and the sampling (the claims' unit)."""
    threads: PositiveInt = 1
    """torch threads per trial (and per map task)."""
    device: Literal["cpu", "cuda"] = "cpu"
    """Where the models run; seconds per token are process CPU time on cpu, synchronised
    wall time on cuda."""


@dataclass(frozen=True)
class SpeculativeConfig:
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    draft: DraftConfig = field(default_factory=DraftConfig)
    data: DataConfig = field(default_factory=DataConfig)
    decode: DecodeConfig = field(default_factory=DecodeConfig)
    prune: PruneConfig = field(default_factory=PruneConfig)
    subset: SubsetConfig = field(default_factory=SubsetConfig)
    run: RunConfig = field(default_factory=RunConfig)

    def validate(self) -> None:
        m = self.model
        if m.source == "trained":
            for width, heads, what in ((m.d_model, m.n_heads, ""), (m.draft_d_model,
                                                                    m.draft_n_heads, "draft_")):
                if width % heads:
                    raise ValueError(f"model.{what}d_model ({width}) must be a multiple of "
                                     f"model.{what}n_heads ({heads})")
            if self.prune.vocab > 256:
                raise ValueError(f"prune.vocab={self.prune.vocab}: the byte models have 256 "
                                 "tokens")
        for pair in self.data.rename:
            if pair.count("=") != 1 or not all(part.strip() for part in pair.split("=")):
                raise ValueError(f"data.rename: {pair!r} is not category=domain")


def renames(data: DataConfig) -> dict[str, str]:
    """The file source's category -> domain renames."""
    out = {}
    for pair in data.rename:
        category, domain = pair.split("=", 1)
        out[category.strip()] = domain.strip()
    return out


def check_draft(config: SpeculativeConfig) -> None:
    """The n-gram draft exists only for the byte models: refused with model.source=hf (not in
    validate(), so that a profile x space pair that never runs that trial still builds)."""
    if config.model.source == "hf" and config.draft.kind == "ngram":
        raise ConfigError("draft.kind=ngram needs model.source=trained (a byte n-gram); with "
                          "model.source=hf the draft is the model.draft checkpoint "
                          "(draft.kind=gpt)")
