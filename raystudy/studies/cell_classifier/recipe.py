"""Does block sampling train as well as true random, at near-streaming speed? (scDataset study)

Paper: D'Ascenzo & Cultrera di Montesano, "scDataset: Scalable Data Loading for Deep
Learning on Large-Scale Single-Cell Omics" (arXiv 2506.01883). Claim: block sampling
with batched fetching (block 16 / fetch 256) reads on-disk AnnData orders of magnitude
faster than true random minibatches, keeps their label diversity (plate entropy), and
trains a cell-line classifier as well; streaming is fast but loses accuracy.

Launch::

    raystudy sweep cell_classifier --profile quick        # generated data, 2 CPUs, minutes
    raystudy sweep cell_classifier --profile paper --set data.path=/data/tahoe100m \\
        --workers 4 --gpus-per-worker 1

Each trial trains an MLP (log1p expression -> cell line) reading its minibatches from
a :class:`~raystudy.studies.cell_classifier.blocks.BlockSampledDatasource` (Ray Data; one block
per minibatch, split across Ray Train workers by ``get_dataset_shard``). The swept key
``sampling.loader`` names the loader: ``random`` (permutation, rows read one by one),
``streaming/F`` (file order, fetch factor F) or ``block/B/F`` (block size B, fetch
factor F). ``analyze`` tabulates throughput, plate entropy and accuracy per loader
and plots throughput against entropy.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch

from raystudy import (
    Analysis,
    Claim,
    Metric,
    NonNegativeFloat,
    PositiveFloat,
    PositiveInt,
    RunResults,
    Study,
    Table,
    TrialContext,
    claims,
    parse_spec,
)
from raystudy.algorithms import stats
from raystudy.algorithms.sampling import (
    BlockShuffling,
    H5ADCollection,
    SamplingStrategy,
    Streaming,
    entropy_bits,
    expected_random_entropy,
    make_anndata_collection,
)
from raystudy.algorithms.sampling.synthetic import plate_path
from raystudy.algorithms.sampling.torch_loader import rows_to_tensors
from raystudy.contract import data as datacheck
from raystudy.errors import DataError
from raystudy.studies.cell_classifier.make_data import DATA_COMMANDS

OBS = ["plate", "cell_line"]


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


# ----------------------------------------------------------------------------- data
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


def data_files(config: DataConfig) -> list[Path]:
    """The collection's files: data.path, or a generated collection in data.cache_dir."""
    if config.path:
        root = Path(config.path).expanduser()
        files = ([Path(p.strip()).expanduser() for p in config.path.split(",")]
                 if "," in config.path or root.suffix == ".h5ad"
                 else sorted(root.glob("*.h5ad")))
        missing = [p for p in files if not p.is_file()]
        if not root.exists() and "," not in config.path:
            raise DataError(f"data.path={config.path}: no such file or folder (point it at "
                            ".h5ad files, or leave it empty to generate data)")
        if not files or missing:
            raise DataError(f"data.path={config.path}: "
                            f"{'no such file ' + str(missing[0]) if missing else 'no .h5ad files'}")
        return files
    folder = Path(config.cache_dir).expanduser() / (
        f"c{config.cells}-g{config.genes}-p{config.plates}-d{config.density:g}"
        f"-l{config.cell_lines}")
    files = [plate_path(folder, p) for p in range(config.plates)]
    if not all(p.is_file() for p in files):
        make_anndata_collection(folder, config.cells, config.genes, config.plates,
                                config.density, seed=0, progress=False,
                                cell_lines=config.cell_lines)
    return files


def open_collection(config: CellClassifierConfig) -> tuple[H5ADCollection, np.ndarray]:
    """The collection and its validation rows (sorted; the rest is for training)."""
    coll = H5ADCollection(data_files(config.data), obs_columns=OBS)
    if coll.n_rows <= config.data.val_cells:
        raise DataError(f"{coll.path}: {coll.n_rows} cells, need more than "
                        f"data.val_cells={config.data.val_cells}")
    val = np.random.default_rng(0).choice(coll.n_rows, config.data.val_cells, replace=False)
    return coll, np.sort(val)


def train_strategy(config: CellClassifierConfig, train_rows: np.ndarray) -> SamplingStrategy:
    kind, block, _ = parse_loader(config.sampling.loader)
    if kind == "streaming":
        return Streaming(indices=train_rows)
    return BlockShuffling(block, indices=train_rows)


def train_datasets(config: CellClassifierConfig) -> dict[str, Any]:
    """The training cells as a block-sampled Ray Dataset of ``train.epochs`` epochs."""
    from raystudy.studies.cell_classifier.blocks import BlockSampledDatasource, read_block_sampled

    coll, val = open_collection(config)
    train_rows = np.setdiff1d(np.arange(coll.n_rows), val)
    kind, _, fetch_factor = parse_loader(config.sampling.loader)
    source = BlockSampledDatasource(
        coll, train_strategy(config, train_rows), config.train.batch_size, fetch_factor,
        seed=config.train.seed, epochs=config.train.epochs, output=config.sampling.output,
        coalesce=kind != "random")
    return {"train": read_block_sampled(source, num_cpus=config.data.read_cpus,
                                        concurrency=config.data.read_concurrency)}


