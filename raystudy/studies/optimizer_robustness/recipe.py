"""How robust is each optimizer to its learning rate? (MuonMax / Momo study)

Paper: Crawshaw, Modi, Liu, Gower, "An Exploration of Non-Euclidean Gradient Descent:
Muon and its Many Variants" (arXiv 2510.09827, ICML 2026). Claim: MuonAdam needs a
precisely tuned learning rate, while MuonMax-Momo and MuonAdam-Momo stay near the best
final validation loss across a wide range of learning rates.

Launch::

    raystudy sweep optimizer_robustness --profile quick            # 2 CPUs, minutes
    raystudy sweep optimizer_robustness --profile paper --workers 8 --gpus-per-worker 1

Each trial trains a small GPT (embeddings, hidden matrices, output head: every parameter
kind the optimizers split on) for a fixed number of steps and reports the final
validation loss. ``analyze`` turns the optimizer x learning rate x seed grid into the
robustness table and the loss-vs-learning-rate figure.
"""

from __future__ import annotations

import functools
import itertools
import math
from pathlib import Path
from typing import Any

import numpy as np
import torch

from raystudy import Metric, Study, TrialContext
from raystudy.algorithms.models import GPT
from raystudy.algorithms.optim import make_optimizer, optimizer_step
from raystudy.algorithms.text import random_windows, text_bytes, train_val_split
from raystudy.contract import data as datacheck
from raystudy.contract import storage
from raystudy.errors import DataError, MissingDataError, UserError
from raystudy.studies.optimizer_robustness.analysis import analyze
from raystudy.studies.optimizer_robustness.config import OptimizerRobustnessConfig
from raystudy.studies.optimizer_robustness.data import DATA_COMMANDS


# ----------------------------------------------------------------------------- data
@functools.lru_cache(maxsize=2)
def _corpus(source: str, max_bytes: int, val_fraction: float) -> tuple[np.ndarray, np.ndarray]:
    return train_val_split(text_bytes(source, max_bytes), val_fraction)


def token_datasets(config: OptimizerRobustnessConfig) -> dict[str, Any]:
    """Ray Datasets of token rows (source=tokens); the in-memory sources need none."""
    if config.data.source != "tokens":
        return {}
    import ray.data

    reads = {split: storage.data_source(storage.join(config.data.path, f"{split}.npy"))
             for split in ("train", "val")}  # a store's endpoint goes into the filesystem
    return {split: ray.data.read_numpy(path, filesystem=fs) for split, (path, fs) in reads.items()}


def check_data(config: OptimizerRobustnessConfig) -> list[str]:
    """Open the token files (header + a sample of rows) or the text folder on the driver."""
    source, path = config.data.source, config.data.path
    if source == "tokens":
        if datacheck.is_remote(path):
            for split in ("train", "val"):
                try:
                    found = storage.exists(storage.join(path, f"{split}.npy"))
                except UserError as exc:  # a store this machine cannot reach
                    raise MissingDataError(f"data.path {path}: {exc}") from None
                if not found:
                    raise MissingDataError(f"data.path {path}: no {split}.npy there")
            return [f"data.path={path} (object storage) is read by the trials"]
        hint = " (write token files with `raystudy data make-tokens OUT_DIR`)"
        for split in ("train", "val"):
            check_token_file(datacheck.require_file(Path(path) / f"{split}.npy",
                                                    "data.path", hint), config)
    elif source != "stdlib":
        datacheck.require_dir(source, "data.source", " (a folder of .py/.txt/.md files)")
    return []


def check_token_file(path: Path, config: OptimizerRobustnessConfig) -> None:
    """Integer ids < vocab_size, rows of seq_len + 1, at least one batch of rows."""
    tokens = datacheck.open_npy(path, "token file")
    row = config.model.seq_len + 1
    if tokens.ndim != 2:
        raise DataError(f"token file {path}: expected a 2-D array n_sequences x "
                        f"(seq_len + 1) = n x {row}, got shape {tokens.shape}")
    if not np.issubdtype(tokens.dtype, np.integer):
        raise DataError(f"token file {path}: expected integer token ids (uint16), "
                        f"got {tokens.dtype}")
    if tokens.shape[1] != row:
        raise DataError(f"token file {path}: rows of {tokens.shape[1]} tokens, but "
                        f"model.seq_len={config.model.seq_len} needs seq_len + 1 = {row} "
                        f"(--set model.seq_len={tokens.shape[1] - 1}, or remake the files)")
    if tokens.shape[0] < config.train.batch_size:
        raise DataError(f"token file {path}: {tokens.shape[0]} rows, fewer than one batch "
                        f"(train.batch_size={config.train.batch_size})")
    sample = np.asarray(tokens[datacheck.sample_rows(tokens.shape[0])])
    low, high = int(sample.min()), int(sample.max())
    if low < 0 or high >= config.model.vocab_size:
        raise DataError(f"token file {path}: token id {high if high > 0 else low} outside "
                        f"[0, model.vocab_size={config.model.vocab_size})")


def memory_estimate(config: OptimizerRobustnessConfig) -> tuple[int, str]:
    """Peak bytes of a trial: fp32 weights, grads and two optimizer states, plus the
    activations autograd keeps (about 20 floats per token and width per block, the
    attention maps and three copies of the logits)."""
    m, batch = config.model, config.train.batch_size
    params = m.vocab_size * m.d_model * 2 + m.seq_len * m.d_model + 12 * m.n_layers * m.d_model**2
    tokens = batch * m.seq_len
    activations = tokens * (20 * m.d_model * m.n_layers + 3 * m.vocab_size)
    attention = 2 * batch * m.n_heads * m.seq_len**2 * m.n_layers
    detail = (f"train.batch_size={batch}, model.seq_len={m.seq_len}, "
              f"model.d_model={m.d_model}, model.vocab_size={m.vocab_size}")
    return 4 * (4 * params + activations + attention), detail


