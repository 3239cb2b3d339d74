"""Search-space YAML to Tune param spaces."""

from __future__ import annotations

import pytest

from raystudy.errors import ConfigError
from raystudy.platform.configuration.spaces import build_param_space, log_grid
from raystudy.studies.optimizer_robustness.config import OptimizerRobustnessConfig


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


def test_a_valid_pair_of_interdependent_keys_is_accepted():
    """48 / 6 is fine although 48 is not divisible by the default 4 heads, nor 64 by 6."""
    params = {"model.d_model": {"grid": [48]}, "model.n_heads": {"grid": [6]}}
    space, size = build_param_space(params, OptimizerRobustnessConfig(), "grid")
    assert size == 1 and space["model.d_model"] == {"grid_search": [48]}


def test_an_invalid_combination_is_named_with_the_rule():
    params = {"model.d_model": {"grid": [64, 36]}, "model.n_heads": {"grid": [4, 8]}}
    with pytest.raises(ConfigError) as info:
        build_param_space(params, OptimizerRobustnessConfig(), "grid")
    assert str(info.value) == ("model.d_model=36 x model.n_heads=8: model.d_model must be "
                               "divisible by model.n_heads")
    # fixed keys take part in every combination but are not named
    params = {"model.d_model": {"grid": [64, 60]}, "model.n_heads": 8}
    with pytest.raises(ConfigError, match=r"^model.d_model=60: model.d_model must be"):
        build_param_space(params, OptimizerRobustnessConfig(), "grid")


def test_sampled_keys_are_checked_at_every_choice_and_every_small_randint_value():
    from raystudy.platform.configuration.spaces import check_combinations, parse_params

    config = OptimizerRobustnessConfig()
    params = {"model.n_heads": {"choice": [2, 4]}, "model.d_model": {"randint": [60, 65]},
              "optimizer.lr": {"loguniform": [1e-4, 1e-1]}}
    with pytest.raises(ConfigError, match="model.n_heads=2 x model.d_model=61"):
        check_combinations(parse_params(params, config), config)
    # both ends (60, 64) divide by 4: only a value in the middle fails
    with pytest.raises(ConfigError, match=r"^model.d_model=61 x optimizer.lr="):
        check_combinations(parse_params({**params, "model.n_heads": 4}, config), config)
    assert check_combinations(parse_params({**params, "model.d_model": {"randint": [64, 65]}},
                                           config), config) == 2 * 1 * 2
    with pytest.raises(ConfigError, match="model.n_heads=2 x model.d_model=61"):
        build_param_space(params, config, "random")
    # a long range is checked at its two ends (999 is odd)
    with pytest.raises(ConfigError, match="model.n_heads=2 x model.d_model=999"):
        check_combinations(parse_params({**params, "model.d_model": {"randint": [64, 1000]}},
                                        config), config)


def test_ten_thousand_combinations_are_all_checked():
    from raystudy.platform.configuration.spaces import check_combinations, parse_params

    config = OptimizerRobustnessConfig()
    params = {"optimizer.lr": {"loggrid": [1e-5, 1.0, 100]},
              "train.seed": {"grid": list(range(100))}}
    assert check_combinations(parse_params(params, config), config) == 10_000
    # 48/4, 48/8, 60/4 pass; 60/8 fails, first met after 15,000 valid combinations
    params = {"model.d_model": {"grid": [48, 60]}, "model.n_heads": {"grid": [4, 8]}, **params}
    with pytest.raises(ConfigError, match=r"^model.d_model=60 x model.n_heads=8 x "
                                          r"optimizer.lr=1e-05 x train.seed=0: "):
        check_combinations(parse_params(params, config), config)