def check_data(config: CellClassifierConfig) -> None:
    """Open every file of data.path (headers, obs, gene names) and read two cells."""
    if not config.data.path:
        return  # generated on first use
    for path in data_files(config.data):
        datacheck.require_file(path, "data.path")
    coll, val = open_collection(config)
    coll.read(np.array([0, coll.n_rows - 1]), "csr")


def _genes(path: Path) -> int:
    """Columns of X from the first file's header (``shape`` of a CSR group)."""
    import h5py

    with h5py.File(path, "r") as f:
        x = f["X"]
        return int(x.attrs["shape"][1] if isinstance(x, h5py.Group) else x.shape[1])


def memory_estimate(config: CellClassifierConfig) -> tuple[int, str]:
    """Peak bytes: the dense held-out set, a few dense minibatches and the MLP."""
    genes = config.data.genes if not config.data.path else _genes(data_files(config.data)[0])
    floats = (config.data.val_cells + 8 * config.train.batch_size) * genes
    floats += 4 * (genes * config.model.hidden + config.model.hidden**2)
    return 4 * floats, (f"data.val_cells={config.data.val_cells}, "
                        f"train.batch_size={config.train.batch_size}, genes={genes}")


# ----------------------------------------------------------------------------- loop
def mlp(genes: int, hidden: int, classes: int) -> torch.nn.Module:
    return torch.nn.Sequential(
        torch.nn.Linear(genes, hidden), torch.nn.ReLU(),
        torch.nn.Linear(hidden, hidden), torch.nn.ReLU(),
        torch.nn.Linear(hidden, classes))


