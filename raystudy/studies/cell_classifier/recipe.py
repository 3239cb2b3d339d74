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
from pathlib import Path
from typing import Any

import numpy as np
import torch

from raystudy import Metric, Study, TrialContext
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
from raystudy.studies.cell_classifier.analysis import analyze
from raystudy.studies.cell_classifier.config import CellClassifierConfig, DataConfig, parse_loader
from raystudy.studies.cell_classifier.data import DATA_COMMANDS

OBS = ["plate", "cell_line"]


# ----------------------------------------------------------------------------- data
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
            "data/first_batch_s": first_batch_s, "data/classes": classes,
            "train/step": step, "train/cells": cells * ctx.world_size,
        })
        if rows is None:
            return


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
