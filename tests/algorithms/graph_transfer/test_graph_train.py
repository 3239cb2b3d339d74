"""Training: the restored model is the best epoch's, tasks learn, protocols feed what they say."""

from __future__ import annotations

import copy

import pytest
import torch
from graph_helpers import one_thread  # noqa: F401  (autouse)

from raystudy.algorithms.graph_transfer import protocol as protocol_module
from raystudy.algorithms.graph_transfer.audit import LeakageError
from raystudy.algorithms.graph_transfer.models import EncoderConfig, build_model, random_walk_pe
from raystudy.algorithms.graph_transfer.protocol import prepare
from raystudy.algorithms.graph_transfer.split import leakage_free_split
from raystudy.algorithms.graph_transfer.synthetic import CSBM, contextual_sbm
from raystudy.algorithms.graph_transfer.train import (
    EarlyStopping,
    FitConfig,
    evaluate,
    fit_joint,
    fit_lp,
    fit_nc,
    lp_pairs_and_labels,
)

GRAPH = contextual_sbm(CSBM(homophily=0.9, num_nodes=200, avg_degree=6), seed=0)
ENC = EncoderConfig(hidden=16)


def task(protocol="leakage_free", **kwargs):
    return prepare(GRAPH, protocol, seed=0, **kwargs)


def test_early_stopping_keeps_a_copy_not_a_reference():
    layer = torch.nn.Linear(2, 1)
    stopper = EarlyStopping(patience=2)
    reference = None
    for epoch, score in enumerate([0.1, 0.9, 0.3, 0.2], start=1):
        with torch.no_grad():
            layer.weight.add_(1.0)                  # in place, as optimizers update
        if score == 0.9:
            best = layer.weight.clone()
            reference = layer.state_dict()          # what an uncopied "best state" holds
        stop = stopper.update(score, layer, epoch)
    assert stop and stopper.best_epoch == 2
    assert torch.equal(reference["weight"], layer.weight)   # the reference followed along
    stopper.restore(layer)
    assert torch.equal(layer.weight, best)


def test_restored_model_is_the_best_epochs_not_the_last(monkeypatch):
    states = []
    update = EarlyStopping.update

    def recording(self, score, module, epoch):
        states.append(copy.deepcopy(module.state_dict()))
        return update(self, score, module, epoch)

    monkeypatch.setattr(EarlyStopping, "update", recording)
    t = task()
    torch.manual_seed(0)
    model = build_model("gcn", t.x.size(1), t.num_nodes, ENC, link=True)
    result = fit_lp(model, t, FitConfig(epochs=200, patience=5, lr=0.05))
    assert result.epochs_run < 200                          # stopped by patience
    best = max(result.history)
    assert result.best_val == best and result.history[-1] < best
    assert result.best_epoch == result.history.index(best) + 1
    restored = model.state_dict()
    for key, value in states[result.best_epoch - 1].items():
        assert torch.equal(restored[key], value)
    assert any(not torch.equal(restored[k], v) for k, v in states[-1].items())
    assert evaluate(model, t, phase="val")["lp_auc"] == pytest.approx(best, abs=1e-12)


def test_no_gradient_clipping_unless_asked(monkeypatch):
    """The authors' code clips nothing; ``grad_clip > 0`` is an explicit option."""
    calls = []
    clip = torch.nn.utils.clip_grad_norm_
    monkeypatch.setattr(torch.nn.utils, "clip_grad_norm_",
                        lambda params, norm: calls.append(norm) or clip(params, norm))
    t = task()
    model = build_model("gcn", t.x.size(1), t.num_nodes, ENC, link=True)
    assert FitConfig().grad_clip == 0
    fit_lp(model, t, FitConfig(epochs=3, patience=3))
    assert calls == []
    fit_lp(model, t, FitConfig(epochs=3, patience=3, grad_clip=0.5))
    assert calls == [0.5] * 3


