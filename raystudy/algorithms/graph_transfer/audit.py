"""The audit of a leakage-free split: every property the protocol promises, checked.

``audit(split, data)`` raises :class:`LeakageError` naming the first property broken,
in this order:

1. nodes: ``train_nodes``, ``val_nodes``, ``test_nodes`` are 1-D integer indices,
   pairwise disjoint, and together cover every node exactly once;
2. edge dicts: ``pos_edges`` and ``neg_edges`` have exactly the keys train/val/test,
   each a ``(2, E)`` integer tensor of node ids with ``u < v`` (so no self loops),
   every pair stored once;
3. positives: the three positive splits are pairwise disjoint and together are
   exactly the graph's undirected edges;
4. the message graph is exactly the training positives in both directions (a
   validation or test edge in it is named as such);
5. negatives: as many as positives per split, none of them a positive of any split,
   and the three negative splits pairwise disjoint;
6. optional: ``pe`` equals the random-walk encoding of the message graph, and
   ``stats`` equal the statistics of the training graph and training labels.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
from torch import Tensor

from .split import SPLITS, GraphSplit, both_directions, edge_keys, undirected_edges


class LeakageError(ValueError):
    """A split that breaks a property of the leakage-free protocol (the message names it)."""


def _pair(key: int, n: int) -> str:
    return f"({key // n}, {key % n})"


def _check_nodes(split: GraphSplit, n: int) -> None:
    parts = {"train_nodes": split.train_nodes, "val_nodes": split.val_nodes,
             "test_nodes": split.test_nodes}
    for name, idx in parts.items():
        if not isinstance(idx, Tensor) or idx.dim() != 1 or idx.is_floating_point():
            raise LeakageError(f"{name} must be a 1-D integer tensor of node indices")
        if idx.numel() and (idx.min() < 0 or idx.max() >= n):
            raise LeakageError(f"{name} has a node index outside [0, {n})")
    names = list(parts)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            common = parts[a][torch.isin(parts[a], parts[b])]
            if common.numel():
                raise LeakageError(f"{a} and {b} are not disjoint: node {int(common[0])} "
                                   "is in both")
    counts = torch.bincount(torch.cat(list(parts.values())).long(), minlength=n)
    if (counts > 1).any():
        raise LeakageError(f"node {int((counts > 1).nonzero()[0])} appears twice in one split")
    if (counts == 0).any():
        raise LeakageError(f"the node splits do not cover every node: node "
                           f"{int((counts == 0).nonzero()[0])} is in none")


def _check_edges(kind: str, edges: Mapping[str, Tensor], n: int) -> dict[str, Tensor]:
    if not isinstance(edges, Mapping) or set(edges) != set(SPLITS):
        got = sorted(edges) if isinstance(edges, Mapping) else type(edges).__name__
        raise LeakageError(f"{kind} must be a dict keyed train/val/test, got {got}")
    keys = {}
    for name in SPLITS:
        e = edges[name]
        label = f"{kind}[{name!r}]"
        if not isinstance(e, Tensor) or e.dim() != 2 or e.size(0) != 2 or e.is_floating_point():
            raise LeakageError(f"{label} must be a (2, E) integer tensor")
        if e.numel() and (e.min() < 0 or e.max() >= n):
            raise LeakageError(f"{label} has a node index outside [0, {n})")
        loops = (e[0] == e[1]).nonzero()
        if loops.numel():
            raise LeakageError(f"{label} has a self loop at node {int(e[0, loops[0, 0]])}")
        flipped = (e[0] > e[1]).nonzero()
        if flipped.numel():
            j = int(flipped[0, 0])
            raise LeakageError(f"{label} stores ({int(e[0, j])}, {int(e[1, j])}) with u > v; "
                               "undirected edges are stored once as u < v")
        k = edge_keys(e, n)
        uniq, counts = torch.unique(k, return_counts=True)
        if (counts > 1).any():
            raise LeakageError(f"{label} stores {_pair(int(uniq[counts > 1][0]), n)} twice")
        keys[name] = k
    return keys


def _check_disjoint(kind: str, keys: dict[str, Tensor], n: int) -> None:
    for i, a in enumerate(SPLITS):
        for b in SPLITS[i + 1:]:
            common = keys[a][torch.isin(keys[a], keys[b])]
            if common.numel():
                raise LeakageError(f"{kind}[{a!r}] and {kind}[{b!r}] share "
                                   f"{_pair(int(common[0]), n)}")


def _check_message_graph(split: GraphSplit, pos_keys: dict[str, Tensor], n: int) -> None:
    m = split.message_edge_index
    if not isinstance(m, Tensor) or m.dim() != 2 or m.size(0) != 2 or m.is_floating_point():
        raise LeakageError("message_edge_index must be a (2, M) integer tensor")
    lo, hi = torch.minimum(m[0], m[1]).long(), torch.maximum(m[0], m[1]).long()
    if (lo == hi).any():
        raise LeakageError(f"message_edge_index has a self loop at node {int(lo[lo == hi][0])}")
    keys = lo * n + hi
    for name in ("val", "test"):
        leaked = keys[torch.isin(keys, pos_keys[name])]
        if leaked.numel():
            raise LeakageError(f"message_edge_index contains {_pair(int(leaked[0]), n)}, a "
                               f"{'validation' if name == 'val' else 'test'} edge "
                               f"(pos_edges[{name!r}])")
    stray = keys[~torch.isin(keys, pos_keys["train"])]
    if stray.numel():
        raise LeakageError(f"message_edge_index contains {_pair(int(stray[0]), n)}, "
                           "which is not a training positive")
    directed = m[0].long() * n + m[1].long()
    expected = edge_keys(both_directions(split.pos_edges["train"]), n)
    missing = expected[~torch.isin(expected, directed)]
    if missing.numel():
        raise LeakageError(f"message_edge_index lacks the directed edge "
                           f"{_pair(int(missing[0]), n)} of a training positive")
    if directed.numel() != torch.unique(directed).numel():
        raise LeakageError("message_edge_index repeats a directed edge")


def audit(split: GraphSplit, data, *, pe: Tensor | None = None,
          stats: Mapping[str, float] | None = None) -> None:
    """Check ``split`` against ``data`` (``num_nodes``, ``edge_index``; ``y`` for ``stats``).

    Raises :class:`LeakageError` naming the first broken property (module docstring).
    ``pe``: positional encodings to verify against the message graph's random-walk
    encoding; ``stats``: dataset statistics to verify against the training graph.
    """
    n = int(data.num_nodes)
    _check_nodes(split, n)
    pos = _check_edges("pos_edges", split.pos_edges, n)
    neg = _check_edges("neg_edges", split.neg_edges, n)
    _check_disjoint("pos_edges", pos, n)
    graph = edge_keys(undirected_edges(data.edge_index, n), n)
    all_pos = torch.cat([pos[s] for s in SPLITS])
    for name in SPLITS:
        fake = pos[name][~torch.isin(pos[name], graph)]
        if fake.numel():
            raise LeakageError(f"pos_edges[{name!r}] has {_pair(int(fake[0]), n)}, "
                               "which is not an edge of the graph")
    uncovered = graph[~torch.isin(graph, all_pos)]
    if uncovered.numel():
        raise LeakageError(f"the positive splits do not cover the graph: edge "
                           f"{_pair(int(uncovered[0]), n)} is in none")
    _check_message_graph(split, pos, n)
    for name in SPLITS:
        if neg[name].numel() != pos[name].numel():
            raise LeakageError(f"neg_edges[{name!r}] has {neg[name].numel()} pairs for "
                               f"{pos[name].numel()} positives; expected as many")
        hit = neg[name][torch.isin(neg[name], all_pos)]
        if hit.numel():
            owner = next(s for s in SPLITS if torch.isin(hit[:1], pos[s]).any())
            raise LeakageError(f"neg_edges[{name!r}] contains {_pair(int(hit[0]), n)}, a "
                               f"positive edge (in pos_edges[{owner!r}])")
    _check_disjoint("neg_edges", neg, n)
    if pe is not None:
        from .models import random_walk_pe

        expected_pe = random_walk_pe(split.message_edge_index, n, pe.size(1))
        if pe.shape != expected_pe.shape or not torch.allclose(pe.float(), expected_pe,
                                                               atol=1e-5):
            raise LeakageError("pe is not the random-walk encoding of the message graph "
                               "(positional encodings must come from the training graph)")
    if stats is not None:
        from .stats import graph_statistics

        expected = graph_statistics(data.x, data.y, split)
        for key, value in stats.items():
            if key not in expected or abs(float(value) - expected[key]) > 1e-6:
                raise LeakageError(f"stats[{key!r}]={value} is not the value computed from "
                                   "the training graph and training labels")
