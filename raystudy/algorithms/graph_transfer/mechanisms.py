r"""Transfer mechanisms between NC and LP on one graph, each run end to end.

With :math:`f_\theta` an encoder, :math:`g_{NC}` / :math:`g_{LP}` the heads, and
:math:`S \to T` a source and a target task (RESEARCH.md, section 5):

=========================  ============================================================
mechanism                  what trains
=========================  ============================================================
``nc``, ``lp``             single-task baselines: :math:`f_\theta` + one head
``warm_nc_lp``,            warm start: train :math:`S`, then :math:`T` with its encoder
``warm_lp_nc``             initialised from :math:`S`'s, everything trainable
``frozen_replace_S_T``     frozen embeddings: :math:`Z_S = f_{\theta_S}(X)` computed once,
                           then a fresh :math:`T` model on input :math:`Z_S` ...
``frozen_concat_S_T``      ... or on :math:`[X \,\|\, Z_S]`
``joint_grid``             one encoder, both heads, :math:`\lambda\mathcal L_{NC} +
                           (1-\lambda)\mathcal L_{LP}` for each :math:`\lambda` of the grid;
                           the :math:`\lambda` of best validation
                           :math:`\tfrac12(\mathrm{acc} + \mathrm{AUC})` is kept
``joint_uw``               one encoder, both heads, uncertainty weighting
=========================  ============================================================

Pairing: every model is built right after ``torch.manual_seed(seed)`` and trained
after ``torch.manual_seed(seed + 1)``, so a source model equals the single-task
baseline of the same seed, a warm-started target differs from its baseline only in
the encoder's initial weights, and training draws (dropout, resampled negatives) do
not depend on the model's shape. Returned metrics
(plain keys, test split unless named ``val_``): ``nc_acc``, ``lp_auc``, ``lp_mrr``,
``lp_hits`` (with hard negatives), ``val_nc_acc``/``val_lp_auc``, ``source_val``,
``source_test``, ``epochs``, ``best_epoch``, ``lam``, ``score`` (the target's test
metric; for joint mechanisms the mean of accuracy and AUC).
"""

from __future__ import annotations

import functools
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from .models import EncoderConfig, GraphModel, build_model, no_mha_fastpath
from .protocol import TaskData
from .train import FitConfig, FitResult, evaluate, fit_joint, fit_single


@dataclass(frozen=True)
class Mechanism:
    name: str
    kind: str
    """single | warm | frozen_replace | frozen_concat | joint_grid | joint_uw."""
    target: str
    """nc | lp | both."""
    source: str | None = None


def _table() -> dict[str, Mechanism]:
    rows = [Mechanism("nc", "single", "nc"), Mechanism("lp", "single", "lp")]
    for s, t in (("nc", "lp"), ("lp", "nc")):
        rows.append(Mechanism(f"warm_{s}_{t}", "warm", t, s))
        for how in ("replace", "concat"):
            rows.append(Mechanism(f"frozen_{how}_{s}_{t}", f"frozen_{how}", t, s))
    rows += [Mechanism("joint_grid", "joint_grid", "both"),
             Mechanism("joint_uw", "joint_uw", "both")]
    return {m.name: m for m in rows}


MECHANISMS = _table()


@dataclass(frozen=True)
class RunSpec:
    """Everything but the data that fixes a mechanism's run."""

    backbone: str = "gcn"
    encoder: EncoderConfig = EncoderConfig()
    fit: FitConfig = FitConfig()
    seed: int = 0
    lambdas: tuple[float, ...] = (0.1, 0.3, 0.5, 0.7, 0.9)
    hits_k: int = 10


def _seed(seed: int) -> None:
    torch.manual_seed(seed)
    random.seed(seed)    # PyG's negative_sampling draws with Python's random


def train_single(task: TaskData, spec: RunSpec, target: str, x: Tensor | None = None,
                 init_encoder: dict[str, Tensor] | None = None) -> tuple[GraphModel, FitResult]:
    """A fresh ``target`` model (seeded), optionally warm-started, trained with early stopping."""
    x = task.x if x is None else x
    _seed(spec.seed)
    model = build_model(spec.backbone, x.size(1), task.num_nodes, spec.encoder,
                        num_classes=task.num_classes if target == "nc" else 0,
                        link=target == "lp").to(task.x.device)
    if init_encoder is not None:
        model.encoder.load_state_dict(init_encoder)
    _seed(spec.seed + 1)   # dropout and negatives draw the same, whatever the model's shape
    return model, fit_single(model, task, spec.fit, target, x)