def test_nc_and_lp_learn_on_a_homophilous_graph():
    t = task(hard_negatives=10)
    torch.manual_seed(0)
    nc = build_model("sage", t.x.size(1), t.num_nodes, ENC, num_classes=t.num_classes)
    fit_nc(nc, t, FitConfig(epochs=60, patience=20))
    torch.manual_seed(0)
    lp = build_model("gcn", t.x.size(1), t.num_nodes, ENC, link=True)
    fit_lp(lp, t, FitConfig(epochs=60, patience=20))
    assert evaluate(nc, t)["nc_acc"] > 0.6                   # chance: 0.25
    scores = evaluate(lp, t, hits_k=3)
    # ceiling ~0.83 here: CSBM edges carry class information only (docs/graph_transfer.md)
    assert scores["lp_auc"] > 0.7 and 0 < scores["lp_mrr"] <= 1
    assert set(scores) == {"lp_auc", "lp_mrr", "lp_hits"}


@pytest.mark.parametrize("lam", [0.5, None])
def test_joint_training_serves_both_heads(lam):
    t = task(pe_steps=4)
    torch.manual_seed(0)
    model = build_model("gps", t.x.size(1), t.num_nodes, EncoderConfig(hidden=16, pe_steps=4),
                        num_classes=t.num_classes, link=True)
    result, weights = fit_joint(model, t, FitConfig(epochs=40, patience=40), lam)
    scores = evaluate(model, t)
    assert scores["nc_acc"] > 0.4 and scores["lp_auc"] > 0.6
    assert not result.diverged
    if lam is None:
        assert weights.log_var.abs().min() > 1e-3             # the weights were learned


def test_training_negatives_fixed_or_resampled_as_the_protocol_says():
    free, leaky = task(), task("randomlinksplit")
    a, b = lp_pairs_and_labels(free, "train")[0], lp_pairs_and_labels(free, "train")[0]
    assert torch.equal(a, b)
    torch.manual_seed(0)
    c, d = lp_pairs_and_labels(leaky, "train")[0], lp_pairs_and_labels(leaky, "train")[0]
    assert not torch.equal(c, d)


def test_positional_encoding_comes_from_the_protocols_graph():
    free, leaky = task(pe_steps=4), task("randomlinksplit", pe_steps=4)
    torch.testing.assert_close(free.pe, random_walk_pe(free.split.message_edge_index, 200, 4))
    torch.testing.assert_close(leaky.pe, random_walk_pe(GRAPH.edge_index, 200, 4))
    assert not torch.allclose(free.pe, leaky.pe)


def test_prepare_audits_before_anything_trains(monkeypatch):
    def leaky_split(data, seed, node_split, edge_split):
        split = leakage_free_split(data, seed, node_split, edge_split)
        e = split.pos_edges["val"][:, :1]
        split.message_edge_index = torch.cat([split.message_edge_index, e, e.flip(0)], 1)
        return split

    monkeypatch.setattr(protocol_module, "leakage_free_split", leaky_split)
    with pytest.raises(LeakageError, match="a validation edge"):
        task()


def test_moving_a_task_keeps_the_one_message_graph_one_tensor():
    """On a device where .to() copies (meta here, CUDA in practice) the leakage-free
    protocol's shared message graph stays one tensor, so joint training embeds once."""
    split = task()
    assert split.nc_graph["train"] is split.lp_graph["train"]
    moved = split.to("meta")
    assert moved.x.device.type == "meta"
    graphs = [*moved.nc_graph.values(), *moved.lp_graph.values()]
    assert all(g is graphs[0] for g in graphs)


def test_more_hard_negatives_than_a_small_graph_allows_are_capped():
    """The paper profile's 500 per positive on a 200-node graph (WebKB has 183): the
    largest even count every endpoint allows, not a failed trial."""
    from raystudy.algorithms.graph_transfer.split import undirected_edges

    degree = torch.bincount(undirected_edges(GRAPH.edge_index, 200).flatten(), minlength=200)
    allowed = 2 * (200 - 1 - int(degree.max()))
    assert allowed < 500
    assert task(hard_negatives=500).hard_neg.shape[1] == allowed
    assert task(hard_negatives=20).hard_neg.shape[1] == 20