class Batches:
    """Training and fixed validation batches from whichever source the config names."""

    def __init__(self, config: OptimizerRobustnessConfig, ctx: TrialContext) -> None:
        self.config = config
        self.ctx = ctx
        self.generator = torch.Generator().manual_seed(config.train.seed * 1000 + ctx.rank)
        if config.data.source == "tokens":
            self._train_iter = self._token_batches("train", repeat=True)
            return
        self.train, self.val = _corpus(config.data.source, config.data.max_bytes,
                                       config.data.val_fraction)

    def _token_batches(self, split: str, repeat: bool):
        seq_len = self.config.model.seq_len
        while True:
            for batch in self.ctx.dataset(split).iter_torch_batches(
                batch_size=self.config.train.batch_size, drop_last=True
            ):
                rows = batch["data"][:, : seq_len + 1].long()
                yield rows[:, :-1], rows[:, 1:]
            if not repeat:
                return

    def next_train(self) -> tuple[torch.Tensor, torch.Tensor]:
        if self.config.data.source == "tokens":
            return next(self._train_iter)
        return random_windows(self.train, self.config.train.batch_size,
                              self.config.model.seq_len, self.generator)

    def validation(self):
        n = self.config.train.eval_batches
        if self.config.data.source == "tokens":
            yield from itertools.islice(self._token_batches("val", repeat=False), n)
            return
        fixed = torch.Generator().manual_seed(12345)  # the same windows for every trial
        for _ in range(n):
            yield random_windows(self.val, self.config.train.batch_size,
                                 self.config.model.seq_len, fixed)


# ----------------------------------------------------------------------------- loop
def autocast(config: OptimizerRobustnessConfig, device: torch.device):
    """bf16 autocast where asked (auto: on CUDA only); a no-op context otherwise."""
    use_bf16 = config.train.precision == "bf16" or (
        config.train.precision == "auto" and device.type == "cuda")
    return torch.autocast(device.type, dtype=torch.bfloat16, enabled=use_bf16)


def lm_loss(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Next-token cross-entropy through ``model`` (plain or DDP-wrapped GPT)."""
    logits = model(x)
    return torch.nn.functional.cross_entropy(logits.flatten(0, 1).float(), y.flatten())


@torch.no_grad()
def evaluate(model: torch.nn.Module, batches: Batches, config, device: torch.device) -> float:
    model.eval()
    with autocast(config, device):
        losses = [lm_loss(model, x.to(device), y.to(device)).item()
                  for x, y in batches.validation()]
    model.train()
    return float(np.mean(losses)) if losses else math.nan


def train_loop(config: OptimizerRobustnessConfig, ctx: TrialContext) -> None:
    torch.set_num_threads(config.train.threads)
    torch.manual_seed(config.train.seed)  # same init on every rank
    device = ctx.device
    m = config.model
    net = GPT(m.vocab_size, m.seq_len, m.d_model, m.n_layers, m.n_heads)
    model = ctx.prepare_model(net)
    net = getattr(model, "module", model)
    momo_options = {"f_star": config.optimizer.f_star} if "momo" in config.optimizer.name else {}
    opt = make_optimizer(config.optimizer.name, net, lr=config.optimizer.lr,
                         weight_decay=config.optimizer.weight_decay, **momo_options)
    batches = Batches(config, ctx)

    t = config.train
    cadence = ctx.cadence(t.steps, eval_every=t.eval_every, checkpoint_every=t.checkpoint_every)
    state = ctx.load_checkpoint()
    if state is not None:
        net.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        batches.generator.set_state(state["data_rng"])

    for step in cadence:
        x, y = batches.next_train()
        with autocast(config, device):
            loss = lm_loss(model, x.to(device), y.to(device))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        train_loss = ctx.all_reduce_mean(loss.item())
        if not math.isfinite(train_loss):
            ctx.report({"train/loss": train_loss, "eval/loss": math.nan, "train/step": step - 1})
        optimizer_step(opt, train_loss)
        if not cadence.evaluates(step):
            continue
        val_loss = ctx.all_reduce_mean(evaluate(model, batches, config, device))
        checkpoint = None
        if cadence.checkpoints(step):
            checkpoint = {"model": net.state_dict(), "optimizer": opt.state_dict(),
                          "data_rng": batches.generator.get_state()}
        ctx.report({"eval/loss": val_loss, "train/loss": train_loss, "train/step": step,
                    "train/tokens": ctx.all_reduce_sum(step * t.batch_size * config.model.seq_len)},
                   checkpoint=checkpoint, step=step)


STUDY = Study(
    name="optimizer_robustness",
    description="Learning-rate robustness of MuonMax/Momo vs AdamW, MuonAdam (Crawshaw et al.)",
    config_cls=OptimizerRobustnessConfig,
    train_loop=train_loop,
    metrics=(
        Metric("eval/loss", "min", "final validation cross-entropy (nats/byte)"),
        Metric("train/loss", "min", "training loss of the last step"),
    ),
    analyze=analyze,
    datasets=token_datasets,
    check_data=check_data,
    memory_estimate=memory_estimate,
    data_commands=DATA_COMMANDS,
)