@torch.no_grad()
def embeddings(model: GraphModel, task: TaskData, source: str) -> Tensor:
    """The source encoder's :math:`Z` (N, hidden) on the source task's test-phase graph."""
    model.eval()
    graph = (task.nc_graph if source == "nc" else task.lp_graph)["test"]
    with no_mha_fastpath():
        return model(task.x, graph, task.pe).detach()


def _metrics(model: GraphModel, task: TaskData, spec: RunSpec, result: FitResult,
             x: Tensor | None = None) -> dict[str, float]:
    out = dict(evaluate(model, task, x, "test", spec.hits_k))
    out.update({f"val_{k}": v for k, v in evaluate(model, task, x, "val").items()})
    out.update(epochs=float(result.epochs_run), best_epoch=float(result.best_epoch))
    if result.diverged:
        out = {k: math.nan for k in out}
    return out


def joint_run(lam: float | None, task: TaskData, spec: RunSpec) -> dict[str, float]:
    """One joint model: ``lam`` weighting, or uncertainty weighting when ``lam`` is None."""
    _seed(spec.seed)
    model = build_model(spec.backbone, task.x.size(1), task.num_nodes, spec.encoder,
                        num_classes=task.num_classes, link=True).to(task.x.device)
    _seed(spec.seed + 1)
    result, weights = fit_joint(model, task, spec.fit, lam)
    out = _metrics(model, task, spec, result)
    out["val_select"] = result.best_val
    out["lam"] = math.nan if lam is None else float(lam)
    if weights is not None:  # effective task weights 1/(2 sigma^2) at the best epoch
        w = 0.5 * torch.exp(-weights.log_var.detach()).cpu()
        out.update(weight_nc=float(w[0]), weight_lp=float(w[1]))
    return out


def run_mechanism(name: str, task: TaskData, spec: RunSpec,
                  map_fn: Callable[[Callable[[Any], Any], Sequence[Any]], list[Any]]
                  | None = None) -> dict[str, float]:
    """Run mechanism ``name`` (:data:`MECHANISMS`) and return its metrics (module docstring).

    ``map_fn(fn, items)``: how the joint grid's independent runs are spread (default:
    a plain loop); ``fn`` is a picklable ``functools.partial``.
    """
    if name not in MECHANISMS:
        raise ValueError(f"unknown mechanism {name!r}; use one of {', '.join(MECHANISMS)}")
    mech = MECHANISMS[name]
    if mech.kind == "joint_uw":
        out = joint_run(None, task, spec)
    elif mech.kind == "joint_grid":
        fn = functools.partial(joint_run, task=task, spec=spec)
        runs = (map_fn or (lambda f, xs: [f(v) for v in xs]))(fn, list(spec.lambdas))
        best = max(range(len(runs)), key=lambda i: -math.inf if math.isnan(
            runs[i]["val_select"]) else runs[i]["val_select"])
        out = dict(runs[best])
        for run in runs:
            out[f"lam_{run['lam']:g}_select"] = run["val_select"]
    elif mech.kind == "single":
        model, result = train_single(task, spec, mech.target)
        out = _metrics(model, task, spec, result)
    else:
        source, source_fit = train_single(task, spec, mech.source)
        key = "nc_acc" if mech.source == "nc" else "lp_auc"
        source_scores = {"source_val": source_fit.best_val,
                         "source_test": evaluate(source, task, None, "test")[key]}
        if mech.kind == "warm":
            model, result = train_single(task, spec, mech.target,
                                         init_encoder=source.encoder.state_dict())
            out = _metrics(model, task, spec, result)
        else:
            z = embeddings(source, task, mech.source)
            x = z if mech.kind == "frozen_replace" else torch.cat([task.x, z], 1)
            model, result = train_single(task, spec, mech.target, x)
            out = _metrics(model, task, spec, result, x)
        out.update(source_scores)
    if mech.target == "both":
        out["score"] = 0.5 * (out["nc_acc"] + out["lp_auc"])
    else:
        out["score"] = out["nc_acc" if mech.target == "nc" else "lp_auc"]
    return out
