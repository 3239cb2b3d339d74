r"""Graph statistics the recommender reads, from the training graph and training labels only.

With :math:`E_{tr}` the training positives, :math:`V_{tr}` the training nodes and
:math:`E_{tr}^{lab} = \{(u, v) \in E_{tr} : u, v \in V_{tr}\}` (both labels known):

* ``edge_homophily`` :math:`h_e = |\{(u,v) \in E_{tr}^{lab} : y_u = y_v\}| / |E_{tr}^{lab}|`;
* ``node_homophily`` :math:`h_n = \frac{1}{|V'|}\sum_{v \in V'} \frac{|\{u \in
  \mathcal N_{tr}(v) \cap V_{tr} : y_u = y_v\}|}{|\mathcal N_{tr}(v) \cap V_{tr}|}` over
  the training nodes :math:`V'` with at least one training neighbour;
* ``mean_degree`` :math:`2|E_{tr}| / N` and ``density`` :math:`|E_{tr}| / \binom N2`
  (of the message graph);
* ``feature_signal``: how much the features alone say about the label -- the
  accuracy :math:`a` of a nearest-class-mean classifier fit on one (fixed random)
  half of :math:`V_{tr}` and scored on the other (both ways, averaged), chance-adjusted
  :math:`(a - p_{maj}) / (1 - p_{maj})` with :math:`p_{maj}` the majority-class share
  of the training labels: 0 = no better than the majority guess, 1 = perfect.

Validation and test labels and edges are never read, so the statistics are safe to
use as a predictor's inputs (the audit can verify them, see :mod:`.audit`).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

STATISTICS = ("edge_homophily", "node_homophily", "mean_degree", "density", "feature_signal")


def edge_homophily(edges: Tensor, y: Tensor, known: Tensor) -> float:
    """:math:`h_e` over ``edges`` (2, E) whose endpoints both have ``known`` labels (mask)."""
    u, v = edges
    keep = known[u] & known[v]
    if not keep.any():
        return math.nan
    return float((y[u[keep]] == y[v[keep]]).double().mean())


def node_homophily(edges: Tensor, y: Tensor, known: Tensor) -> float:
    """:math:`h_n`: mean per-node share of same-label labelled neighbours (undirected)."""
    u, v = torch.cat([edges, edges.flip(0)], 1)
    keep = known[u] & known[v]
    u, v = u[keep], v[keep]
    n = y.numel()
    same = torch.zeros(n, dtype=torch.float64).index_add_(0, u, (y[u] == y[v]).double())
    total = torch.zeros(n, dtype=torch.float64).index_add_(0, u, torch.ones(u.numel(),
                                                                           dtype=torch.float64))
    has = total > 0
    return float((same[has] / total[has]).mean()) if has.any() else math.nan


def nearest_mean_accuracy(x: Tensor, y: Tensor, fit: Tensor, score: Tensor) -> float:
    """Accuracy on ``score`` nodes of the nearest class mean (Euclidean) fit on ``fit`` nodes."""
    classes = torch.unique(y[fit])
    means = torch.stack([x[fit][y[fit] == c].mean(0) for c in classes])
    pred = classes[torch.cdist(x[score].double(), means.double()).argmin(1)]
    return float((pred == y[score]).double().mean())


def feature_signal(x: Tensor, y: Tensor, train_nodes: Tensor) -> float:
    """Chance-adjusted two-fold nearest-class-mean accuracy on the training nodes."""
    shuffled = train_nodes[torch.randperm(len(train_nodes),
                                          generator=torch.Generator().manual_seed(0))]
    halves = (shuffled[0::2], shuffled[1::2])
    if min(len(h) for h in halves) == 0:
        return math.nan
    acc = 0.5 * (nearest_mean_accuracy(x, y, halves[0], halves[1])
                 + nearest_mean_accuracy(x, y, halves[1], halves[0]))
    majority = float(torch.bincount(y[train_nodes]).max()) / len(train_nodes)
    return (acc - majority) / (1 - majority) if majority < 1 else math.nan


def graph_statistics(x: Tensor, y: Tensor, split) -> dict[str, float]:
    """The :data:`STATISTICS` of one split (a :class:`~.split.GraphSplit`)."""
    n = y.numel()
    known = torch.zeros(n, dtype=torch.bool)
    known[split.train_nodes] = True
    train_edges = split.pos_edges["train"]
    e = train_edges.size(1)
    return {
        "edge_homophily": edge_homophily(train_edges, y, known),
        "node_homophily": node_homophily(train_edges, y, known),
        "mean_degree": 2 * e / n,
        "density": e / (n * (n - 1) / 2),
        "feature_signal": feature_signal(x.float(), y, split.train_nodes),
    }
