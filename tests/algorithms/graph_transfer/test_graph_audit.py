"""The audit catches each deliberately leaky split, naming the property it breaks."""

from __future__ import annotations

import copy

import pytest
import torch
from torch_geometric.data import Data

from raystudy.algorithms.graph_transfer.audit import LeakageError, audit
from raystudy.algorithms.graph_transfer.leaky import randomlinksplit_split
from raystudy.algorithms.graph_transfer.split import GraphSplit, leakage_free_split


def graph() -> Data:
    n = 24
    pairs = [(i, (i + 1) % n) for i in range(n)] + [(i, (i + 7) % n) for i in range(n)]
    pairs += [(v, u) for u, v in pairs]
    return Data(edge_index=torch.tensor(pairs).t(), num_nodes=n)


def a_non_edge(split: GraphSplit) -> torch.Tensor:
    used = {tuple(e) for d in (split.pos_edges, split.neg_edges) for t in d.values()
            for e in t.t().tolist()}
    return torch.tensor([next((u, v) for u in range(24) for v in range(u + 1, 24)
                              if (u, v) not in used)]).t()


def _val_edge_in_messages(s):
    e = s.pos_edges["val"][:, :1]
    s.message_edge_index = torch.cat([s.message_edge_index, e, e.flip(0)], 1)


def _test_edge_in_messages(s):
    s.message_edge_index = torch.cat([s.message_edge_index, s.pos_edges["test"][:, :1]], 1)


def _test_negative_is_a_positive(s):
    s.neg_edges["test"][:, 0] = s.pos_edges["train"][:, 0]


def _val_negative_is_a_test_positive(s):
    s.neg_edges["val"][:, 0] = s.pos_edges["test"][:, 0]


def _node_in_two_splits(s):
    s.train_nodes = torch.cat([s.train_nodes, s.val_nodes[:1]])


def _node_in_no_split(s):
    s.test_nodes = s.test_nodes[1:]


def _edge_in_two_splits(s):
    s.pos_edges["val"] = torch.cat([s.pos_edges["val"], s.pos_edges["train"][:, :1]], 1)


def _graph_edge_dropped(s):
    s.pos_edges["test"] = s.pos_edges["test"][:, 1:]
    s.neg_edges["test"] = s.neg_edges["test"][:, 1:]


def _non_edge_as_positive(s):
    s.pos_edges["test"] = torch.cat([s.pos_edges["test"][:, 1:], a_non_edge(s)], 1)


def _self_loop_negative(s):
    s.neg_edges["train"][:, 0] = torch.tensor([5, 5])


def _reversed_negative(s):
    s.neg_edges["val"][:, 0] = s.neg_edges["val"][:, 0].flip(0)


def _duplicate_negative(s):
    s.neg_edges["train"][:, 1] = s.neg_edges["train"][:, 0]


def _negative_shared_between_splits(s):
    s.neg_edges["test"][:, 0] = s.neg_edges["train"][:, 0]


def _too_few_negatives(s):
    s.neg_edges["val"] = s.neg_edges["val"][:, 1:]


def _message_direction_missing(s):
    s.message_edge_index = s.message_edge_index[:, 1:]


def _missing_split_key(s):
    del s.neg_edges["val"]


LEAKS = [
    (_val_edge_in_messages, r"message_edge_index contains \(\d+, \d+\), a validation edge"),
    (_test_edge_in_messages, r"a test edge \(pos_edges\['test'\]\)"),
    (_test_negative_is_a_positive,
     r"neg_edges\['test'\] contains \(\d+, \d+\), a positive edge \(in pos_edges\['train'\]\)"),
    (_val_negative_is_a_test_positive, r"neg_edges\['val'\] contains .*pos_edges\['test'\]"),
    (_node_in_two_splits, "train_nodes and val_nodes are not disjoint"),
    (_node_in_no_split, "do not cover every node"),
    (_edge_in_two_splits, r"pos_edges\['train'\] and pos_edges\['val'\] share"),
    (_graph_edge_dropped, "positive splits do not cover the graph"),
    (_non_edge_as_positive, "which is not an edge of the graph"),
    (_self_loop_negative, r"neg_edges\['train'\] has a self loop at node 5"),
    (_reversed_negative, "with u > v"),
    (_duplicate_negative, r"neg_edges\['train'\] stores \(\d+, \d+\) twice"),
    (_negative_shared_between_splits, r"neg_edges\['train'\] and neg_edges\['test'\] share"),
    (_too_few_negatives, r"neg_edges\['val'\] has \d+ pairs for \d+ positives"),
    (_message_direction_missing, "lacks the directed edge"),
    (_missing_split_key, "neg_edges must be a dict keyed train/val/test"),
]


@pytest.mark.parametrize("leak,message", LEAKS, ids=[f.__name__.strip("_") for f, _ in LEAKS])
def test_audit_names_each_leak(leak, message):
    data = graph()
    split = leakage_free_split(data, seed=1)
    audit(split, data)                     # the clean split passes
    broken = copy.deepcopy(split)
    leak(broken)
    with pytest.raises(LeakageError, match=message):
        audit(broken, data)


def test_randomlinksplit_test_graph_fails_the_audit():
    """PyG's test-time graph holds the validation edges: as a message graph it is a leak."""
    data = graph()
    leaky = randomlinksplit_split(data, seed=0)
    n = data.num_nodes
    lo = lambda e: torch.stack([e.min(0).values, e.max(0).values])  # noqa: E731
    as_split = GraphSplit(
        leaky.train_nodes, leaky.val_nodes, leaky.test_nodes,
        pos_edges={s: lo(leaky.pos_edges[s]) for s in ("train", "val", "test")},
        neg_edges=leakage_free_split(data, seed=0).neg_edges,  # checked after messages
        message_edge_index=leaky.lp_edge_index["test"],
    )
    assert n == 24
    with pytest.raises(LeakageError, match="a validation edge"):
        audit(as_split, data)