@torch.no_grad()
def accuracy(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    model.eval()
    correct = sum(int((model(xb).argmax(1) == yb).sum())
                  for xb, yb in zip(x.split(1024), y.split(1024), strict=True))
    model.train()
    return correct / max(1, len(y))


def train_loop(config: CellClassifierConfig, ctx: TrialContext) -> None:
    from raystudy.studies.cell_classifier.blocks import iter_minibatches

    torch.set_num_threads(config.train.threads)
    torch.manual_seed(config.train.seed)
    device = ctx.device
    coll, val = open_collection(config)
    held_out = rows_to_tensors(coll.read(val, "csr"), log1p=True)
    val_x, val_y = held_out["X"].to(device), held_out["cell_line"].to(device)
    classes = len(coll.categories["cell_line"])
    model = ctx.prepare_model(mlp(coll.n_cols, config.model.hidden, classes))
    opt = torch.optim.AdamW(model.parameters(), lr=config.train.lr)
    plate_counts = np.bincount(coll.obs["plate"], minlength=len(coll.categories["plate"]))

    step, cells, entropies, wait = 0, 0, [], 0.0
    batches = iter_minibatches(ctx.dataset("train"), coll.n_cols)
    t0 = time.perf_counter()
    first = next(batches, None)  # pipeline start-up, kept out of the throughputs
    first_batch_s = time.perf_counter() - t0
    started = time.perf_counter()
    while True:
        t0 = time.perf_counter()
        rows = first if step == 0 else next(batches, None)
        wait += time.perf_counter() - t0
        if rows is not None:
            mb = rows_to_tensors(rows, log1p=True)
            loss = torch.nn.functional.cross_entropy(model(mb["X"].to(device)),
                                                     mb["cell_line"].to(device))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            step, cells = step + 1, cells + len(rows)
            entropies.append(entropy_bits(rows.obs["plate"]))
        if rows is not None and step % config.train.eval_every:
            continue
        elapsed = time.perf_counter() - started
        ctx.report({
            "eval/accuracy": ctx.all_reduce_mean(accuracy(model, val_x, val_y)),
            "train/loss": ctx.all_reduce_mean(float(loss.item()) if step else math.nan),
            "train/cells_per_s": ctx.all_reduce_sum(cells / elapsed),
            "data/cells_per_s": ctx.all_reduce_sum(cells / max(wait, 1e-9)),
            "train/plate_entropy": ctx.all_reduce_mean(float(np.mean(entropies or [0.0]))),
            "train/random_plate_entropy": expected_random_entropy(
                plate_counts, config.train.batch_size),
            "data/first_batch_s": first_batch_s,
            "train/step": step, "train/cells": cells * ctx.world_size,
        })
        if rows is None:
            return


# ----------------------------------------------------------------------------- report
METRICS = ("eval/accuracy", "train/cells_per_s", "data/cells_per_s", "train/plate_entropy")


def analyze(results: RunResults, figures_dir: Path) -> Analysis:
    """One row per loader (mean over seeds) and a throughput-vs-entropy figure."""
    groups: dict[str, list[list[float]]] = {}
    for trial in results.trials:
        if trial.status == "finished":
            groups.setdefault(str(trial.config["sampling.loader"]), []).append(
                [trial.metric(m) for m in METRICS])
    if not groups:
        return Analysis(notes=["no finished trials yet: nothing to tabulate"])
    rows, summary = [], {}
    for loader, values in sorted(groups.items(), key=lambda kv: -np.mean(kv[1], 0)[1]):
        kind, block, fetch = parse_loader(loader)
        mean = np.mean(values, axis=0).tolist()
        rows.append([loader, kind, block or "-", fetch, *mean, len(values)])
        summary[loader] = {"strategy": kind, "block_size": block, "fetch_factor": fetch,
                           **dict(zip(METRICS, mean, strict=True)), "trials": len(values)}
    table = Table("Loaders", ["loader", "strategy", "block", "fetch factor", "accuracy",
                              "train cells/s", "loader cells/s", "plate entropy (bits)",
                              "trials"], rows,
                  note="means over trials; loader cells/s = cells per second spent waiting "
                       "on Ray Data, train cells/s = end to end, both after the first "
                       "minibatch; compare throughputs of trials run one at a time "
                       "(--max-concurrent 1)")
    figure = plot_loaders(summary, figures_dir / "loaders.png")
    return Analysis(tables=[table], figures=[("throughput vs plate entropy", figure)],
                    summary={"loaders": summary}, claims=throughput_claims(results))


def throughput_claims(results: RunResults) -> list[Claim]:
    """scDataset's claim that block sampling loads far faster than true random sampling:
    each block loader's log10 loader throughput minus random's, paired over seeds, Holm
    across the block loaders."""
    statement = "block sampling loads cells faster than true random sampling"
    effect = "log10 loader cells/s, block minus random"
    rates: dict[str, dict[int, float]] = {}
    for trial in results.trials:
        rate = trial.metric("data/cells_per_s")
        if trial.status == "finished" and rate > 0:
            loader = str(trial.config["sampling.loader"])
            rates.setdefault(loader, {})[int(trial.config["train.seed"])] = math.log10(rate)
    random = rates.get("random", {})
    blocks = sorted(name for name in rates if name.startswith("block"))
    if not random or not blocks:
        return [claims.missing_claim(statement, "paired over seeds", effect,
                                     "the sweep needs the random loader and a block loader")]
    compared = {}
    for loader in blocks:
        seeds = sorted(set(rates[loader]) & set(random))
        compared[loader] = stats.paired_comparison([rates[loader][s] for s in seeds],
                                                   [random[s] for s in seeds])
    adjusted = stats.holm([result.p_value for result in compared.values()])
    family = f"{len(blocks)} block loaders"
    return [claims.paired_claim(f"{statement} ({loader})", effect, result, "greater",
                                p_value=float(p), family=family)
            for (loader, result), p in zip(compared.items(), adjusted, strict=True)]


def plot_loaders(summary: dict[str, dict[str, Any]], path: Path) -> Path:
    """Left: loader throughput vs plate entropy (log x); right: accuracy per loader."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    colors = {"random": "tab:red", "streaming": "tab:gray", "block": "tab:blue"}
    names = list(summary)
    for name in names:
        s = summary[name]
        left.scatter(s["data/cells_per_s"], s["train/plate_entropy"],
                     color=colors[s["strategy"]], s=40)
        left.annotate(name, (s["data/cells_per_s"], s["train/plate_entropy"]), fontsize=7,
                      xytext=(3, 3), textcoords="offset points")
    left.set_xscale("log")
    left.set_xlabel("loader throughput (cells/s)")
    left.set_ylabel("mean minibatch plate entropy (bits)")
    left.grid(alpha=0.3)
    right.bar(range(len(names)), [summary[n]["eval/accuracy"] for n in names],
              color=[colors[summary[n]["strategy"]] for n in names])
    right.set_xticks(range(len(names)), names, rotation=45, ha="right", fontsize=7)
    right.set_ylabel("validation accuracy")
    right.set_ylim(0, 1)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


STUDY = Study(
    name="cell_classifier",
    description="Block sampling vs random vs streaming for a cell-line classifier (scDataset)",
    config_cls=CellClassifierConfig,
    train_loop=train_loop,
    metrics=(
        Metric("eval/accuracy", "max", "cell-line accuracy on held-out cells"),
        Metric("train/cells_per_s", "max",
               "cells trained per second, end to end (after the first minibatch)"),
        Metric("data/cells_per_s", "max",
               "cells per second spent waiting on the loader (after the first minibatch)"),
        Metric("train/plate_entropy", "max", "mean minibatch plate entropy (bits)"),
        Metric("train/loss", "min", "cross-entropy of the last step"),
    ),
    analyze=analyze,
    datasets=train_datasets,
    check_data=check_data,
    memory_estimate=memory_estimate,
    data_commands=DATA_COMMANDS,
)
