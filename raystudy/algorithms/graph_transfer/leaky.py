"""The leaky protocol, for contrast: PyG's ``RandomLinkSplit`` as it is commonly used.

What changes against :mod:`.split` (and why each change leaks or biases):

* NC models pass messages over the **full** graph (the usual node-classification
  setup), so an NC encoder has seen every validation and test edge of the LP task; a
  warm start or frozen embedding NC -> LP carries them into the link predictor.
* LP follows ``RandomLinkSplit(is_undirected=True)``: training messages over the
  training edges, validation over the same, but **test-time messages over training +
  validation edges** (PyG's design, not the one-graph protocol).
* Training negatives are **resampled every epoch** with ``negative_sampling`` over the
  training graph only, so a validation or test positive can be drawn as a training
  negative; validation and test negatives are fixed by the transform.
* Positional encodings are computed on the full graph (a dataset-level transform).

The node split is the same permutation rule as the leakage-free one (60/20/20).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from .split import both_directions, split_nodes, undirected_edges


@dataclass
class LeakySplit:
    """Node indices, LP label edges and the message graph of each task and phase."""

    train_nodes: Tensor
    val_nodes: Tensor
    test_nodes: Tensor
    pos_edges: dict[str, Tensor]
    """``train`` (the messages' edges, one direction), ``val``, ``test`` positives."""
    neg_edges: dict[str, Tensor]
    """``val`` and ``test`` negatives from the transform; training negatives are resampled."""
    nc_edge_index: Tensor
    """The full graph, both directions: NC's messages in every phase."""
    lp_edge_index: dict[str, Tensor]
    """LP's messages per phase: ``train``, ``val`` (training edges), ``test`` (train + val)."""


def randomlinksplit_split(
    data,
    seed: int,
    node_split: tuple[float, float, float] = (0.6, 0.2, 0.2),
    edge_split: tuple[float, float, float] = (0.8, 0.1, 0.1),
) -> LeakySplit:
    """Split ``data`` the common way (module docstring); torch's global RNG is left as it was."""
    from torch_geometric.data import Data
    from torch_geometric.transforms import RandomLinkSplit

    n = int(data.num_nodes)
    generator = torch.Generator().manual_seed(int(seed))
    nodes = split_nodes(n, node_split, generator)
    full = both_directions(undirected_edges(data.edge_index, n))
    transform = RandomLinkSplit(num_val=edge_split[1], num_test=edge_split[2],
                                is_undirected=True, split_labels=True,
                                add_negative_train_samples=False)
    with torch.random.fork_rng():
        torch.manual_seed(int(seed))
        train, val, test = transform(Data(edge_index=full, num_nodes=n))
    return LeakySplit(
        nodes["train"], nodes["val"], nodes["test"],
        pos_edges={"train": train.pos_edge_label_index, "val": val.pos_edge_label_index,
                   "test": test.pos_edge_label_index},
        neg_edges={"val": val.neg_edge_label_index, "test": test.neg_edge_label_index},
        nc_edge_index=full,
        lp_edge_index={"train": train.edge_index, "val": val.edge_index,
                       "test": test.edge_index},
    )
