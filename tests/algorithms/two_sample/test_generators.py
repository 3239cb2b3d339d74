"""Generators: rows on the simplex or sphere, the invariants each family promises, seeds."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special

from raystudy.algorithms.two_sample import FAMILIES, Scenario, clr, generate, ilr
from raystudy.algorithms.two_sample.generators import shifted_alpha


def draw(family, effect, reps=200, n=50, m=60, D=3, seed=0, **kw):
    s = Scenario(family, n=n, m=m, D=D, effect=effect, **kw)
    return generate(s, reps, np.random.default_rng(seed))


@pytest.mark.parametrize("family", [f for f in FAMILIES if f != "file"])
def test_rows_lie_on_the_simplex_or_the_sphere(family):
    effect = {"vmf": 0.3, "shape": 0.5, "mixture": 0.5}.get(family, 0.0 if family in
                                                            ("dirichlet", "logistic_normal")
                                                            else 1.0)
    x, y = draw(family, effect, reps=3)
    assert x.shape == (3, 50, 3) and y.shape == (3, 60, 3)
    for a in (x, y):
        if family == "vmf":
            np.testing.assert_allclose(np.linalg.norm(a, axis=-1), 1.0, atol=1e-12)
        else:
            assert (a >= 0).all()
            np.testing.assert_allclose(a.sum(-1), 1.0, atol=1e-12)


# Tolerances are about 4 Monte Carlo standard errors at 400 x 50 rows.


def test_concentration_keeps_the_mean_and_a_zero_clr_mean():
    x, y = draw("concentration", 3.0, reps=400)
    for a in (x, y):
        flat = a.reshape(-1, 3)
        np.testing.assert_allclose(flat.mean(0), 1 / 3, atol=0.005)
        np.testing.assert_allclose(clr(flat).mean(0), 0.0, atol=0.02)
    assert y.reshape(-1, 3).var(0).mean() < 0.5 * x.reshape(-1, 3).var(0).mean()


def test_mixture_matches_mean_and_clr_mean_but_not_the_law():
    x, y = draw("mixture", 0.6, reps=400)
    fx, fy = x.reshape(-1, 3), y.reshape(-1, 3)
    np.testing.assert_allclose(fy.mean(0), 1 / 3, atol=0.007)
    np.testing.assert_allclose(clr(fy).mean(0), 0.0, atol=0.03)
    assert fy.var(0).mean() > 1.5 * fx.var(0).mean()


def test_shape_keeps_the_ilr_mean_and_changes_the_correlation():
    x, y = draw("shape", 0.8, reps=400)
    fx, fy = ilr(x.reshape(-1, 3)), ilr(y.reshape(-1, 3))
    np.testing.assert_allclose(fy.mean(0), 0.0, atol=0.015)
    np.testing.assert_allclose(np.cov(fy.T), 0.25 * np.array([[1, 0.8], [0.8, 1]]), atol=0.01)
    np.testing.assert_allclose(np.cov(fx.T), 0.25 * np.eye(2), atol=0.01)


def test_mean_shift_moves_the_mean_as_dirichlet_theory_says():
    s = Scenario("mean_shift", D=3, effect=1.5)
    alpha = shifted_alpha(s)
    assert alpha.sum() == pytest.approx(6.0)
    _, y = draw("mean_shift", 1.5, reps=400)
    np.testing.assert_allclose(y.reshape(-1, 3).mean(0), alpha / alpha.sum(), atol=0.005)
    # E log x_k = digamma(alpha_k) - digamma(alpha_0)
    np.testing.assert_allclose(np.log(y.reshape(-1, 3)).mean(0),
                               special.digamma(alpha) - special.digamma(alpha.sum()), atol=0.025)


def test_zeros_family_has_exact_zeros_on_the_count_grid():
    x, y = draw("zeros", 1.0, reps=20, depth=8)
    assert (x == 0).mean() > 0.05 and (y == 0).mean() > 0.05
    np.testing.assert_allclose(x * 8, np.round(x * 8), atol=1e-12)


def test_vmf_alternative_turns_the_mean_by_the_effect_angle():
    x, y = draw("vmf", 0.5, reps=50, kappa=20.0)
    mx, my = x.reshape(-1, 3).mean(0), y.reshape(-1, 3).mean(0)
    cos = mx @ my / np.linalg.norm(mx) / np.linalg.norm(my)
    assert np.arccos(cos) == pytest.approx(0.5, abs=0.02)


def test_effect_zero_is_the_null_and_seeds_reproduce():
    a = draw("concentration", 0.0, reps=2, seed=5)
    b = draw("concentration", 0.0, reps=2, seed=5)
    np.testing.assert_array_equal(a[0], b[0])
    c = draw("concentration", 0.0, reps=2, seed=6)
    assert not np.array_equal(a[0], c[0])


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"family": "beta"}, "family must be one of"),
    ({"family": "dirichlet", "effect": 0.5}, "is a null"),
    ({"family": "shape", "D": 2, "effect": 0.1}, "needs D >= 3"),
    ({"family": "mixture", "effect": 1.0}, "effect in \\[0, 1\\)"),
    ({"family": "file"}, "needs a path"),
    ({"n": 1}, "at least 2"),
    ({"effect": -1.0, "family": "mean_shift"}, "effect must be"),
])
def test_bad_scenarios_raise_one_line(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Scenario(**kwargs)
