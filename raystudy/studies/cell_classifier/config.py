"""The cell_classifier study's config: its frozen dataclasses and the ``sampling.loader``
parser that validates them (read by the recipe and by the report)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from raystudy import NonNegativeFloat, PositiveFloat, PositiveInt, parse_spec


@dataclass(frozen=True)
class DataConfig:
    path: str = ""
    """Folder of .h5ad files (one per plate) or a comma list of files; '' = generate."""
    cache_dir: str = "~/.cache/raystudy/cell_classifier"
    """Where path='' writes the generated collection (reused across trials and runs)."""
    cells: int = 24_000
    """Generated collection: total cells."""
    genes: int = 256
    """Generated collection: genes per cell."""
    plates: int = 4
    """Generated collection: plate files."""
    density: float = 0.1
    """Generated collection: fraction of non-zero counts."""
    cell_lines: int = 16
    """Generated collection: cell lines (the classes)."""
    val_cells: PositiveInt = 2048
    """Cells held out (drawn at random, seed 0) for validation accuracy."""
    read_cpus: NonNegativeFloat = 0.0
    """CPUs reserved per Ray Data read task (0: share the trial's; a trial holds its CPUs)."""
    read_concurrency: PositiveInt = 2
    """Ray Data read tasks in flight per trial (each reads whole fetches)."""


@dataclass(frozen=True)
class SamplingConfig:
    loader: str = "block/16/16"
    """random | streaming/F | block/B/F (B: block size, F: fetch factor)."""
    output: Literal["csr", "dense"] = "csr"
    """Rows through Ray Data as csr (sparse lists) or dense (tensor column)."""


@dataclass(frozen=True)
class ModelConfig:
    hidden: PositiveInt = 128
    """Width of the two hidden layers."""


@dataclass(frozen=True)
class TrainConfig:
    batch_size: PositiveInt = 64
    """Minibatch size (the paper's 64)."""
    epochs: PositiveInt = 1
    """Passes over the training cells."""
    lr: PositiveFloat = 1e-3
    """AdamW learning rate."""
    eval_every: PositiveInt = 100
    """Steps between validation reports (and at the end)."""
    seed: int = 0
    """Seed of the sampling order and the model init."""
    threads: PositiveInt = 1
    """torch CPU threads per trial."""


@dataclass(frozen=True)
class CellClassifierConfig:
    data: DataConfig = field(default_factory=DataConfig)
    sampling: SamplingConfig = field(default_factory=SamplingConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)

    def validate(self) -> None:
        """Rules across fields (each field's own bounds and choices are declared on it)."""
        parse_loader(self.sampling.loader)
        if not self.data.path and not (self.data.cells >= self.data.plates >= 1
                                       and self.data.cells > self.data.val_cells):
            raise ValueError("data.cells must exceed data.val_cells and data.plates")


def parse_loader(spec: str) -> tuple[str, int, int]:
    """``(strategy, block_size, fetch_factor)`` of ``random``, ``streaming/F``, ``block/B/F``."""
    (term, *more) = parse_spec(spec, "sampling.loader")
    sizes = [int(a) for a in term.args if isinstance(a, float) and a.is_integer() and a >= 1]
    if not more and len(sizes) == len(term.args):
        if term.name == "random" and not sizes:
            return "random", 1, 1
        if term.name == "streaming" and len(sizes) == 1:
            return "streaming", 0, sizes[0]
        if term.name == "block" and len(sizes) == 2:
            return "block", sizes[0], sizes[1]
    raise ValueError(f"sampling.loader={spec!r}: expected random, streaming/F or block/B/F "
                     "with positive integers B, F")
