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

import torch

from raystudy import Metric, Study, TrialContext
from raystudy.algorithms.graph_transfer.datasets import check_raw_files, load_graph
from raystudy.algorithms.graph_transfer.mechanisms import RunSpec, run_mechanism
from raystudy.algorithms.graph_transfer.models import EncoderConfig
from raystudy.algorithms.graph_transfer.protocol import PROTOCOLS, prepare
from raystudy.algorithms.graph_transfer.split import leakage_free_split
from raystudy.algorithms.graph_transfer.stats import graph_statistics
from raystudy.algorithms.graph_transfer.synthetic import is_synthetic, parse_csbm
from raystudy.algorithms.graph_transfer.train import FitConfig
from raystudy.studies.graph_transfer.analysis import analyze
from raystudy.studies.graph_transfer.config import GraphTransferConfig, csbm_defaults


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
