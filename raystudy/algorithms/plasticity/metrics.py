"""One metrics pass at a task boundary: feature ranks, dormant units, weights, Hessian.

``feature_metrics`` and ``hessian_metrics`` return flat dicts with namespaced keys, ready
for any logger:

* ``features/erank/l{l}``, ``features/srank/l{l}``, ``features/dormant/l{l}`` (fraction
  with ReDo score <= tau), ``features/dead/l{l}`` (count), for hidden layers l = 1..L,
  and their means over layers ``features/erank``, ``features/srank``, ``features/dormant``
  and the total ``features/dead``;
* ``hessian/lambda_{i}`` (top Ritz values, i = 1..top_k); the epsilon-ranks
  (:func:`~.hessian.epsilon_rank`): ``hessian/eps_rank`` (the authors' trapezoid rule at the
  fixed ``eps``), ``hessian/eps_rank_riemann`` (raystudy's earlier grid-point sum, same
  ``eps``), ``hessian/eps_rank_quad`` (the quadrature weights, no kernel, same ``eps``),
  ``hessian/eps_rank_quad_rel`` (the quadrature weights at the relative threshold
  ``rel_eps * |lambda|_max``: scale-invariant), ``hessian/eps_rank_rel`` (the trapezoid
  rule at that relative threshold), and ``hessian/eps_rank@{e:g}`` (trapezoid) for every
  ``e`` of ``eps_grid`` (for choosing eps afterwards, as the authors did);
  ``hessian/trace_density`` (the density's mean times the number of parameters, an
  estimate of the trace) and ``hessian/seconds``.

One Lanczos run per probe gives both the top eigenvalues and the density.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from .hessian import LossFn, epsilon_rank, hessian_spectral_density
from .ranks import dead_units, dormant_fraction, effective_rank_of, singular_values, srank_of

EPS_GRID: tuple[float, ...] = tuple(float(f"{e:.3g}") for e in np.logspace(-2, 0, 50))
"""Thresholds reported for the post-hoc choice, the authors' grid (lop-jax
``analysis/fig5.py``: 50 log-spaced values from 1e-2 to 1), to 3 significant digits."""


def eps_key(eps: float) -> str:
    """The report key of the epsilon-rank at threshold ``eps`` (``hessian/eps_rank@0.02``)."""
    return f"hessian/eps_rank@{eps:g}"


@torch.no_grad()
def feature_metrics(features: Sequence[Tensor], tau: float = 0.025,
                    delta: float = 0.01) -> dict[str, float]:
    """Effective rank, srank, dormant fraction and dead units per hidden layer and overall."""
    out: dict[str, float] = {}
    for i, h in enumerate(features, start=1):
        s = singular_values(h)
        out[f"features/erank/l{i}"] = float(effective_rank_of(s))
        out[f"features/srank/l{i}"] = float(srank_of(s, delta))
        out[f"features/dormant/l{i}"] = dormant_fraction(h, tau)
        out[f"features/dead/l{i}"] = float(dead_units(h))
    for name in ("erank", "srank", "dormant"):
        out[f"features/{name}"] = float(np.mean([out[f"features/{name}/l{i}"]
                                                 for i in range(1, len(features) + 1)]))
    out["features/dead"] = float(sum(out[f"features/dead/l{i}"]
                                     for i in range(1, len(features) + 1)))
    return out


@torch.no_grad()
def weight_norm(model: nn.Module) -> float:
    """:math:`\\|\\theta\\|_2` over all parameters."""
    return float(torch.sqrt(sum(p.double().pow(2).sum() for p in model.parameters())))


def hessian_metrics(model: nn.Module, loss_fn: LossFn, inputs: Any, targets: Any,
                    iterations: int = 100, probes: int = 1, sigma2: float = 1e-5,
                    top_k: int = 5, eps: float = 0.02, rel_eps: float = 1e-3,
                    eps_grid: Sequence[float] = EPS_GRID,
                    generator: torch.Generator | None = None,
                    batch_size: int | None = None) -> dict[str, float]:
    """Top eigenvalues, epsilon-ranks and trace estimate from one SLQ pass."""
    start = time.perf_counter()
    density = hessian_spectral_density(model, loss_fn, inputs, targets, iterations, probes,
                                       sigma2, generator=generator, batch_size=batch_size)
    params = sum(p.numel() for p in model.parameters())
    out = {f"hessian/lambda_{i}": float(v)
           for i, v in enumerate(density.top(top_k).tolist(), start=1)}
    out["hessian/eps_rank"] = epsilon_rank(density, eps)
    out["hessian/eps_rank_riemann"] = epsilon_rank(density, eps, method="riemann")
    out["hessian/eps_rank_quad"] = epsilon_rank(density, eps, method="quadrature")
    out["hessian/eps_rank_quad_rel"] = epsilon_rank(density, rel_eps, relative=True,
                                                    method="quadrature")
    out["hessian/eps_rank_rel"] = epsilon_rank(density, rel_eps, relative=True)
    out.update({eps_key(e): epsilon_rank(density, e) for e in eps_grid})
    out["hessian/trace_density"] = density.quadrature_moment(1) * params
    out["hessian/seconds"] = time.perf_counter() - start
    return out
