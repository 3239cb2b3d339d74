"""The gain predictor and its leave-one-dataset-out check, on gains built by hand."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from raystudy.algorithms.graph_transfer.recommend import (
    NO_TRANSFER,
    best_choice,
    leave_one_dataset_out,
    linear_trend,
    recommend,
    ridge_fit,
    ridge_predict,
)

HOMOPHILY = [0.1, 0.2, 0.3, 0.7, 0.8, 0.9]


def gains_and_features():
    """warm gains h - 0.5 (helps on homophilous graphs), joint gains 0.5 - h (the reverse)."""
    gains = {f"g{h}": {"warm": h - 0.5, "joint": 0.5 - h} for h in HOMOPHILY}
    features = {f"g{h}": [h, 8.0] for h in HOMOPHILY}     # a constant second statistic
    return gains, features


def test_ridge_without_penalty_is_least_squares():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(20, 3)), rng.normal(size=20)
    model = ridge_fit(x, y, alpha=0.0)
    design = np.c_[np.ones(20), x]
    coef = np.linalg.lstsq(design, y, rcond=None)[0]
    np.testing.assert_allclose(ridge_predict(model, x), design @ coef, atol=1e-10)


def test_ridge_shrinks_towards_the_mean():
    x = np.array([[0.0], [1.0], [2.0]])
    y = np.array([0.0, 1.0, 2.0])
    # standardised x = [-a, 0, a] with a = sqrt(1.5); w = a*2 / (2a^2 + alpha)
    a = np.sqrt(1.5)
    model = ridge_fit(x, y, alpha=1.0)
    assert model["w"][0] == pytest.approx(2 * a / (2 * a * a + 1.0))
    assert model["b"] == pytest.approx(1.0)


def test_best_choice():
    assert best_choice({"a": 0.1, "b": 0.3}) == "b"
    assert best_choice({"a": -0.1, "b": 0.0}) == NO_TRANSFER
    assert best_choice({"a": float("nan"), "b": 0.2}) == "b"


def test_lodo_recovers_the_homophily_rule_the_yardstick_does_not():
    gains, features = gains_and_features()
    result = leave_one_dataset_out(gains, features, alpha=1e-6)
    assert result["accuracy"] == 1.0 and result["mean_regret"] == pytest.approx(0.0)
    held = result["datasets"]["g0.1"]
    assert {k: held[k] for k in ("recommended", "observed_best", "yardstick", "regret")} == {
        "recommended": "joint", "observed_best": "joint", "yardstick": "warm", "regret": 0.0}
    assert held["predicted"]["warm"] == pytest.approx(-0.4, abs=1e-4)   # extrapolated
    # the average-best rule follows the other datasets' mean homophily, which leans away
    # from the held-out one (held 0.1: mean of the rest 0.58 -> warm): wrong every time
    assert result["yardstick_accuracy"] == 0.0
    fitted = recommend(gains, features, alpha=1e-6)
    assert fitted["g0.9"]["recommended"] == "warm"
    assert fitted["g0.9"]["predicted"]["warm"] == pytest.approx(0.4, abs=1e-4)


def test_lodo_needs_three_datasets():
    gains, features = gains_and_features()
    two = {k: gains[k] for k in list(gains)[:2]}
    assert np.isnan(leave_one_dataset_out(two, features)["accuracy"])


def test_linear_trend_matches_scipy():
    rng = np.random.default_rng(1)
    x = rng.uniform(size=12)
    y = 0.3 * x + rng.normal(scale=0.05, size=12)
    trend = linear_trend(x, y)
    ref = stats.linregress(x, y)
    half = stats.t.ppf(0.975, 10) * ref.stderr
    assert trend["slope"] == pytest.approx(ref.slope)
    assert trend["low"] == pytest.approx(ref.slope - half)
    assert trend["high"] == pytest.approx(ref.slope + half)
