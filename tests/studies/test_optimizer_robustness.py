"""The optimizer study's train loop, without Ray: learning, resume, divergence."""

from __future__ import annotations

import pytest

from raystudy.contract.context import LocalContext, TrialDiverged
from raystudy.platform.configuration.config import apply_overrides
from raystudy.studies.optimizer_robustness.config import OptimizerRobustnessConfig
from raystudy.studies.optimizer_robustness.recipe import STUDY, train_loop

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
    from raystudy.platform.configuration.config import validate

    with pytest.raises(ConfigError, match=r"optimizer.lr=-0.1 must be > 0"):
        validate(tiny_config(**{"optimizer.lr": -0.1}))
    with pytest.raises(ConfigError, match="data.source=tokens needs data.path"):
        validate(tiny_config(**{"data.source": "tokens"}))


@pytest.mark.ray
def test_token_files_on_an_s3_compatible_store_are_read_with_ray_data(ray_session, s3_server,
                                                                     tmp_path):
    """data.path=s3://...?endpoint_override=...: the files are found on the store before
    Ray, and Ray Data reads them through a filesystem that carries the endpoint."""
    import numpy as np

    from raystudy.contract import storage
    from raystudy.errors import MissingDataError
    from raystudy.studies.optimizer_robustness.recipe import check_data, token_datasets

    rows = {"train": np.arange(6 * 17, dtype=np.uint16).reshape(6, 17),
            "val": np.arange(2 * 17, dtype=np.uint16).reshape(2, 17) + 1000}
    (tmp_path / "tokens").mkdir()
    for split, array in rows.items():
        np.save(tmp_path / "tokens" / f"{split}.npy", array)
    uri = s3_server.uri(prefix="data/tokens")
    storage.upload(tmp_path / "tokens", uri)

    config = tiny_config(**{"data.source": "tokens", "data.path": uri})
    assert check_data(config) == [f"data.path={uri} (object storage) is read by the trials"]
    datasets = token_datasets(config)
    for split, array in rows.items():
        read = np.stack([row["data"] for row in datasets[split].take_all()])
        np.testing.assert_array_equal(np.sort(read, axis=0), array)
    missing = tiny_config(**{"data.source": "tokens",
                             "data.path": s3_server.uri(prefix="data/elsewhere")})
    with pytest.raises(MissingDataError, match=r"data/elsewhere\?endpoint.*: no train.npy"):
        check_data(missing)
