r"""Full-batch training with early stopping on validation, for NC, LP and joint models.

Losses (one full-graph forward per epoch, Adam; no gradient clipping, as in the authors'
code -- ``grad_clip > 0`` clips the gradient norm, an explicit off-by-default option):

* NC: :math:`\mathcal L_{NC} = \mathrm{CE}(\hat y_v, y_v)` over training nodes;
* LP: :math:`\mathcal L_{LP} = \mathrm{BCE}(\sigma(s(u,v)), 1)` over training positives
  plus :math:`\mathrm{BCE}(\sigma(s(u,v)), 0)` over as many training negatives (fixed,
  or resampled every epoch when the protocol says so);
* joint, one encoder and both heads: :math:`\lambda\mathcal L_{NC} + (1-\lambda)
  \mathcal L_{LP}`, or uncertainty weighting (Kendall, Gal, Cipolla 2018) with learned
  :math:`s_t = \log\sigma_t^2`: :math:`\tfrac12 e^{-s_{NC}}\mathcal L_{NC} + \tfrac12
  e^{-s_{LP}}\mathcal L_{LP} + \tfrac12(s_{NC} + s_{LP})`.

Model selection: validation accuracy (NC), validation ROC-AUC (LP), or
:math:`\alpha\,\mathrm{acc} + (1-\alpha)\,\mathrm{AUC}` (joint, :math:`\alpha = 0.5` as in
the authors' code). :class:`EarlyStopping` keeps a **deep copy** of the best state:
``state_dict()`` returns references to the live tensors, which the optimizer then
overwrites in place, so keeping it uncopied restores the last epoch, not the best
(the authors' runner has this bug). Training stops after ``patience`` epochs without
a strictly better validation score, and the best state is loaded back.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from .metrics import accuracy, hits_at_k, mean_reciprocal_rank, ranks_among_negatives, roc_auc
from .models import GraphModel, no_mha_fastpath
from .protocol import TaskData


@dataclass(frozen=True)
class FitConfig:
    """Optimisation settings (RESEARCH.md, section 5: the paper's and authors' values)."""

    epochs: int = 200
    patience: int = 50
    lr: float = 0.01
    weight_decay_nc: float = 5e-4
    weight_decay_lp: float = 1e-4
    grad_clip: float = 0.0
    """Clip the gradient norm to this value; 0 (default): no clipping, as the authors."""
    select_alpha: float = 0.5
    """Joint model selection: weight of validation accuracy against validation AUC."""


@dataclass
class FitResult:
    """Best validation score, its epoch, epochs run, and the per-epoch validation scores."""

    best_val: float
    best_epoch: int
    epochs_run: int
    history: list[float] = field(default_factory=list)
    diverged: bool = False


class EarlyStopping:
    """Track the best validation score and a deep copy of the module's state at it."""

    def __init__(self, patience: int) -> None:
        self.patience = patience
        self.best = -math.inf
        self.best_epoch = 0
        self.best_state: dict[str, Tensor] | None = None
        self.bad_epochs = 0

    def update(self, score: float, module: nn.Module, epoch: int) -> bool:
        """Record epoch ``epoch``'s score; True when training should stop."""
        if score > self.best:
            self.best, self.best_epoch, self.bad_epochs = score, epoch, 0
            self.best_state = copy.deepcopy(module.state_dict())
            return False
        self.bad_epochs += 1
        return self.bad_epochs >= self.patience

    def restore(self, module: nn.Module) -> None:
        if self.best_state is not None:
            module.load_state_dict(self.best_state)


def embed(model: GraphModel, task: TaskData, x: Tensor, graph: Tensor) -> Tensor:
    return model(x, graph, task.pe)


def lp_pairs_and_labels(task: TaskData, split: str) -> tuple[Tensor, Tensor]:
    """Positives then negatives of ``split``; training negatives resampled if none are fixed."""
    pos = task.pos[split]
    neg = task.neg.get(split)
    if neg is None:
        from torch_geometric.utils import negative_sampling

        neg = negative_sampling(task.lp_graph["train"], task.num_nodes, pos.size(1))
    labels = torch.cat([torch.ones(pos.size(1)), torch.zeros(neg.size(1))]).to(pos.device)
    return torch.cat([pos, neg], 1), labels


def nc_loss(model: GraphModel, task: TaskData, z: Tensor) -> Tensor:
    idx = task.nodes["train"]
    return F.cross_entropy(model.nc_head(z[idx]), task.y[idx])


def lp_loss(model: GraphModel, task: TaskData, z: Tensor) -> Tensor:
    pairs, labels = lp_pairs_and_labels(task, "train")
    return F.binary_cross_entropy_with_logits(model.lp_head(z, pairs), labels)


