"""The leaky contrast protocol really is PyG's RandomLinkSplit as commonly used."""

from __future__ import annotations

import torch
from torch_geometric.data import Data

from raystudy.algorithms.graph_transfer.leaky import randomlinksplit_split
from raystudy.algorithms.graph_transfer.split import edge_keys, undirected_edges


def keys(edges: torch.Tensor, n: int) -> set[int]:
    lo, hi = edges.min(0).values, edges.max(0).values
    return set(edge_keys(torch.stack([lo, hi]), n).tolist())


def test_test_graph_holds_validation_edges_and_nc_sees_everything():
    n = 30
    pairs = [(i, (i + 1) % n) for i in range(n)] + [(i, (i + 4) % n) for i in range(n)]
    data = Data(edge_index=torch.tensor(pairs + [(v, u) for u, v in pairs]).t(), num_nodes=n)
    state = torch.random.get_rng_state()
    split = randomlinksplit_split(data, seed=5)
    assert torch.equal(torch.random.get_rng_state(), state)   # global RNG untouched
    every = keys(undirected_edges(data.edge_index, n), n)
    train, val, test = (keys(split.pos_edges[s], n) for s in ("train", "val", "test"))
    assert train | val | test == every and not (train & val or train & test or val & test)
    assert keys(split.lp_edge_index["train"], n) == train
    assert keys(split.lp_edge_index["val"], n) == train
    assert keys(split.lp_edge_index["test"], n) == train | val     # the leak
    assert keys(split.nc_edge_index, n) == every                   # NC sees test edges
    for s in ("val", "test"):
        assert not keys(split.neg_edges[s], n) & every
    again = randomlinksplit_split(data, seed=5)
    assert torch.equal(again.pos_edges["test"], split.pos_edges["test"])
    assert "train" not in split.neg_edges                          # resampled per epoch
