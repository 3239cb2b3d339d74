"""Graph statistics: hand-computed values, PyG's homophily as reference, training data only."""

from __future__ import annotations

import copy

import pytest
import torch
from torch_geometric.data import Data
from torch_geometric.utils import homophily, remove_isolated_nodes, subgraph

from raystudy.algorithms.graph_transfer.audit import LeakageError, audit
from raystudy.algorithms.graph_transfer.split import GraphSplit, leakage_free_split
from raystudy.algorithms.graph_transfer.stats import (
    edge_homophily,
    feature_signal,
    graph_statistics,
    node_homophily,
)
from raystudy.algorithms.graph_transfer.synthetic import CSBM, contextual_sbm


def test_homophily_by_hand():
    # labels 0 0 1 1 ?; node 4 unlabelled. Edges: (0,1) same, (1,2) diff, (2,3) same,
    # (3,4) touches an unknown label -> ignored. h_e = 2/3.
    y = torch.tensor([0, 0, 1, 1, 1])
    known = torch.tensor([True, True, True, True, False])
    edges = torch.tensor([[0, 1, 2, 3], [1, 2, 3, 4]])
    assert edge_homophily(edges, y, known) == pytest.approx(2 / 3)
    # per node: 0: 1/1, 1: 1/2, 2: 1/2, 3: 1/1 (4 excluded) -> 0.75
    assert node_homophily(edges, y, known) == pytest.approx(0.75)


def test_feature_signal_by_hand():
    y = torch.tensor([0, 1] * 10)
    separable = torch.stack([y.float() * 10, torch.zeros(20)], 1)
    assert feature_signal(separable, y, torch.arange(20)) == pytest.approx(1.0)
    # features that ignore the label: nearest mean is a coin flip around the majority share
    assert feature_signal(torch.zeros(20, 2), y, torch.arange(20)) <= 0.0


def test_statistics_match_pyg_on_the_training_subgraph():
    data = contextual_sbm(CSBM(homophily=0.6, num_nodes=300), seed=2)
    split = leakage_free_split(data, seed=0)
    stats = graph_statistics(data.x, data.y, split)
    sub, _ = subgraph(split.train_nodes, split.message_edge_index, relabel_nodes=True,
                      num_nodes=300)
    y = data.y[split.train_nodes]
    assert stats["edge_homophily"] == pytest.approx(homophily(sub, y, method="edge"))
    # PyG's node homophily averages over every node; ours over those with a neighbour
    sub, _, mask = remove_isolated_nodes(sub, num_nodes=len(y))
    assert stats["node_homophily"] == pytest.approx(homophily(sub, y[mask], method="node"))
    e = split.pos_edges["train"].size(1)
    assert stats["mean_degree"] == pytest.approx(2 * e / 300)
    assert stats["density"] == pytest.approx(e / (300 * 299 / 2))


def test_statistics_never_read_validation_or_test_labels_or_edges():
    data = contextual_sbm(CSBM(homophily=0.8, num_nodes=300), seed=3)
    split = leakage_free_split(data, seed=1)
    before = graph_statistics(data.x, data.y, split)
    scrambled = data.y.clone()
    held_out = torch.cat([split.val_nodes, split.test_nodes])
    scrambled[held_out] = (scrambled[held_out] + 1) % 4
    other = GraphSplit(split.train_nodes, split.val_nodes, split.test_nodes,
                       {**split.pos_edges, "test": split.pos_edges["test"][:, :5]},
                       split.neg_edges, split.message_edge_index)
    assert graph_statistics(data.x, scrambled, other) == before


def test_audit_rejects_statistics_from_the_full_graph():
    data = contextual_sbm(CSBM(homophily=0.5, num_nodes=300), seed=0)
    split = leakage_free_split(data, seed=0)
    honest = graph_statistics(data.x, data.y, split)
    audit(split, data, stats=honest)
    leaky = copy.copy(honest)
    leaky["edge_homophily"] = homophily(data.edge_index, data.y, method="edge")
    with pytest.raises(LeakageError, match="stats\\['edge_homophily'\\]"):
        audit(split, Data(x=data.x, y=data.y, edge_index=data.edge_index, num_nodes=300),
              stats=leaky)
