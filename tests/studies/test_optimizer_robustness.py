"""The optimizer study's train loop, without Ray: learning, resume, divergence."""

from __future__ import annotations

import pytest

from raystudy.platform.config import apply_overrides
from raystudy.platform.context import LocalContext, TrialDiverged
from raystudy.studies.optimizer_robustness import STUDY, OptimizerRobustnessConfig, train_loop

TINY = {"model.d_model": 16, "model.n_layers": 1, "model.seq_len": 16, "train.steps": 12,
        "train.eval_every": 3, "train.eval_batches": 2, "data.max_bytes": 40000}


def tiny_config(**overrides) -> OptimizerRobustnessConfig:
    return apply_overrides(OptimizerRobustnessConfig(), {**TINY, **overrides})


def run(config, checkpoint=None) -> LocalContext:
    ctx = LocalContext(STUDY.metrics, checkpoint=checkpoint)
    train_loop(config, ctx)
    return ctx


@pytest.mark.parametrize("name,lr", [("adamw", 1e-2), ("muonmax_momo", 1e-1)])
def test_loop_learns_and_reports_namespaced_metrics(name, lr):
    ctx = run(tiny_config(**{"optimizer.name": name, "optimizer.lr": lr}))
    losses = [r["eval/loss"] for r in ctx.reports]
    assert len(losses) == 4 and losses[-1] < losses[0] < 6.0
    assert [r["train/step"] for r in ctx.reports] == [3, 6, 9, 12]
    assert all(r["diverged"] == 0 for r in ctx.reports)


def test_resume_from_checkpoint_reproduces_the_uninterrupted_run():
    config = tiny_config(**{"optimizer.name": "muon_adam_momo", "optimizer.lr": 0.05,
                            "train.checkpoint_every": 1})
    first_leg = run(tiny_config(**{"optimizer.name": "muon_adam_momo", "optimizer.lr": 0.05,
                                   "train.checkpoint_every": 1, "train.steps": 3}))
    full = run(config)
    resumed = run(config, checkpoint=first_leg.last_checkpoint)  # restart after step 3
    assert [r["train/step"] for r in resumed.reports] == [6, 9, 12]
    for a, b in zip(full.reports[1:], resumed.reports, strict=True):
        assert a["eval/loss"] == pytest.approx(b["eval/loss"], rel=1e-6)


def test_nan_loss_is_reported_as_diverged_and_stops():
    ctx = LocalContext(STUDY.metrics)
    with pytest.raises(TrialDiverged):
        train_loop(tiny_config(**{"optimizer.name": "sgd", "optimizer.lr": 1e6}), ctx)
    assert ctx.reports[-1]["diverged"] == 1
    assert ctx.reports[-1]["eval/loss"] == float("inf")


def test_config_validation_messages():
    from raystudy.errors import ConfigError
    from raystudy.platform.config import validate

    with pytest.raises(ConfigError, match="optimizer.lr=-0.1 must be a positive number"):
        validate(tiny_config(**{"optimizer.lr": -0.1}))
    with pytest.raises(ConfigError, match="data.source=tokens needs data.path"):
        validate(tiny_config(**{"data.source": "tokens"}))
