"""What a training run sees under a protocol: nodes, label edges, and each phase's graph.

:func:`prepare` turns a graph and a seed into a :class:`TaskData` under one of

* ``leakage_free``: :func:`~.split.leakage_free_split`; every task and phase passes
  messages over the one message graph; fixed negatives; the positional encoding of
  the message graph; **audited** (:func:`~.audit.audit`, with the encoding) before
  anything trains;
* ``randomlinksplit``: :func:`~.leaky.randomlinksplit_split`; NC over the full graph,
  LP over PyG's per-phase graphs, training negatives resampled every epoch, the
  positional encoding of the full graph (see :mod:`.leaky` for what leaks).

Hard negatives (``hard_negatives=K > 0``): K per test positive
(:func:`~.negatives.hard_negatives`), ranked by resource allocation on the LP
test-phase graph, every positive masked.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor

from .audit import audit
from .leaky import randomlinksplit_split
from .models import random_walk_pe
from .negatives import hard_negatives as draw_hard_negatives
from .split import GraphSplit, leakage_free_split, undirected_edges

PROTOCOLS = ("leakage_free", "randomlinksplit")
PHASES = ("train", "val", "test")


@dataclass
class TaskData:
    """One seed's view of a graph under a protocol; tensors on one device."""

    x: Tensor
    """(N, F) node features."""
    y: Tensor
    """(N,) labels."""
    num_classes: int
    nodes: dict[str, Tensor]
    """NC node indices per split."""
    pos: dict[str, Tensor]
    """LP positive edges per split, (2, E_s)."""
    neg: dict[str, Tensor]
    """LP negatives per split; no ``train`` entry means: resample every epoch."""
    nc_graph: dict[str, Tensor]
    """NC's message graph per phase (train/val/test)."""
    lp_graph: dict[str, Tensor]
    """LP's message graph per phase."""
    pe: Tensor | None = None
    """(N, steps) random-walk positional encoding, or None."""
    hard_neg: Tensor | None = None
    """(P_test, K, 2) per-positive hard negatives, or None."""
    protocol: str = "leakage_free"
    split: GraphSplit | None = field(default=None, repr=False)
    """The audited split (leakage_free only)."""

    @property
    def num_nodes(self) -> int:
        return self.x.size(0)

    def to(self, device: torch.device | str) -> TaskData:
        """A copy on ``device``; a tensor shared between fields (the one message graph of
        the leakage-free protocol) stays one tensor there, as the training loops assume."""
        moved: dict[int, Tensor] = {}

        def one(t: Tensor | None) -> Tensor | None:
            return None if t is None else moved.setdefault(id(t), t.to(device))

        def move(d):
            return {k: one(v) for k, v in d.items()}

        return TaskData(one(self.x), one(self.y), self.num_classes,
                        move(self.nodes), move(self.pos), move(self.neg), move(self.nc_graph),
                        move(self.lp_graph), one(self.pe), one(self.hard_neg),
                        self.protocol, self.split)


def prepare(data, protocol: str, seed: int, pe_steps: int = 0, hard_negatives: int = 0,
            node_split: tuple[float, float, float] = (0.6, 0.2, 0.2),
            edge_split: tuple[float, float, float] = (0.8, 0.1, 0.1)) -> TaskData:
    """Split ``data`` (``x``, ``y``, ``edge_index``) for ``seed`` under ``protocol``."""
    n = int(data.num_nodes)
    num_classes = int(data.y.max()) + 1
    if protocol == "leakage_free":
        split = leakage_free_split(data, seed, node_split, edge_split)
        graph = split.message_edge_index
        pe = random_walk_pe(graph, n, pe_steps) if pe_steps else None
        audit(split, data, pe=pe)
        nodes = {"train": split.train_nodes, "val": split.val_nodes, "test": split.test_nodes}
        phases = dict.fromkeys(PHASES, graph)
        task = TaskData(data.x.float(), data.y, num_classes, nodes, dict(split.pos_edges),
                        dict(split.neg_edges), phases, dict(phases), pe,
                        protocol=protocol, split=split)
    elif protocol == "randomlinksplit":
        leaky = randomlinksplit_split(data, seed, node_split, edge_split)
        pe = random_walk_pe(leaky.nc_edge_index, n, pe_steps) if pe_steps else None
        nodes = {"train": leaky.train_nodes, "val": leaky.val_nodes, "test": leaky.test_nodes}
        task = TaskData(data.x.float(), data.y, num_classes, nodes, dict(leaky.pos_edges),
                        dict(leaky.neg_edges), dict.fromkeys(PHASES, leaky.nc_edge_index),
                        dict(leaky.lp_edge_index), pe, protocol=protocol)
    else:
        raise ValueError(f"unknown protocol {protocol!r}; use one of {', '.join(PROTOCOLS)}")
    if hard_negatives:
        every = undirected_edges(data.edge_index, n)        # masked in both directions
        # a small graph (WebKB's 183 nodes) cannot give every positive K candidates: take
        # the largest even K every endpoint allows (the shape of hard_neg says which)
        degree = torch.bincount(every.flatten(), minlength=n)
        k = min(hard_negatives, 2 * max(0, n - 1 - int(degree.max())))
        generator = torch.Generator().manual_seed(int(seed) + 7919)
        task.hard_neg = draw_hard_negatives(task.pos["test"], task.lp_graph["test"], n,
                                            k, every, generator)
    return task
