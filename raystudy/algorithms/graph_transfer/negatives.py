r"""Per-positive hard negatives in the style of HeaRT (Li et al. 2023, "Evaluating Graph
Neural Networks for Link Prediction: Current Pitfalls and New Benchmarking").

Random negatives are mostly far-apart pairs, which any model ranks below a true
edge: scores against them are inflated. HeaRT instead gives each positive
:math:`(a, b)` its own :math:`K` negatives, corruptions of one endpoint chosen by a
heuristic: :math:`K/2` pairs :math:`(a, c)` and :math:`K/2` pairs :math:`(c, b)`, the
:math:`c` of highest resource allocation

.. math::  \mathrm{RA}(a, c) = \sum_{w \in \mathcal N(a) \cap \mathcal N(c)} \frac{1}{d_w},

on the graph the model may see (here: the message graph, never the test edges),
true positives of every split masked, ties broken at random. HeaRT also ranks by PPR
and feature similarity and uses :math:`K = 500`; this module uses RA alone.
"""

from __future__ import annotations

import torch
from torch import Tensor


def _rows_dense(edge_index: Tensor, num_nodes: int, rows: Tensor) -> Tensor:
    """Dense binary ``A[rows]`` (len(rows), N) of the graph ``edge_index``."""
    src, dst = edge_index
    position = torch.full((num_nodes,), -1, dtype=torch.long)
    uniq, inverse = torch.unique(rows, return_inverse=True)
    position[uniq] = torch.arange(uniq.numel())
    keep = position[src] >= 0
    block = torch.zeros(uniq.numel(), num_nodes)
    block[position[src[keep]], dst[keep]] = 1.0
    return block[inverse]


def resource_allocation(edge_index: Tensor, num_nodes: int, rows: Tensor) -> Tensor:
    """Dense ``RA[rows]`` (len(rows), N) on the graph ``edge_index`` (both directions).

    ``RA[a, c] = sum_w A[a, w] A[w, c] / d_w``: scale the rows' adjacency by
    :math:`1/d_w`, then push each entry ``(a, w)`` along every edge ``(w, c)``.
    """
    src, dst = edge_index
    adj = _rows_dense(edge_index, num_nodes, rows)
    degree = torch.zeros(num_nodes).index_add_(0, src, torch.ones(src.numel())).clamp(min=1)
    scaled = adj / degree
    return torch.zeros_like(adj).index_add_(1, dst, scaled[:, src])


def hard_negatives(
    pos: Tensor,
    edge_index: Tensor,
    num_nodes: int,
    k: int,
    exclude: Tensor,
    generator: torch.Generator,
    chunk: int = 128,
) -> Tensor:
    """``(P, k, 2)`` negatives per positive of ``pos`` (2, P), each pair stored ``u < v``.

    ``edge_index``: the graph the heuristic runs on; ``exclude``: directed-or-not edges
    (2, M) that may not be negatives (every positive of every split); ``k`` even.
    """
    if k < 2 or k % 2:
        raise ValueError(f"hard negatives per positive must be even and >= 2, got {k}")
    half = k // 2
    forbid = torch.cat([exclude, exclude.flip(0)], 1)
    order = torch.randperm(num_nodes, generator=generator)      # random tie-break
    out = []
    for start in range(0, pos.size(1), chunk):
        block = pos[:, start:start + chunk]
        sides = []
        for anchor in (block[0], block[1]):                     # corrupt the other end
            score = resource_allocation(edge_index, num_nodes, anchor)
            banned = _rows_dense(forbid, num_nodes, anchor) > 0
            banned[torch.arange(anchor.numel()), anchor] = True
            if int((~banned).sum(1).min()) < half:
                raise ValueError(f"a positive has fewer than {half} non-adjacent candidates "
                                 "for hard negatives; lower the count")
            score = score.masked_fill(banned, -1.0)[:, order]
            best = order[torch.sort(score, dim=1, descending=True, stable=True).indices[:, :half]]
            a = anchor.view(-1, 1).expand_as(best)
            sides.append(torch.stack([torch.minimum(a, best), torch.maximum(a, best)], -1))
        out.append(torch.cat(sides, 1))
    return torch.cat(out, 0) if out else torch.empty(0, k, 2, dtype=torch.long)
