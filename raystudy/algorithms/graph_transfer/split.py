r"""The leakage-free node and edge split of same-graph NC <-> LP transfer.

Akula, Kumar, Kantarcioglu, Coskunuzer, "Same Graph Cross-Task Transfer in GNNs:
Protocols and Predictors" (ICML 2026). On an undirected graph :math:`G = (V, E)`,
:math:`N = |V|`, with every edge stored once as :math:`(u, v)`, :math:`u < v`, and no
self loops:

.. math::
    V &= V_{train} \sqcup V_{val} \sqcup V_{test}
        \quad (60/20/20,\ \text{a fresh permutation per seed}), \\
    E &= E_{train} \sqcup E_{val} \sqcup E_{test} \quad (80/10/10), \\
    A_{msg} &= E_{train} \cup E_{train}^{\top}
        \quad (\text{the one message-passing graph}), \\
    N_s &\subset \{(u, v) : u < v\} \setminus E, \quad |N_s| = |E_s|,
        \quad N_{train}, N_{val}, N_{test}\ \text{pairwise disjoint}.

Every model -- NC or LP, source or target, in training and in every evaluation --
passes messages over :math:`A_{msg}` only, so no validation or test edge is ever
seen. The negatives :math:`N_s` are drawn once, with one seeded generator, and stay
fixed across epochs. They exclude every positive of every split (a test negative
that is a training positive would be scored low for the wrong reason) and each
other (a test negative that was a training negative was trained on).
:func:`raystudy.algorithms.graph_transfer.audit.audit` checks all of it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

SPLITS = ("train", "val", "test")


@dataclass
class GraphSplit:
    """One seed's split. Node tensors are 1-D indices; edge tensors are ``(2, E_s)``."""

    train_nodes: Tensor
    val_nodes: Tensor
    test_nodes: Tensor
    pos_edges: dict[str, Tensor]
    """Positive edges per split (``"train"``, ``"val"``, ``"test"``), ``u < v``."""
    neg_edges: dict[str, Tensor]
    """Negative pairs per split, as many as positives, ``u < v``, disjoint from all."""
    message_edge_index: Tensor
    """``(2, 2 |E_train|)``: the training positives in both directions."""


def undirected_edges(edge_index: Tensor, num_nodes: int) -> Tensor:
    """Each undirected edge once as ``(u, v)`` with ``u < v``; self loops dropped, sorted."""
    u, v = edge_index.long()
    keep = u != v
    lo, hi = torch.minimum(u[keep], v[keep]), torch.maximum(u[keep], v[keep])
    keys = torch.unique(lo * num_nodes + hi)
    return torch.stack([keys // num_nodes, keys % num_nodes])


def edge_keys(edges: Tensor, num_nodes: int) -> Tensor:
    """One integer per pair, ``u * N + v`` (pairs must already be ordered ``u < v``)."""
    return edges[0].long() * num_nodes + edges[1].long()


def both_directions(edges: Tensor) -> Tensor:
    """``(2, E)`` undirected edges -> ``(2, 2E)`` directed message-passing edges."""
    return torch.cat([edges, edges.flip(0)], dim=1)


def add_new_keys(chosen: Tensor, keys: Tensor, forbidden: Tensor, count: int) -> Tensor:
    """``chosen`` plus the drawn ``keys`` in neither ``forbidden`` nor ``chosen``, up to ``count``.

    Each new key enters once, at its first occurrence in draw order, so a seeded
    draw gives the same result on every machine.
    """
    keys = keys[~torch.isin(keys, forbidden) & ~torch.isin(keys, chosen)]
    uniq, inverse = torch.unique(keys, return_inverse=True)
    first = torch.full((uniq.numel(),), keys.numel(), dtype=torch.long)
    first.scatter_reduce_(0, inverse, torch.arange(keys.numel()), reduce="amin")
    return torch.cat([chosen, keys[first.sort().values]])[:count]


def sample_negatives(
    count: int, num_nodes: int, forbidden: Tensor, generator: torch.Generator
) -> Tensor:
    """``count`` distinct pairs ``u < v``, uniform over those whose key is not in ``forbidden``.

    Rejection sampling in batches with ``generator``; the result is fixed by the
    generator's state. Raises ValueError when fewer than ``count`` pairs are free.
    """
    free = num_nodes * (num_nodes - 1) // 2 - int(forbidden.numel())
    if count > free:
        raise ValueError(f"asked for {count} negative pairs but only {free} non-edges exist")
    forbidden = torch.unique(forbidden)
    chosen = torch.empty(0, dtype=torch.long)
    while chosen.numel() < count:
        batch = 2 * (count - chosen.numel()) + 64
        u = torch.randint(num_nodes, (batch,), generator=generator)
        v = torch.randint(num_nodes, (batch,), generator=generator)
        keep = u != v
        keys = torch.minimum(u, v)[keep] * num_nodes + torch.maximum(u, v)[keep]
        chosen = add_new_keys(chosen, keys, forbidden, count)
    return torch.stack([chosen // num_nodes, chosen % num_nodes])


def split_sizes(total: int, fractions: tuple[float, float, float]) -> tuple[int, int, int]:
    """Train/val/test counts: val and test rounded, train gets the rest."""
    if len(fractions) != 3 or min(fractions) < 0 or abs(sum(fractions) - 1) > 1e-6:
        raise ValueError(f"split fractions {fractions} must be three numbers >= 0 summing to 1")
    n_val, n_test = round(fractions[1] * total), round(fractions[2] * total)
    return total - n_val - n_test, n_val, n_test


def split_nodes(num_nodes: int, fractions: tuple[float, float, float],
                generator: torch.Generator) -> dict[str, Tensor]:
    """A random permutation of the nodes cut into sorted train/val/test index tensors."""
    order = torch.randperm(num_nodes, generator=generator)
    n_train, n_val, _ = split_sizes(num_nodes, fractions)
    return {"train": order[:n_train].sort().values,
            "val": order[n_train:n_train + n_val].sort().values,
            "test": order[n_train + n_val:].sort().values}


def leakage_free_split(
    data,
    seed: int,
    node_split: tuple[float, float, float] = (0.6, 0.2, 0.2),
    edge_split: tuple[float, float, float] = (0.8, 0.1, 0.1),
) -> GraphSplit:
    """Split ``data`` (``num_nodes``, ``edge_index``) for seed ``seed``; see the module docstring.

    The node permutation, the edge permutation and every negative come from one
    ``torch.Generator`` seeded with ``seed``: the same seed gives the same split.
    """
    n = int(data.num_nodes)
    generator = torch.Generator().manual_seed(int(seed))
    nodes = split_nodes(n, node_split, generator)
    edges = undirected_edges(data.edge_index, n)
    edges = edges[:, torch.randperm(edges.size(1), generator=generator)]
    e_train, e_val, _ = split_sizes(edges.size(1), edge_split)
    pos = {"train": edges[:, :e_train], "val": edges[:, e_train:e_train + e_val],
           "test": edges[:, e_train + e_val:]}

    forbidden = edge_keys(edges, n)  # every positive of every split
    neg = {}
    for name in SPLITS:
        neg[name] = sample_negatives(pos[name].size(1), n, forbidden, generator)
        forbidden = torch.cat([forbidden, edge_keys(neg[name], n)])
    return GraphSplit(nodes["train"], nodes["val"], nodes["test"], pos, neg,
                      both_directions(pos["train"]))
