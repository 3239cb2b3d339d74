"""Mechanisms do what their names say: warm starts, frozen inputs, the lambda grid, pairing."""

from __future__ import annotations

import copy
import math

import pytest
import torch
from graph_helpers import one_thread  # noqa: F401  (autouse)

from raystudy.algorithms.graph_transfer import mechanisms
from raystudy.algorithms.graph_transfer.mechanisms import (
    MECHANISMS,
    RunSpec,
    joint_run,
    run_mechanism,
)
from raystudy.algorithms.graph_transfer.models import EncoderConfig
from raystudy.algorithms.graph_transfer.protocol import prepare
from raystudy.algorithms.graph_transfer.synthetic import CSBM, contextual_sbm
from raystudy.algorithms.graph_transfer.train import FitConfig, UncertaintyWeights

GRAPH = contextual_sbm(CSBM(homophily=0.8, num_nodes=160, avg_degree=6, feature_dim=8), seed=0)
TASK = prepare(GRAPH, "leakage_free", seed=0, hard_negatives=6)
SPEC = RunSpec("gcn", EncoderConfig(hidden=8), FitConfig(epochs=25, patience=8),
               lambdas=(0.2, 0.8), hits_k=2)


def test_the_table_of_mechanisms():
    assert sorted(MECHANISMS) == sorted([
        "nc", "lp", "warm_nc_lp", "warm_lp_nc", "frozen_replace_nc_lp", "frozen_concat_nc_lp",
        "frozen_replace_lp_nc", "frozen_concat_lp_nc", "joint_grid", "joint_uw"])
    assert MECHANISMS["warm_lp_nc"].source == "lp" and MECHANISMS["warm_lp_nc"].target == "nc"


@pytest.fixture
def spy(monkeypatch):
    """Record (input width, initial encoder state) of every model a mechanism trains."""
    calls = []
    real = mechanisms.fit_single

    def recording(model, task, config, target, x=None):
        width = (task.x if x is None else x).size(1)
        calls.append({"target": target, "width": width,
                      "init": copy.deepcopy(model.encoder.state_dict()), "model": model,
                      "x": None if x is None else x.clone()})
        return real(model, task, config, target, x)

    monkeypatch.setattr(mechanisms, "fit_single", recording)
    return calls


def test_warm_start_initialises_the_target_encoder_from_the_trained_source(spy):
    out = run_mechanism("warm_nc_lp", TASK, SPEC)
    source, target = spy
    assert (source["target"], target["target"]) == ("nc", "lp")
    trained = source["model"].encoder.state_dict()
    for key, value in target["init"].items():
        assert torch.equal(value, trained[key])
    assert not all(torch.equal(v, source["init"][k]) for k, v in trained.items())
    assert set(out) >= {"lp_auc", "lp_mrr", "lp_hits", "source_val", "source_test", "score"}
    assert out["score"] == out["lp_auc"]


def test_source_is_the_single_task_baseline_of_the_same_seed():
    baseline = run_mechanism("nc", TASK, SPEC)
    transfer = run_mechanism("warm_nc_lp", TASK, SPEC)
    assert transfer["source_test"] == baseline["nc_acc"]
    assert transfer["source_val"] == baseline["val_nc_acc"]


@pytest.mark.parametrize("how,width", [("replace", 8), ("concat", 8 + 8)])
def test_frozen_embeddings_replace_or_extend_the_input(spy, how, width):
    out = run_mechanism(f"frozen_{how}_lp_nc", TASK, SPEC)
    source, target = spy
    assert source["target"] == "lp" and target["target"] == "nc"
    assert target["width"] == width
    z = mechanisms.embeddings(source["model"], TASK, "lp")
    expected = z if how == "replace" else torch.cat([TASK.x, z], 1)
    torch.testing.assert_close(target["x"], expected)
    assert out["score"] == out["nc_acc"]


def test_joint_grid_keeps_the_lambda_of_best_validation():
    seen = []

    def mapper(fn, items):
        seen.extend(items)
        return [fn(v) for v in items]

    out = run_mechanism("joint_grid", TASK, SPEC, map_fn=mapper)
    assert seen == [0.2, 0.8]
    selects = {lam: out[f"lam_{lam:g}_select"] for lam in seen}
    assert out["lam"] == max(selects, key=selects.get)
    assert out["score"] == pytest.approx(0.5 * (out["nc_acc"] + out["lp_auc"]))


def test_joint_with_lambda_one_and_accuracy_selection_is_the_nc_baseline():
    """lam = 1 zeroes the LP loss; selecting on accuracy alone then retraces the baseline."""
    spec = RunSpec("sage", EncoderConfig(hidden=8), FitConfig(epochs=25, patience=8,
                                                               select_alpha=1.0))
    joint = joint_run(1.0, TASK, spec)
    baseline = run_mechanism("nc", TASK, spec)
    assert joint["nc_acc"] == baseline["nc_acc"] and joint["epochs"] == baseline["epochs"]
    assert joint["val_nc_acc"] == baseline["val_nc_acc"]


def test_uncertainty_weighting_by_hand():
    weights = UncertaintyWeights()
    with torch.no_grad():
        weights.log_var.copy_(torch.tensor([math.log(4.0), 0.0]))
    loss = weights(torch.tensor(2.0), torch.tensor(3.0))
    # 0.5 * (2 / 4 + 3 / 1 + log 4)
    assert float(loss.detach()) == pytest.approx(0.5 * (0.5 + 3.0 + math.log(4.0)))
    out = run_mechanism("joint_uw", TASK, SPEC)
    assert out["weight_nc"] > 0 and out["weight_lp"] > 0 and math.isnan(out["lam"])


def test_unknown_mechanism():
    with pytest.raises(ValueError, match="unknown mechanism 'warm'"):
        run_mechanism("warm", TASK, SPEC)
