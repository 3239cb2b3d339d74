"""When does node classification help link prediction on the same graph, and back?

Paper: Akula, Kumar, Kantarcioglu, Coskunuzer, "Same Graph Cross-Task Transfer in GNNs:
Protocols and Predictors" (ICML 2026). Claims: conclusions about NC <-> LP transfer are
unreliable unless the protocol is leakage-free; NC->LP helps on homophilous graphs
while LP->NC is fragile; the CoTask Score rates a shared encoder; graph statistics
such as homophily predict the best mechanism.

Launch::

    raystudy sweep graph_transfer --profile quick          # synthetic graphs, 2 CPUs, minutes
    raystudy sweep graph_transfer --profile quick --space snr   # the feature-SNR axis
    raystudy sweep graph_transfer --profile paper --gpus-per-worker 0.25 \\
        --set data.root=/data/graphs                     # real datasets on a GPU cluster

One trial is one cell dataset x backbone x mechanism x seed: it builds (or reads) the
graph, splits it under the protocol -- the leakage-free split is audited before
anything trains -- runs the mechanism (:mod:`raystudy.algorithms.graph_transfer.mechanisms`)
and reports its test metrics, its graph statistics and, for the mechanisms named in
``protocol.contrast``, the same mechanism under the other protocol. ``analyze`` pairs
every transfer run with its single-task baseline of the same seed and builds the gain
heatmaps, gain vs homophily with the fitted predictor, the CTS table, the recommended
mechanism per dataset with its leave-one-dataset-out accuracy, and the protocols side by
side.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import torch

from raystudy import (
    Analysis,
    Metric,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    Range,
    RunResults,
    Study,
    Table,
    TrialContext,
    claims,
)
from raystudy.algorithms.graph_transfer import gains
from raystudy.algorithms.graph_transfer.datasets import (
    REAL_DATASETS,
    check_raw_files,
    dataset_key,
    load_graph,
)
from raystudy.algorithms.graph_transfer.mechanisms import MECHANISMS, RunSpec, run_mechanism
from raystudy.algorithms.graph_transfer.models import BACKBONES, EncoderConfig
from raystudy.algorithms.graph_transfer.protocol import PROTOCOLS, prepare
from raystudy.algorithms.graph_transfer.split import leakage_free_split
from raystudy.algorithms.graph_transfer.stats import graph_statistics
from raystudy.algorithms.graph_transfer.synthetic import CSBM, is_synthetic, parse_csbm
from raystudy.algorithms.graph_transfer.train import FitConfig
from raystudy.studies.graph_transfer import summary

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


# ----------------------------------------------------------------------------- data
def check_data(config: GraphTransferConfig) -> None:
    """Real datasets: every expected raw file present and readable, before Ray starts."""
    check_raw_files(config.data.dataset, config.data.root)


def graph(config: GraphTransferConfig):
    return load_graph(config.data.dataset, config.data.root, csbm_defaults(config),
                      config.data.graph_seed)


# ----------------------------------------------------------------------------- loop
def run_spec(config: GraphTransferConfig) -> RunSpec:
    m, t = config.model, config.train
    encoder = EncoderConfig(m.hidden, m.layers, m.dropout, m.heads, m.pe_steps, m.attention,
                            m.attn_dropout)
    fit = FitConfig(t.epochs, t.patience, t.lr, t.weight_decay_nc, t.weight_decay_lp,
                    t.grad_clip)
    return RunSpec(m.backbone, encoder, fit, t.seed, config.transfer.lambdas,
                   config.protocol.hits_k)


def run_under(config: GraphTransferConfig, data, protocol: str, device: torch.device,
              map_fn) -> dict[str, float]:
    """The configured mechanism under ``protocol``; leakage_free is audited in ``prepare``."""
    pe_steps = config.model.pe_steps if config.model.backbone == "gps" else 0
    task = prepare(data, protocol, config.train.seed, pe_steps,
                   config.protocol.hard_negatives).to(device)
    out = run_mechanism(config.transfer.mechanism, task, run_spec(config), map_fn)
    y_train = task.y[task.nodes["train"]]
    out["nc_chance"] = float(torch.bincount(y_train).max()) / y_train.numel()
    return out


TEST_METRICS = ("score", "nc_acc", "lp_auc", "lp_mrr", "lp_hits", "nc_chance")


def namespaced(out: dict[str, float]) -> dict[str, float]:
    """Mechanism outputs under the shared metric namespaces (eval/, val/, train/, ...)."""
    report = {}
    for key, value in out.items():
        if key in TEST_METRICS[:-1]:
            report[f"eval/{key}"] = value
        elif key.startswith(("val_", "source_")):
            prefix, rest = key.split("_", 1)
            report[f"{prefix}/{rest}"] = value
        elif key in ("epochs", "best_epoch"):
            report[f"train/{key}"] = value
        elif key == "nc_chance":
            report["task/nc_chance"] = value
        else:                                   # lam, lam_<x>_select, weight_nc/lp
            report[f"joint/{key}"] = value
    return report


def train_loop(config: GraphTransferConfig, ctx: TrialContext) -> None:
    torch.set_num_threads(config.train.threads)
    data = graph(config)
    main = config.protocol.name
    # The joint grid fans out over the trial's map slots (--map-tasks), CPU tasks: on a
    # GPU trial it stays in the trial, which holds the GPU.
    map_fn = ctx.map if ctx.device.type == "cpu" else None
    report = namespaced(run_under(config, data, main, ctx.device, map_fn))
    report["audit/leakage_free"] = float(main == "leakage_free")   # prepare() audited it
    if is_synthetic(config.data.dataset):       # the SNR axis: s of the graph it built
        snr = parse_csbm(config.data.dataset, csbm_defaults(config)).feature_signal
        report["task/feature_snr"] = snr
    # Statistics come from a leakage-free split of this seed, whatever the protocol.
    split = leakage_free_split(data, config.train.seed)
    stats = graph_statistics(data.x, data.y, split)
    report.update({f"stats/{k}": v for k, v in stats.items()})
    if config.transfer.mechanism in config.protocol.contrast:
        other = next(p for p in PROTOCOLS if p != main)
        contrast = run_under(config, data, other, ctx.device, map_fn)
        report.update({f"contrast/{k}": v for k, v in contrast.items() if k in TEST_METRICS})
    ctx.report(report)


# ----------------------------------------------------------------------------- report
def records(results: RunResults) -> list[dict[str, Any]]:
    """One record per (trial, protocol) of every finished trial (see gains.py)."""
    out = []
    for trial in results.trials:
        if trial.status != "finished":
            continue
        c, last = trial.config, trial.last
        main = c["protocol.name"]
        base = {"dataset": c["data.dataset"], "backbone": c["model.backbone"],
                "mechanism": c["transfer.mechanism"], "seed": c["train.seed"]}
        metrics = {k.split("/", 1)[1]: v for k, v in last.items()
                   if k.startswith(("eval/", "task/"))}
        metrics.update({k: v for k, v in last.items() if k.startswith("stats/")})
        out.append({**base, "protocol": main, "metrics": metrics})
        contrast = {k.split("/", 1)[1]: v for k, v in last.items() if k.startswith("contrast/")}
        if contrast:
            other = next(p for p in PROTOCOLS if p != main)
            out.append({**base, "protocol": other, "metrics": contrast})
    return out


CLAIM = "NC->LP transfer (warm start) helps link prediction more on more homophilous graphs"
SNR_CLAIM = ("LP->NC transfer (warm start) helps node classification where LP is easy and NC "
             "unsaturated: the gain falls as the features' SNR rises")


def analyze(results: RunResults, figures_dir: Path) -> Analysis:
    """Gains, homophily trend + predictor, CTS, recommendations, protocols side by side;
    the claims: the NC->LP warm-start gain's slope on edge homophily, and, when the run
    varies the synthetic graphs' feature SNR (``--space snr``), the LP->NC gain's slope on
    it, each clustered by dataset."""
    built = summary.build(gains.index(records(results)), figures_dir)
    fit = built["fits"].get("warm_nc_lp")
    effect = "slope of the LP ROC-AUC gain per unit of edge homophily"
    claim = (claims.slope_claim(CLAIM, effect, fit, "greater",
                                note="leakage-free protocol; gain paired with the same seed's "
                                     "LP baseline, averaged per dataset over seeds and "
                                     "backbones")
             if fit is not None else claims.missing_claim(
                 CLAIM, "clustered slope over datasets", effect,
                 "no warm_nc_lp run with its lp baseline in this run"))
    found = [claim]
    if built["snr_fit"] is not None:
        found.append(claims.slope_claim(
            SNR_CLAIM, "slope of the NC accuracy gain per unit of feature SNR s",
            built["snr_fit"], "less",
            note="synthetic graphs of one homophily at several s (space snr); gain paired with "
                 "the same seed's NC baseline, averaged per dataset; the SNR table shows LP "
                 "AUC (easy) and NC accuracy (unsaturated at low s)"))
    return Analysis(tables=[Table(**t) for t in built["tables"]], figures=built["figures"],
                    notes=built["notes"], summary=built["summary"], claims=found)


STUDY = Study(
    name="graph_transfer",
    description="Same-graph NC <-> LP transfer under a leakage-free protocol (Akula et al.)",
    config_cls=GraphTransferConfig,
    train_loop=train_loop,
    metrics=(Metric("eval/score", "max",
                    "target test metric: NC accuracy, LP ROC-AUC, or their mean (joint)"),),
    analyze=analyze,
    check_data=check_data,
    supports_workers=False,
)
