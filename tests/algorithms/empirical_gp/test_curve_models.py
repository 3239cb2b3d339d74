"""Parametric learning-curve baselines: recovery on their own curves, scipy's curve_fit."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import curve_fit

from raystudy.algorithms.empirical_gp.curve_models import fit_and_extrapolate, fit_curve

# the two families written out again, independently of the module
FORMULAS = {"pow3": lambda t, a, b, c: a - b * t ** (-c),
            "log_power": lambda t, a, b, c: a / (1 + (t / np.exp(b)) ** (-c))}
TRUTH = {"pow3": np.array([0.85, 0.5, 0.7]), "log_power": np.array([0.9, 1.0, 1.5])}
T = np.arange(1.0, 53.0)            # 52 epochs
K = 13                              # observed prefix: a quarter


@pytest.mark.parametrize("model", sorted(FORMULAS))
def test_recovers_its_own_curves_and_extrapolates(model):
    f = FORMULAS[model]
    y = f(T, *TRUTH[model]) + 0.001 * np.random.default_rng(0).standard_normal(len(T))
    fit = fit_curve(model, T[:K], y[:K])
    np.testing.assert_allclose(fit.params, TRUTH[model], rtol=0.1)
    mean, var = fit.predict(T[K:])
    assert np.abs(mean - f(T[K:], *TRUTH[model])).max() < 0.02
    assert (var > 0).all() and var[-1] > var[0]       # the band widens with the horizon


@pytest.mark.parametrize("model", sorted(FORMULAS))
def test_least_squares_and_delta_method_agree_with_curve_fit(model):
    rng = np.random.default_rng(1)
    f = FORMULAS[model]
    Y = np.stack([f(T, *(TRUTH[model] * rng.uniform(0.8, 1.2, 3))) for _ in range(4)])
    Y = Y + 0.01 * rng.standard_normal(Y.shape)
    means, variances = fit_and_extrapolate(model, T[:K], Y[:, :K], T[K:])
    for y, mean, var in zip(Y, means, variances, strict=True):
        ours = fit_curve(model, T[:K], y[:K])
        p, pcov = curve_fit(f, T[:K], y[:K], p0=TRUTH[model], maxfev=20_000)
        sse_ref = np.sum((f(T[:K], *p) - y[:K]) ** 2)
        sse = np.sum((f(T[:K], *ours.params) - y[:K]) ** 2)
        assert sse <= sse_ref * (1 + 1e-6) + 1e-12
        np.testing.assert_allclose(ours.params, p, rtol=1e-3, atol=1e-4)
        np.testing.assert_allclose(mean, f(T[K:], *p), atol=1e-4)
        # curve_fit's pcov = sigma^2 (J^T J)^-1 with sigma^2 = SSE / (n - 3); g by differences
        sigma2 = sse_ref / (K - 3)
        h = 1e-6
        g = np.stack([(f(T[K:], *(p + h * e)) - f(T[K:], *(p - h * e))) / (2 * h)
                      for e in np.eye(3)], axis=-1)
        reference = sigma2 + np.einsum("ti,ij,tj->t", g, pcov, g)
        np.testing.assert_allclose(var, reference, rtol=1e-3)


def test_refuses_too_short_prefixes():
    with pytest.raises(ValueError, match="need more than 3 points"):
        fit_curve("pow3", T[:3], T[:3])
    with pytest.raises(ValueError, match="'exp3' is not one of pow3, log_power"):
        fit_curve("exp3", T[:5], T[:5])
