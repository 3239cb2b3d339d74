"""Input checks (one-sentence ValueErrors) and the square-root map."""

from __future__ import annotations

import numpy as np
import pytest

from raystudy.algorithms.two_sample import two_sample_test
from raystudy.algorithms.two_sample.samples import check_samples, to_sphere


def comps(n, D=3, seed=0):
    return np.random.default_rng(seed).dirichlet(np.ones(D), n)


def test_square_root_map_lands_on_the_sphere_and_keeps_zeros_finite():
    x = np.array([[0.25, 0.75, 0.0], [1.0, 0.0, 0.0], [0.2, 0.3, 0.5]])
    u = to_sphere(x)
    np.testing.assert_allclose(np.linalg.norm(u, axis=-1), 1.0, atol=1e-15)
    np.testing.assert_allclose(u[0], [0.5, np.sqrt(0.75), 0.0])
    assert (u >= 0).all()


def test_check_samples_adds_a_batch_axis_and_closes_rows():
    x, y = comps(5), comps(6, seed=1)
    X, Y, batched = check_samples(x, y, min_points=2)
    assert X.shape == (1, 5, 3) and Y.shape == (1, 6, 3) and not batched
    X, Y, batched = check_samples(np.stack([x, x]), np.stack([y, y]))
    assert X.shape == (2, 5, 3) and batched
    X, _, _ = check_samples(x.astype(np.float32), y)
    assert X.dtype == np.float64
    np.testing.assert_allclose(X.sum(-1), 1.0, atol=1e-15)


BAD = [
    (lambda x, y: (x[:, :2] / x[:, :2].sum(1, keepdims=True), y), "x has D = 2 columns but y"),
    (lambda x, y: (np.where(np.arange(3) == 0, np.nan, x), y), "x contains NaN"),
    (lambda x, y: (x * 2, y), "x has rows that do not sum to 1"),
    (lambda x, y: (x, np.c_[-y[:, :1], y[:, 1:] + 2 * y[:, :1]]), "y has negative entries"),
    (lambda x, y: (x[:3], y), "needs at least 4 points per sample, got 3 in x"),
    (lambda x, y: (x[None], y), "both be 2-D or both 3-D"),
    (lambda x, y: (x[0], y), "shape (n, D) or (R, n, D)"),
    (lambda x, y: ("abc", y), "x must be"),
]


@pytest.mark.parametrize(("mutate", "message"), BAD)
def test_bad_input_raises_one_sentence(mutate, message):
    x, y = mutate(comps(8), comps(9, seed=1))
    with pytest.raises(ValueError) as err:
        two_sample_test(x, y)
    text = str(err.value)
    assert message in text
    assert text.count(". ") == 0 and "\n" not in text  # one sentence, one line


def test_directional_rows_must_be_unit_vectors():
    u = to_sphere(comps(8))
    with pytest.raises(ValueError, match="not unit vectors"):
        two_sample_test(2 * u, u, data="directional")
    with pytest.raises(ValueError, match="data must be one of"):
        two_sample_test(u, u, data="spherical")


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"degree": -1}, "degree must be a non-negative integer"),
    ({"degree": 2.5}, "degree must be a non-negative integer"),
    ({"studentize": "chen_qin"}, "studentize must be one of"),
    ({"distance": "euclid"}, "distance must be one of"),
    ({"alpha": 1.5}, "alpha must lie in"),
])
def test_bad_options_raise(kwargs, message):
    with pytest.raises(ValueError, match=message):
        two_sample_test(comps(8), comps(8, seed=1), **kwargs)
