"""Search-space YAML to Tune param spaces."""

from __future__ import annotations

import pytest

from raystudy.errors import ConfigError
from raystudy.platform.spaces import build_param_space, log_grid
from raystudy.studies.optimizer_robustness.recipe import OptimizerRobustnessConfig


def test_log_grid_hand_computed():
    assert log_grid(1e-4, 1.0, 5) == [1e-4, 1e-3, 1e-2, 1e-1, 1.0]
    assert log_grid(1e-3, 1e-1, 3) == [1e-3, 1e-2, 1e-1]
    with pytest.raises(ValueError):
        log_grid(0.0, 1.0, 3)


def test_grid_size_is_product_and_optuna_gets_choices():
    params = {"optimizer.name": {"grid": ["adamw", "muon_adam"]},
              "optimizer.lr": {"loggrid": [1e-3, 1e-1, 3]}, "train.seed": 4}
    space, size = build_param_space(params, OptimizerRobustnessConfig(), "grid")
    assert size == 6
    assert space["optimizer.lr"] == {"grid_search": [1e-3, 1e-2, 1e-1]}
    assert space["train.seed"] == 4
    space, size = build_param_space(params, OptimizerRobustnessConfig(), "optuna")
    assert size == 1
    assert sorted(space["optimizer.lr"].categories) == [1e-3, 1e-2, 1e-1]


@pytest.mark.parametrize(
    "params,message",
    [
        ({"optimizer.lr": {"grid": [0.1, -1.0]}}, "optimizer.lr=-1.0 must be > 0"),
        ({"optimizer.name": {"grid": ["adam"]}}, "optimizer.name='adam' is not one of"),
        ({"optimizer.lrate": {"grid": [0.1]}}, "unknown config key 'optimizer.lrate'"),
        ({"optimizer.lr": {"normal": [0, 1]}}, "expected one of grid, loggrid"),
        ({"optimizer.weight_decay": {"loguniform": [0.0, 1.0]}}, "loguniform needs lo > 0"),
    ],
)
def test_invalid_spaces_fail_before_any_trial(params, message):
    with pytest.raises(ConfigError, match=message):
        build_param_space(params, OptimizerRobustnessConfig(), "grid")
