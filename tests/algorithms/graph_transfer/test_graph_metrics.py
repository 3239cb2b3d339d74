"""Metrics against sklearn and hand-computed cases; HeaRT-style negatives against dense RA."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.metrics import roc_auc_score

from raystudy.algorithms.graph_transfer.metrics import (
    accuracy,
    average_ranks,
    hits_at_k,
    mean_reciprocal_rank,
    ranks_among_negatives,
    roc_auc,
)
from raystudy.algorithms.graph_transfer.negatives import hard_negatives, resource_allocation


def test_roc_auc_hand_case_with_a_tie():
    # pairs: 0.9>0.5, 0.9>0.4, 0.4<0.5, 0.4=0.4 (half) -> 2.5 / 4
    assert roc_auc(torch.tensor([0.9, 0.4]), torch.tensor([0.5, 0.4])) == pytest.approx(0.625)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_roc_auc_matches_sklearn_with_many_ties(dtype):
    g = torch.Generator().manual_seed(0)
    pos = torch.randint(0, 10, (300,), generator=g).to(dtype) + 1.0
    neg = torch.randint(0, 10, (500,), generator=g).to(dtype)
    labels = np.r_[np.ones(300), np.zeros(500)]
    expected = roc_auc_score(labels, torch.cat([pos, neg]).numpy())
    assert roc_auc(pos, neg) == pytest.approx(expected, abs=1e-12)


def test_average_ranks():
    assert average_ranks(torch.tensor([3.0, 1.0, 3.0, 2.0])).tolist() == [3.5, 1.0, 3.5, 2.0]


def test_ranks_hits_and_mrr_by_hand():
    pos = torch.tensor([0.5, 0.95, 0.2])
    neg = torch.tensor([[0.9, 0.5, 0.1],     # one above, one tie -> rank 1 + (1 + 2)/2 = 2.5
                        [0.1, 0.2, 0.3],     # none above -> 1
                        [0.3, 0.4, 0.5]])    # all above -> 4
    ranks = ranks_among_negatives(pos, neg)
    assert ranks.tolist() == [2.5, 1.0, 4.0]
    assert hits_at_k(ranks, 1) == pytest.approx(1 / 3)
    assert hits_at_k(ranks, 3) == pytest.approx(2 / 3)
    assert mean_reciprocal_rank(ranks) == pytest.approx((0.4 + 1 + 0.25) / 3)


def test_accuracy():
    logits = torch.tensor([[2.0, 1.0], [0.0, 3.0], [1.0, 0.0]])
    assert accuracy(logits, torch.tensor([0, 1, 1])) == pytest.approx(2 / 3)


def small_graph() -> tuple[torch.Tensor, int]:
    pairs = [(0, 1), (0, 2), (1, 3), (2, 3), (3, 4), (4, 5), (1, 2), (5, 6), (6, 7), (2, 7)]
    e = torch.tensor(pairs).t()
    return torch.cat([e, e.flip(0)], 1), 8


def test_resource_allocation_matches_dense_formula():
    edge_index, n = small_graph()
    a = np.zeros((n, n))
    a[edge_index[0], edge_index[1]] = 1
    dense = a @ np.diag(1 / a.sum(1)) @ a                       # RA = A D^-1 A
    rows = torch.tensor([0, 3, 7])
    got = resource_allocation(edge_index, n, rows).numpy()
    np.testing.assert_allclose(got, dense[[0, 3, 7]], rtol=1e-6)
    # by hand: RA(0, 3) = 1/d_1 + 1/d_2 = 1/3 + 1/4 (common neighbours 1 and 2)
    assert got[0, 3] == pytest.approx(1 / 3 + 1 / 4)


def test_hard_negatives_are_the_top_ra_non_edges():
    edge_index, n = small_graph()
    pos = torch.tensor([[0, 4], [3, 6]])        # positives (0, 3) and (4, 6), held out
    exclude = torch.cat([edge_index, pos], 1)
    out = hard_negatives(pos, edge_index, n, k=2, exclude=exclude,
                         generator=torch.Generator().manual_seed(0))
    assert out.shape == (2, 2, 2)
    assert (out[..., 0] < out[..., 1]).all()
    edges = {tuple(sorted(e)) for e in exclude.t().tolist()}
    assert not {tuple(p) for p in out.reshape(-1, 2).tolist()} & edges
    ra = resource_allocation(edge_index, n, torch.arange(n))
    for i, (a, b) in enumerate(pos.t().tolist()):
        for side, anchor in enumerate((a, b)):
            pair = out[i, side].tolist()
            c = pair[1] if pair[0] == anchor else pair[0]
            allowed = [x for x in range(n) if x != anchor
                       and tuple(sorted((anchor, x))) not in edges]
            assert ra[anchor, c] == max(ra[anchor, x] for x in allowed)


def test_hard_negatives_need_enough_candidates():
    edge_index, n = small_graph()
    with pytest.raises(ValueError, match="fewer than 4 non-adjacent candidates"):
        hard_negatives(torch.tensor([[2], [3]]), edge_index, n, k=8, exclude=edge_index,
                       generator=torch.Generator().manual_seed(0))