@torch.no_grad()
def evaluate(model: GraphModel, task: TaskData, x: Tensor | None = None, phase: str = "test",
             hits_k: int = 10) -> dict[str, float]:
    """``nc_acc`` and/or ``lp_auc`` on ``phase``; at test also ``lp_mrr``/``lp_hits`` (hard)."""
    x = task.x if x is None else x
    model.eval()
    out: dict[str, float] = {}
    with no_mha_fastpath():
        if model.nc_head is not None:
            z = embed(model, task, x, task.nc_graph[phase])
            idx = task.nodes[phase]
            out["nc_acc"] = accuracy(model.nc_head(z[idx]), task.y[idx])
        if model.lp_head is not None:
            if model.nc_head is None or task.lp_graph[phase] is not task.nc_graph[phase]:
                z = embed(model, task, x, task.lp_graph[phase])
            pos, neg = task.pos[phase], task.neg[phase]
            out["lp_auc"] = roc_auc(model.lp_head(z, pos), model.lp_head(z, neg))
            if phase == "test" and task.hard_neg is not None:
                p, k, _ = task.hard_neg.shape
                neg_scores = model.lp_head(z, task.hard_neg.reshape(-1, 2).t()).view(p, k)
                ranks = ranks_among_negatives(model.lp_head(z, pos), neg_scores)
                out["lp_mrr"] = mean_reciprocal_rank(ranks)
                out["lp_hits"] = hits_at_k(ranks, hits_k)
    return out


def fit_loop(module: nn.Module, groups: list[dict], step_loss: Callable[[], Tensor],
             validate: Callable[[], float], config: FitConfig) -> FitResult:
    """The shared epoch loop: one step, one validation, early stopping, best restored."""
    optimizer = torch.optim.Adam(groups, lr=config.lr)
    stopper = EarlyStopping(config.patience)
    history: list[float] = []
    params = [p for g in groups for p in g["params"]]
    for epoch in range(1, config.epochs + 1):
        module.train()
        optimizer.zero_grad(set_to_none=True)
        loss = step_loss()
        if not torch.isfinite(loss):
            return FitResult(math.nan, stopper.best_epoch, epoch, history, diverged=True)
        loss.backward()
        if config.grad_clip > 0:                    # off by default (authors: none)
            nn.utils.clip_grad_norm_(params, config.grad_clip)
        optimizer.step()
        module.eval()
        with torch.no_grad(), no_mha_fastpath():
            score = validate()
        history.append(score)
        if stopper.update(score, module, epoch):
            break
    stopper.restore(module)
    return FitResult(stopper.best, stopper.best_epoch, len(history), history)


def fit_single(model: GraphModel, task: TaskData, config: FitConfig, target: str,
               x: Tensor | None = None) -> FitResult:
    """Train encoder + the ``target`` head (``nc`` or ``lp``), select on its validation score."""
    x = task.x if x is None else x
    nc = target == "nc"
    graph = (task.nc_graph if nc else task.lp_graph)["train"]
    loss = nc_loss if nc else lp_loss
    key = "nc_acc" if nc else "lp_auc"
    decay = config.weight_decay_nc if nc else config.weight_decay_lp
    groups = [{"params": list(model.parameters()), "weight_decay": decay}]
    return fit_loop(model, groups, lambda: loss(model, task, embed(model, task, x, graph)),
                    lambda: evaluate(model, task, x, "val")[key], config)


def fit_nc(model: GraphModel, task: TaskData, config: FitConfig,
           x: Tensor | None = None) -> FitResult:
    """Train encoder + NC head on training labels, select on validation accuracy."""
    return fit_single(model, task, config, "nc", x)


def fit_lp(model: GraphModel, task: TaskData, config: FitConfig,
           x: Tensor | None = None) -> FitResult:
    """Train encoder + LP head on training edges, select on validation ROC-AUC."""
    return fit_single(model, task, config, "lp", x)


class UncertaintyWeights(nn.Module):
    """Learned :math:`s_{NC}, s_{LP}` (log variances) of uncertainty weighting, init 0."""

    def __init__(self) -> None:
        super().__init__()
        self.log_var = nn.Parameter(torch.zeros(2))

    def forward(self, loss_nc: Tensor, loss_lp: Tensor) -> Tensor:
        s = self.log_var
        return 0.5 * (torch.exp(-s[0]) * loss_nc + torch.exp(-s[1]) * loss_lp + s.sum())


def fit_joint(model: GraphModel, task: TaskData, config: FitConfig,
              lam: float | None) -> tuple[FitResult, UncertaintyWeights | None]:
    """Train one encoder with both heads: ``lam`` weighting, or uncertainty weighting (None)."""
    weights = UncertaintyWeights().to(task.x.device) if lam is None else None

    def step_loss() -> Tensor:
        z_nc = embed(model, task, task.x, task.nc_graph["train"])
        same = task.lp_graph["train"] is task.nc_graph["train"]
        z_lp = z_nc if same else embed(model, task, task.x, task.lp_graph["train"])
        l_nc, l_lp = nc_loss(model, task, z_nc), lp_loss(model, task, z_lp)
        return weights(l_nc, l_lp) if weights is not None else lam * l_nc + (1 - lam) * l_lp

    def validate() -> float:
        scores = evaluate(model, task, None, "val")
        alpha = config.select_alpha
        return alpha * scores["nc_acc"] + (1 - alpha) * scores["lp_auc"]

    groups = [{"params": list(model.parameters()), "weight_decay": config.weight_decay_nc}]
    module: nn.Module = model
    if weights is not None:
        groups.append({"params": list(weights.parameters()), "weight_decay": 0.0})
        module = nn.ModuleList([model, weights])   # the weights are restored with the model
    return fit_loop(module, groups, step_loss, validate, config), weights
