r"""Evaluation metrics: accuracy (NC), ROC-AUC (LP), and Hits@K / MRR against hard negatives.

* ROC-AUC, the Mann-Whitney form with ties counted one half:
  :math:`\mathrm{AUC} = \frac{1}{|P||Q|}\sum_{p \in P}\sum_{q \in Q}
  \big([s_p > s_q] + \tfrac12 [s_p = s_q]\big)`, computed from average ranks
  :math:`\mathrm{AUC} = (R_P - |P|(|P|+1)/2) / (|P||Q|)`, :math:`R_P` the rank sum of
  the positives among all scores.
* Rank of positive :math:`i` among its own :math:`K` negatives :math:`s_{ij}` (the
  OGB / HeaRT convention, ties split evenly):
  :math:`r_i = 1 + \tfrac12\big(\#\{j: s_{ij} > s_i\} + \#\{j: s_{ij} \ge s_i\}\big)`;
  :math:`\mathrm{Hits@K} = \frac1P \sum_i [r_i \le K]`,
  :math:`\mathrm{MRR} = \frac1P \sum_i 1/r_i`.
"""

from __future__ import annotations

import torch
from torch import Tensor


def accuracy(logits: Tensor, y: Tensor) -> float:
    """Fraction of rows whose argmax equals the label; ``logits`` (n, C), ``y`` (n,)."""
    if y.numel() == 0:
        return float("nan")
    return float((logits.argmax(-1) == y).float().mean())


def average_ranks(values: Tensor) -> Tensor:
    """1-based ranks of a 1-D tensor, tied values sharing their average rank (float64)."""
    uniq, inverse, counts = torch.unique(values, return_inverse=True, return_counts=True)
    ends = torch.cumsum(counts, 0).double()           # rank of each value's last copy
    return (ends - (counts.double() - 1) / 2)[inverse]


def roc_auc(pos_scores: Tensor, neg_scores: Tensor) -> float:
    """ROC-AUC of positives ``pos_scores`` (P,) against negatives ``neg_scores`` (Q,)."""
    p, q = pos_scores.numel(), neg_scores.numel()
    if p == 0 or q == 0:
        return float("nan")
    ranks = average_ranks(torch.cat([pos_scores.flatten(), neg_scores.flatten()]).double())
    return float((ranks[:p].sum() - p * (p + 1) / 2) / (p * q))


def ranks_among_negatives(pos_scores: Tensor, neg_scores: Tensor) -> Tensor:
    """Rank of each positive (P,) among its own negatives (P, K), ties split evenly."""
    pos = pos_scores.view(-1, 1)
    optimistic = (neg_scores > pos).sum(1).double()
    pessimistic = (neg_scores >= pos).sum(1).double()
    return 1 + 0.5 * (optimistic + pessimistic)


def hits_at_k(ranks: Tensor, k: int) -> float:
    """Fraction of positives ranked within the top ``k``."""
    return float((ranks <= k).double().mean()) if ranks.numel() else float("nan")


def mean_reciprocal_rank(ranks: Tensor) -> float:
    """Mean of ``1 / rank`` over positives."""
    return float((1.0 / ranks).mean()) if ranks.numel() else float("nan")
