r"""Contextual stochastic block models: graphs of controlled homophily, built offline.

:math:`N` nodes in :math:`C` balanced classes :math:`y_i`; :math:`E = \mathrm{round}(N
\bar d / 2)` distinct undirected edges, of which :math:`\mathrm{round}(hE)` join two
nodes of the same class and the rest two nodes of different classes, each drawn
uniformly among such pairs. So the edge homophily is :math:`h` (up to rounding) for
every :math:`h \in [0, 1]` -- heterophilous at :math:`h < 1/C`, homophilous near 1 --
while the degree distribution stays the same. Features are Gaussian around a class
mean (Deshpande et al. 2018's contextual SBM, multi-class):

.. math::  x_i = s\,\mu_{y_i} + \varepsilon_i, \qquad \mu_c^\top\mu_{c'} = \delta_{cc'},
           \quad \varepsilon_i \sim \mathcal N(0, I_F),

with orthonormal class means (a random rotation; :math:`F \ge C`), so every two class
means sit exactly :math:`\|s\mu_c - s\mu_{c'}\| / \sigma = s\sqrt2` noise standard
deviations apart: ``s`` (``feature_signal``) is the feature signal-to-noise ratio, the
axis on which the features alone reveal more or less of the label. Projected on the
means, :math:`x_i^\top\mu_c = s\,[c = y_i] + z_c` with independent standard normal
:math:`z_c`, so the best any classifier of the features alone can do is

.. math::  \mathrm{acc}^\star(s, C) = \int \varphi(z)\,\Phi(z + s)^{C-1}\,dz

(:func:`bayes_accuracy`): 1/C at :math:`s = 0`, rising to 1 -- the NC task is
unsaturated by features at low SNR and saturated at high SNR.

In a plain CSBM edges are independent given the classes, so link prediction can use
class information only (its ROC-AUC is capped near 0.5 when :math:`h \approx 1/C`).
Real graphs also have local structure: with ``locality`` :math:`\tau > 0` every node
gets a hidden position :math:`\phi_i` on a unit circle and the second endpoint of
each drawn edge is chosen with weight :math:`e^{-d(\phi_u, \phi_v)/\tau}` among the
nodes of the required class relation, so edges close triangles (common neighbours)
while the edge homophily stays exactly :math:`h`.

Names: ``csbm-h0.7`` with optional ``-n600`` (nodes), ``-c4`` (classes), ``-d8``
(mean degree), ``-s1.0`` (feature signal = SNR), ``-f32`` (feature dimension), ``-l0.05``
(locality); unnamed
values come from the caller's defaults. The name fixes the graph, so every setting
has its own name (unlike ``RandomPartitionGraphDataset``'s cache name, which rounds
the homophily to one decimal).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace

import torch
from scipy import integrate, stats
from torch_geometric.data import Data

from .split import add_new_keys

_TOKENS = {"n": ("num_nodes", int), "c": ("num_classes", int), "d": ("avg_degree", float),
           "h": ("homophily", float), "s": ("feature_signal", float),
           "f": ("feature_dim", int), "l": ("locality", float)}


@dataclass(frozen=True)
class CSBM:
    """The parameters of one contextual SBM (see the module docstring)."""

    homophily: float = 0.5
    num_nodes: int = 600
    num_classes: int = 4
    avg_degree: float = 8.0
    feature_signal: float = 1.0
    feature_dim: int = 32
    locality: float = 0.0


def is_synthetic(name: str) -> bool:
    return name.lower().startswith("csbm-")


def parse_csbm(name: str, defaults: CSBM = CSBM()) -> CSBM:
    """``csbm-h0.7-d8`` -> CSBM(homophily=0.7, avg_degree=8, rest from ``defaults``)."""
    parts = name.lower().split("-")
    if parts[0] != "csbm" or len(parts) < 2:
        raise ValueError(f"synthetic dataset {name!r}: expected csbm-h<homophily>[-n..-c..-d..]")
    values = {}
    for part in parts[1:]:
        match = re.fullmatch(r"([a-z])([0-9.]+)", part)
        if not match or match.group(1) not in _TOKENS:
            raise ValueError(f"synthetic dataset {name!r}: bad token {part!r}; use "
                             "h (homophily), n, c, d, s, f, l followed by a number")
        field, kind = _TOKENS[match.group(1)]
        try:
            values[field] = kind(match.group(2))
        except ValueError:
            raise ValueError(f"synthetic dataset {name!r}: {part!r} is not a number") from None
    params = replace(defaults, **values)
    if not 0 <= params.homophily <= 1:
        raise ValueError(f"synthetic dataset {name!r}: homophily must be in [0, 1]")
    if params.num_classes < 2 or params.num_nodes < 4 * params.num_classes:
        raise ValueError(f"synthetic dataset {name!r}: needs >= 2 classes and >= 4 nodes each")
    if not 0 < params.avg_degree < params.num_nodes / params.num_classes:
        raise ValueError(f"synthetic dataset {name!r}: mean degree must be in (0, N/C)")
    if params.feature_dim < params.num_classes:
        raise ValueError(f"synthetic dataset {name!r}: feature dimension must be >= the "
                         "number of classes (orthonormal class means)")
    if params.feature_signal < 0:
        raise ValueError(f"synthetic dataset {name!r}: feature signal must be >= 0")
    return params


def _draw_pairs(count: int, y: torch.Tensor, same: bool, generator: torch.Generator,
                taken: torch.Tensor, position: torch.Tensor | None = None,
                locality: float = 0.0) -> torch.Tensor:
    r"""``count`` new distinct keys ``u*N+v`` (u < v) with ``y_u == y_v`` iff ``same``.

    ``u`` is uniform; ``v`` uniform among the allowed nodes, or, with ``locality``
    :math:`\tau > 0`, drawn with weight :math:`e^{-d(\phi_u, \phi_v)/\tau}` by circular
    distance of the latent ``position`` :math:`\phi \in [0, 1)`.
    """
    n = y.numel()
    chosen = torch.empty(0, dtype=torch.long)
    while chosen.numel() < count:
        batch = 2 * (count - chosen.numel()) + 64
        u = torch.randint(n, (batch,), generator=generator)
        if locality > 0:
            rows = max(1, 2 ** 22 // n)
            v = torch.cat([_local_targets(u[i:i + rows], y, same, position, locality, generator)
                           for i in range(0, batch, rows)])
        else:
            v = torch.randint(n, (batch,), generator=generator)
        keep = (u != v) & ((y[u] == y[v]) == same)
        keys = torch.minimum(u, v)[keep] * n + torch.maximum(u, v)[keep]
        chosen = add_new_keys(chosen, keys, taken, count)
    return chosen


def _local_targets(u: torch.Tensor, y: torch.Tensor, same: bool, position: torch.Tensor,
                   locality: float, generator: torch.Generator) -> torch.Tensor:
    gap = (position[u].view(-1, 1) - position.view(1, -1)).abs()
    weight = torch.exp(-torch.minimum(gap, 1 - gap) / locality)
    allowed = (y[u].view(-1, 1) == y.view(1, -1)) == same
    allowed[torch.arange(u.numel()), u] = False
    return torch.multinomial(weight * allowed, 1, generator=generator).view(-1)


def contextual_sbm(params: CSBM, seed: int = 0) -> Data:
    """One graph: ``x`` (N, F) float, ``y`` (N,) long, ``edge_index`` both directions."""
    n, c = params.num_nodes, params.num_classes
    generator = torch.Generator().manual_seed(int(seed))
    y = (torch.arange(n) % c)[torch.randperm(n, generator=generator)]
    total = round(n * params.avg_degree / 2)
    n_same = round(params.homophily * total)
    position = torch.rand(n, generator=generator) if params.locality > 0 else None
    same = _draw_pairs(n_same, y, True, generator, torch.empty(0, dtype=torch.long), position,
                       params.locality)
    other = _draw_pairs(total - n_same, y, False, generator, same, position, params.locality)
    keys = torch.cat([same, other]).sort().values
    edges = torch.stack([keys // n, keys % n])
    # orthonormal class means: Q of a Gaussian (F, C) matrix, a uniformly random frame
    mu = torch.linalg.qr(torch.randn(params.feature_dim, c, generator=generator)).Q.t()
    x = params.feature_signal * mu[y] + torch.randn(n, params.feature_dim, generator=generator)
    return Data(x=x, y=y, edge_index=torch.cat([edges, edges.flip(0)], 1), num_nodes=n,
                class_means=mu)


def bayes_accuracy(signal: float, num_classes: int) -> float:
    r"""The best accuracy from features alone, :math:`\int\varphi(z)\Phi(z+s)^{C-1}dz`
    (module docstring): the true class's projection must beat the C - 1 others."""
    value, _ = integrate.quad(lambda z: stats.norm.pdf(z) * stats.norm.cdf(z + signal)
                              ** (num_classes - 1), -math.inf, math.inf)
    return float(value)
