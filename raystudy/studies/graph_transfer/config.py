"""The graph_transfer study's config: its frozen dataclasses, the mechanism names and the
synthetic-graph defaults its validation reads (imported by the recipe)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Literal

from raystudy import NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt, Range
from raystudy.algorithms.graph_transfer.datasets import REAL_DATASETS, dataset_key
from raystudy.algorithms.graph_transfer.mechanisms import MECHANISMS
from raystudy.algorithms.graph_transfer.models import BACKBONES
from raystudy.algorithms.graph_transfer.protocol import PROTOCOLS
from raystudy.algorithms.graph_transfer.synthetic import CSBM, is_synthetic, parse_csbm

MECHANISM_NAMES = tuple(MECHANISMS)
Dropout = Annotated[float, Range(ge=0, lt=1)]
Lambda = Annotated[float, Range(ge=0, le=1)]


@dataclass(frozen=True)
class DataConfig:
    dataset: str = "csbm-h0.5"
    """csbm-h<homophily>[-n<nodes>-d<degree>-s<signal>...] (built here) or a real dataset."""
    root: str = "data/graphs"
    """Folder of the real datasets' raw files (layout: docs/graph_transfer.md)."""
    num_nodes: int = 400
    """Synthetic graphs: nodes, unless the name says -n."""
    num_classes: int = 4
    """Synthetic graphs: classes (-c)."""
    avg_degree: float = 8.0
    """Synthetic graphs: mean degree (-d)."""
    feature_signal: float = 1.0
    """Synthetic graphs: class-mean separation in noise units (-s)."""
    feature_dim: int = 32
    """Synthetic graphs: feature dimension (-f)."""
    locality: NonNegativeFloat = 0.05
    """Synthetic graphs: latent-circle locality of edges (-l; 0: plain CSBM, LP ~ classes only)."""
    graph_seed: int = 0
    """Synthetic graphs: the seed that builds the graph (the trial seed splits it)."""


@dataclass(frozen=True)
class ProtocolConfig:
    name: Literal[PROTOCOLS] = "leakage_free"  # type: ignore[valid-type]
    """leakage_free (audited) | randomlinksplit (PyG's, leaky: for contrast)."""
    contrast: tuple[Literal[MECHANISM_NAMES], ...] = (  # type: ignore[valid-type]
        "nc", "lp", "warm_nc_lp", "warm_lp_nc")
    """Mechanisms also run under the other protocol in the same trial ('' for none)."""
    hard_negatives: NonNegativeInt = 20
    """HeaRT-style negatives per test positive for MRR / Hits@K (0: off; HeaRT uses 500)."""
    hits_k: PositiveInt = 1
    """K of Hits@K against the hard negatives."""


@dataclass(frozen=True)
class ModelConfig:
    backbone: Literal[BACKBONES] = "gcn"  # type: ignore[valid-type]
    """gcn | sage | gps."""
    hidden: PositiveInt = 32
    """Embedding width H."""
    layers: PositiveInt = 2
    """Message-passing (or GPS) layers."""
    dropout: Dropout = 0.5
    """Dropout between layers (GPS: inside its blocks)."""
    heads: PositiveInt = 2
    """GPS attention heads."""
    pe_steps: NonNegativeInt = 8
    """GPS random-walk positional encoding steps, computed on the training graph."""
    attention: Literal["auto", "multihead", "performer"] = "auto"
    """GPS attention: multihead | performer | auto (performer above 5000 nodes)."""
    attn_dropout: Dropout = 0.0
    """GPS dropout on attention weights (> 0 is ~3x slower on CPU: torch's math path)."""


@dataclass(frozen=True)
class TransferConfig:
    mechanism: Literal[MECHANISM_NAMES] = "warm_nc_lp"  # type: ignore[valid-type]
    """nc | lp | warm_{nc_lp,lp_nc} | frozen_{replace,concat}_{nc_lp,lp_nc} | joint_{grid,uw}."""
    lambdas: tuple[Lambda, ...] = (0.25, 0.5, 0.75)
    """joint_grid: the lambda grid of lam L_NC + (1 - lam) L_LP."""


@dataclass(frozen=True)
class TrainConfig:
    epochs: PositiveInt = 100
    """Maximum epochs per model (the paper: 200)."""
    patience: PositiveInt = 20
    """Epochs without a better validation score before stopping (the paper: 50)."""
    lr: PositiveFloat = 0.01
    """Adam learning rate."""
    weight_decay_nc: NonNegativeFloat = 5e-4
    """Weight decay of NC and joint models."""
    weight_decay_lp: NonNegativeFloat = 1e-4
    """Weight decay of LP models."""
    grad_clip: NonNegativeFloat = 0.0
    """Clip the gradient norm to this (0: off, as in the authors' code; an explicit option)."""
    seed: int = 0
    """Split, negatives and model-init seed."""
    threads: PositiveInt = 1
    """torch CPU threads per trial (concurrent trials share the cores)."""


@dataclass(frozen=True)
class GraphTransferConfig:
    data: DataConfig = field(default_factory=DataConfig)
    protocol: ProtocolConfig = field(default_factory=ProtocolConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    transfer: TransferConfig = field(default_factory=TransferConfig)
    train: TrainConfig = field(default_factory=TrainConfig)

    def validate(self) -> None:
        """Rules across fields (each field's own bounds and choices are declared on it)."""
        if self.model.backbone == "gps" and self.model.hidden % self.model.heads:
            raise ValueError("model.hidden must be divisible by model.heads")
        if self.protocol.hard_negatives % 2:
            raise ValueError("protocol.hard_negatives must be an even number >= 0")
        if not self.transfer.lambdas:
            raise ValueError("transfer.lambdas is empty")
        if is_synthetic(self.data.dataset):
            parse_csbm(self.data.dataset, csbm_defaults(self))
        elif dataset_key(self.data.dataset) not in REAL_DATASETS:  # a space's typo: every trial
            raise ValueError(f"data.dataset={self.data.dataset!r} is neither a real dataset "
                             f"({', '.join(REAL_DATASETS)}) nor csbm-h<homophily>")


def csbm_defaults(config: GraphTransferConfig) -> CSBM:
    d = config.data
    return CSBM(num_nodes=d.num_nodes, num_classes=d.num_classes, avg_degree=d.avg_degree,
                feature_signal=d.feature_signal, feature_dim=d.feature_dim,
                locality=d.locality)
