"""The contextual SBM: homophily, degree and feature signal as asked, and names that parse."""

from __future__ import annotations

import math

import pytest
import torch
from scipy.stats import norm
from sklearn.linear_model import LogisticRegression
from torch_geometric.utils import homophily, is_undirected

from raystudy.algorithms.graph_transfer.stats import nearest_mean_accuracy
from raystudy.algorithms.graph_transfer.synthetic import (
    CSBM,
    bayes_accuracy,
    contextual_sbm,
    parse_csbm,
)


@pytest.mark.parametrize("h", [0.0, 0.1, 0.5, 0.9, 1.0])
def test_homophily_and_degree_are_as_asked(h):
    data = contextual_sbm(CSBM(homophily=h, num_nodes=400, avg_degree=6), seed=1)
    assert data.edge_index.size(1) == 2 * 1200               # round(400 * 6 / 2) edges
    assert is_undirected(data.edge_index) and not (data.edge_index[0] == data.edge_index[1]).any()
    # PyG's own edge homophily as the reference: exact up to rounding of h * E
    assert homophily(data.edge_index, data.y, method="edge") == pytest.approx(h, abs=1e-3)
    assert torch.bincount(data.y).tolist() == [100] * 4


def test_feature_signal_controls_how_much_features_say():
    accs = []
    for s in (0.0, 1.0, 3.0):
        data = contextual_sbm(CSBM(feature_signal=s, num_nodes=800), seed=0)
        idx = torch.arange(800)
        accs.append(nearest_mean_accuracy(data.x, data.y, idx[::2], idx[1::2]))
    assert accs[0] < 0.35 < accs[1] < 0.8 < accs[2]           # chance is 0.25


def test_bayes_accuracy_closed_forms():
    assert bayes_accuracy(0.0, 4) == pytest.approx(0.25)                # chance
    for s in (0.5, 2.0):                     # two classes: P(s + z1 > z2) = Phi(s / sqrt 2)
        assert bayes_accuracy(s, 2) == pytest.approx(norm.cdf(s / math.sqrt(2)), abs=1e-9)


def test_snr_is_the_class_mean_separation_over_noise():
    """Orthonormal means s apart from the origin: the oracle (true means) classifier hits
    the closed-form Bayes accuracy, and a logistic regression fit on half the nodes comes
    close to it and rises with SNR (features linearly separable as the axis says)."""
    oracle, fitted = [], []
    for s in (0.5, 1.5, 3.0):
        data = contextual_sbm(CSBM(feature_signal=s, num_nodes=2000, avg_degree=2), seed=0)
        mu = data.class_means
        assert torch.allclose(mu @ mu.t(), torch.eye(4), atol=1e-5)
        x, y = data.x.numpy(), data.y.numpy()
        oracle.append((data.x @ mu.t()).argmax(1).eq(data.y).float().mean().item())
        model = LogisticRegression(max_iter=500).fit(x[:1000], y[:1000])
        fitted.append(model.score(x[1000:], y[1000:]))
        best = bayes_accuracy(s, 4)               # 0.393, 0.702, 0.956
        assert oracle[-1] == pytest.approx(best, abs=0.03)   # 3 SE of 2000 nodes
        assert best - 0.06 < fitted[-1] <= best + 0.03        # measured: 0.373 0.682 0.952
    assert fitted[0] < fitted[1] < fitted[2] and oracle[0] < oracle[1] < oracle[2]


def test_same_seed_same_graph():
    a, b = (contextual_sbm(CSBM(homophily=0.3), seed=4) for _ in range(2))
    assert torch.equal(a.edge_index, b.edge_index) and torch.equal(a.x, b.x)
    c = contextual_sbm(CSBM(homophily=0.3), seed=5)
    assert not torch.equal(a.edge_index, c.edge_index)


def test_names_parse_and_bad_names_say_why():
    p = parse_csbm("csbm-h0.75-d5-n300-s2-c3-f16")
    assert p == CSBM(homophily=0.75, avg_degree=5.0, num_nodes=300, feature_signal=2.0,
                     num_classes=3, feature_dim=16)
    assert parse_csbm("csbm-h0.2", CSBM(num_nodes=123)).num_nodes == 123
    # 0.75 and 0.7 are different graphs (RandomPartitionGraphDataset would round both to 0.7)
    assert parse_csbm("csbm-h0.75") != parse_csbm("csbm-h0.7")
    for bad, message in [("csbm-x3", "bad token 'x3'"), ("csbm-h1.5", "homophily must be"),
                         ("csbm", "expected csbm-h"), ("csbm-h0.5-d1000", "mean degree"),
                         ("csbm-h0.5-f3", "feature dimension must be >= the number")]:
        with pytest.raises(ValueError, match=message):
            parse_csbm(bad)


def triangles(data) -> int:
    a = torch.zeros(data.num_nodes, data.num_nodes)
    a[data.edge_index[0], data.edge_index[1]] = 1
    return int(torch.trace(a @ a @ a) / 6)


@pytest.mark.parametrize("h", [0.2, 0.8])
def test_locality_closes_triangles_and_keeps_homophily(h):
    plain = contextual_sbm(CSBM(homophily=h, num_nodes=400), seed=0)
    local = contextual_sbm(CSBM(homophily=h, num_nodes=400, locality=0.05), seed=0)
    assert homophily(local.edge_index, local.y, method="edge") == pytest.approx(h, abs=1e-3)
    assert local.edge_index.size(1) == plain.edge_index.size(1)
    assert triangles(local) > 3 * triangles(plain)      # measured: 329 vs 91, 568 vs 175
    assert parse_csbm("csbm-h0.5-l0.05").locality == 0.05
