"""leakage_free_split on hand-built small graphs: sizes, coverage, negatives, determinism."""

from __future__ import annotations

import pytest
import torch
from torch_geometric.data import Data

from raystudy.algorithms.graph_transfer.audit import audit
from raystudy.algorithms.graph_transfer.split import (
    edge_keys,
    leakage_free_split,
    sample_negatives,
    split_sizes,
    undirected_edges,
)


def ring_with_chords(n: int = 20) -> Data:
    """A ring plus chords i -> i+5, both directions, with a self loop and a duplicate."""
    pairs = [(i, (i + 1) % n) for i in range(n)] + [(i, (i + 5) % n) for i in range(0, n, 2)]
    directed = pairs + [(v, u) for u, v in pairs] + [(3, 3), (0, 1)]
    return Data(edge_index=torch.tensor(directed).t(), num_nodes=n)


def test_undirected_edges_keeps_each_edge_once_without_loops():
    edge_index = torch.tensor([[0, 1, 2, 2, 3, 1], [1, 0, 2, 0, 1, 3]])
    # (0,1) twice, (2,2) a loop, (2,0) -> (0,2), (3,1) and (1,3) -> (1,3)
    assert undirected_edges(edge_index, 4).t().tolist() == [[0, 1], [0, 2], [1, 3]]


@pytest.mark.parametrize("total,fractions,expected", [
    (10, (0.6, 0.2, 0.2), (6, 2, 2)),
    (7, (0.8, 0.1, 0.1), (5, 1, 1)),   # 0.7 rounds to 1 each for val and test
    (30, (0.8, 0.1, 0.1), (24, 3, 3)),
])
def test_split_sizes(total, fractions, expected):
    assert split_sizes(total, fractions) == expected


def test_split_sizes_rejects_bad_fractions():
    with pytest.raises(ValueError, match="summing to 1"):
        split_sizes(10, (0.5, 0.2, 0.2))


def test_split_has_the_promised_properties():
    data = ring_with_chords()
    split = leakage_free_split(data, seed=3)
    n = data.num_nodes
    nodes = [split.train_nodes, split.val_nodes, split.test_nodes]
    assert [len(x) for x in nodes] == [12, 4, 4]
    assert sorted(torch.cat(nodes).tolist()) == list(range(n))
    edges = undirected_edges(data.edge_index, n)      # 30 undirected edges
    sizes = [split.pos_edges[s].size(1) for s in ("train", "val", "test")]
    assert sizes == [24, 3, 3]
    union = torch.cat([edge_keys(split.pos_edges[s], n) for s in ("train", "val", "test")])
    assert sorted(union.tolist()) == sorted(edge_keys(edges, n).tolist())
    negs = torch.cat([edge_keys(split.neg_edges[s], n) for s in ("train", "val", "test")])
    assert len(set(negs.tolist())) == 30                # pairwise disjoint
    assert not set(negs.tolist()) & set(union.tolist())
    for s in ("train", "val", "test"):
        assert (split.neg_edges[s][0] < split.neg_edges[s][1]).all()
        assert split.neg_edges[s].size(1) == split.pos_edges[s].size(1)
    train = split.pos_edges["train"]
    expected = {(int(u), int(v)) for u, v in train.t()} | {(int(v), int(u)) for u, v in train.t()}
    assert {tuple(e) for e in split.message_edge_index.t().tolist()} == expected
    assert split.message_edge_index.size(1) == 48
    audit(split, data)


def test_same_seed_same_split_other_seed_other_split():
    data = ring_with_chords()
    a, b, c = (leakage_free_split(data, seed=s) for s in (7, 7, 8))
    for s in ("train", "val", "test"):
        assert torch.equal(a.pos_edges[s], b.pos_edges[s])
        assert torch.equal(a.neg_edges[s], b.neg_edges[s])
    assert torch.equal(a.test_nodes, b.test_nodes)
    assert not torch.equal(a.test_nodes, c.test_nodes)
    assert not torch.equal(a.neg_edges["train"], c.neg_edges["train"])


def test_negatives_are_uniform_over_free_pairs():
    # 6 nodes, a path of 5 edges: 15 pairs, 10 free. One draw each from 3000 seeds.
    path = torch.tensor([[0, 1, 2, 3, 4], [1, 2, 3, 4, 5]])
    forbidden = edge_keys(path, 6)
    counts: dict[int, int] = {}
    for seed in range(3000):
        pair = sample_negatives(1, 6, forbidden, torch.Generator().manual_seed(seed))
        key = int(edge_keys(pair, 6))
        counts[key] = counts.get(key, 0) + 1
    assert len(counts) == 10 and not set(counts) & set(forbidden.tolist())
    assert min(counts.values()) > 240 and max(counts.values()) < 360   # 300 expected each


def test_too_few_non_edges_is_an_error():
    k4 = torch.tensor([[0, 0, 0, 1, 1], [1, 2, 3, 2, 3]])   # K4 minus (2, 3)
    with pytest.raises(ValueError, match="only 1 non-edges"):
        sample_negatives(2, 4, edge_keys(k4, 4), torch.Generator().manual_seed(0))
    pair = sample_negatives(1, 4, edge_keys(k4, 4), torch.Generator().manual_seed(0))
    assert pair.t().tolist() == [[2, 3]]
