"""The Dirichlet MLE and likelihood-ratio test against scipy.optimize on scipy's density."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import optimize, stats

from raystudy.algorithms.two_sample import dirichlet_lrt_test, dirichlet_mle


def scipy_mle(x):
    """Maximise sum log scipy.stats.dirichlet.pdf over log alpha with L-BFGS-B."""
    def nll(log_alpha):
        return -stats.dirichlet(np.exp(log_alpha)).logpdf(x.T).sum()
    res = optimize.minimize(nll, np.zeros(x.shape[1]), method="L-BFGS-B",
                            options={"ftol": 1e-14, "gtol": 1e-10, "maxiter": 2000})
    return np.exp(res.x), -res.fun


@pytest.mark.parametrize(("alpha", "n"), [([2.0, 3.0, 4.0], 80), ([0.5, 1.0, 0.7, 2.0], 60)])
def test_mle_matches_scipy_optimize(alpha, n):
    x = np.random.default_rng(0).dirichlet(alpha, n)
    ref, _ = scipy_mle(x)
    np.testing.assert_allclose(dirichlet_mle(x[None])[0], ref, rtol=1e-4)


def test_likelihood_ratio_statistic_matches_scipys_density():
    rng = np.random.default_rng(1)
    x, y = rng.dirichlet([2, 3, 4], 50), rng.dirichlet([3, 3, 2], 40)
    (_, lx), (_, ly), (_, lz) = scipy_mle(x), scipy_mle(y), scipy_mle(np.r_[x, y])
    res = dirichlet_lrt_test(x, y)
    assert res.statistic == pytest.approx(2 * (lx + ly - lz), rel=1e-5)
    assert res.pvalue == pytest.approx(stats.chi2.sf(res.statistic, 3), rel=1e-10)


def test_lrt_holds_its_level_and_sees_a_concentration_change():
    rng = np.random.default_rng(2)
    X, Y = rng.dirichlet([2, 2, 2], (300, 50)), rng.dirichlet([2, 2, 2], (300, 50))
    assert 0.02 <= dirichlet_lrt_test(X, Y).reject.mean() <= 0.09
    Y_alt = rng.dirichlet([4, 4, 4], (100, 50))
    assert dirichlet_lrt_test(X[:100], Y_alt).reject.mean() > 0.5


def test_lrt_with_zeros_is_finite():
    rng = np.random.default_rng(3)
    x = rng.multinomial(6, [0.2, 0.3, 0.5], 30) / 6
    y = rng.multinomial(6, [0.3, 0.3, 0.4], 30) / 6
    assert np.isfinite(dirichlet_lrt_test(x, y).statistic)
