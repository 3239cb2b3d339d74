"""em_fit against closed forms, a per-dataset loop, and a known data-generating GP."""

from __future__ import annotations

import gpytorch
import numpy as np
import pytest
import torch
from egp_helpers import gp_datasets, grid, matern  # noqa: I001

from raystudy.algorithms.empirical_gp import (
    Corpus,
    check_datasets,
    em_fit,
    loop_statistics,
    m_step,
    shared_grid_prior,
)
from raystudy.algorithms.empirical_gp.corpora import GPFamily, matern52
from raystudy.algorithms.empirical_gp.prior import ShiftBasis

DT = torch.float64


def gaussian_kl(m1, S1, m2, S2) -> float:
    """KL(N(m1, S1) || N(m2, S2)) in NumPy."""
    S2_inv = np.linalg.inv(S2)
    d = m2 - m1
    return 0.5 * (np.trace(S2_inv @ S1) + d @ S2_inv @ d - len(m1)
                  + np.linalg.slogdet(S2)[1] - np.linalg.slogdet(S1)[1])


@pytest.mark.parametrize("kwargs", [{}, {"learn_noise": True}, {"shrinkage": 0.0, "noise": 1e-3}])
def test_log_likelihood_never_decreases(kwargs):
    data = gp_datasets(60, seed=1)
    kwargs = {"noise": 0.01, **kwargs}
    prior = em_fit(data, grid(12), matern(0.1), iterations=15, **kwargs)
    ll = np.array([prior.initial_log_likelihood, *prior.log_likelihoods])
    assert len(prior.log_likelihoods) == 15
    assert np.all(np.diff(ll) >= -1e-8 * np.abs(ll[1:])), np.diff(ll)
    assert ll[-1] > ll[0] + 10  # it learns something
    if kwargs.get("learn_noise"):
        assert abs(prior.noise - 0.05**2) < 0.5 * 0.05**2  # from 0.01 toward the truth


def test_map_em_never_decreases_the_log_posterior():
    data = gp_datasets(8, seed=2)
    prior = em_fit(data, grid(10), matern(0.1), noise=0.0025, iterations=12,
                   prior="inverse_wishart")
    obj = np.array(prior.objectives)
    assert np.all(np.diff(obj) >= -1e-8 * np.abs(obj[1:]))


def test_learned_prior_approaches_the_true_gp_as_the_corpus_grows():
    Z = grid(10)
    true_mean, true_cov = GPFamily(lengthscale=0.3).moments(Z[:, 0].numpy())
    kls = []
    for S in (20, 100, 500):
        data = gp_datasets(S, seed=S)
        prior = em_fit(data, Z, matern(0.1), noise=0.05**2, iterations=40)
        kls.append(gaussian_kl(true_mean, true_cov, prior.mean.numpy(), prior.covariance.numpy()))
    assert kls[0] > kls[1] > kls[2], kls
    assert kls[2] < 0.05 * kls[0] and kls[2] < 2.0, kls


def closed_form_gp(Kxx, Kxz, Kzz, mx, mz, y, s2):
    """Posterior of f(Z) given y = f(X) + noise under a GP prior (NumPy, dense inverse)."""
    A_inv = np.linalg.inv(Kxx + s2 * np.eye(len(y)))
    mean = mz + Kxz.T @ A_inv @ (y - mx)
    cov = Kzz - Kxz.T @ A_inv @ Kxz
    return mean, cov


def test_one_dataset_and_one_iteration_gives_the_closed_form_gp_posterior():
    rng = np.random.default_rng(0)
    x = np.sort(rng.uniform(0, 1, 7))
    y = np.sin(4 * x) + 0.1 * rng.standard_normal(7)
    Z = grid(9)
    z = Z[:, 0].numpy()
    kernel, s2 = matern(0.25, 1.3), 0.01
    mean_module = gpytorch.means.ConstantMean().to(DT)
    mean_module.constant = 0.3
    prior = em_fit([(torch.tensor(x), torch.tensor(y))], Z, kernel, mean_module, noise=s2,
                   iterations=1, matmul_dtype=DT)  # exact: float64 products
    k = 1.3 * 1.0
    mean, cov = closed_form_gp(k * matern52(x, x, 0.25), k * matern52(x, z, 0.25),
                               k * matern52(z, z, 0.25), 0.3, 0.3, y, s2)
    # M-step with S = 1: mu' = m_1 and Sigma' = C_1, the base GP's posterior on Z.
    np.testing.assert_allclose(prior.mean.numpy(), mean, atol=1e-9)
    np.testing.assert_allclose(prior.covariance.numpy(), cov, atol=1e-9)
    # The initial log-likelihood is the base GP's log marginal likelihood of y.
    A = k * matern52(x, x, 0.25) + s2 * np.eye(7)
    r = y - 0.3
    ll = -0.5 * (r @ np.linalg.solve(A, r) + np.linalg.slogdet(A)[1] + 7 * np.log(2 * np.pi))
    assert prior.initial_log_likelihood == pytest.approx(ll, rel=1e-7)  # GPyTorch vs NumPy Matern


def random_state(M: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    B = torch.randn(M, M, generator=g, dtype=DT)
    return torch.randn(M, generator=g, dtype=DT), B @ B.T / M + 0.1 * torch.eye(M, dtype=DT)


def test_batched_estep_equals_the_per_dataset_loop_to_1e10():
    data = check_datasets(gp_datasets(40, seed=3, lo=1, hi=9), grid(11))
    basis = ShiftBasis(grid(11), matern(0.15), gpytorch.means.ConstantMean().to(DT))
    mu, Sigma = random_state(11, seed=4)
    stats = Corpus(data, basis).statistics(mu, Sigma, 0.02, need_noise=True)
    sum_m, sum_C, sum_mm, ll, a_sq, trace_inv = loop_statistics(data, basis, mu, Sigma, 0.02)
    S = len(data)
    np.testing.assert_allclose(S * mu + Sigma @ stats.b, sum_m, rtol=0, atol=1e-10)
    np.testing.assert_allclose(S * Sigma - Sigma @ stats.G @ Sigma, sum_C, rtol=0, atol=1e-10)
    mean_m = sum_m / S
    scatter = sum_mm - S * torch.outer(mean_m, mean_m)
    batched_scatter = Sigma @ (stats.Q - torch.outer(stats.b, stats.b) / S) @ Sigma
    np.testing.assert_allclose(batched_scatter, scatter, rtol=0, atol=1e-10)
    assert stats.log_likelihood == pytest.approx(ll, rel=1e-12)
    assert stats.a_sq == pytest.approx(a_sq, rel=1e-10)
    assert stats.trace_inv == pytest.approx(trace_inv, rel=1e-10)


def test_em_fit_equals_em_written_as_a_loop():
    Z = grid(8)
    data = check_datasets(gp_datasets(25, seed=5), Z)
    kernel = matern(0.2)
    fitted = em_fit(data, Z, kernel, noise=0.01, iterations=4, learn_noise=True,
                    matmul_dtype=DT)
    basis = ShiftBasis(Z, kernel)
    mu, Sigma, s2 = basis.m_Z.clone(), kernel(Z, Z).to_dense().detach(), 0.01
    N = sum(len(y) for _, y in data)
    for _ in range(4):
        sum_m, sum_C, sum_mm, _, a_sq, trace_inv = loop_statistics(data, basis, mu, Sigma, s2)
        mu_new = sum_m / len(data)
        Sigma = (sum_C + sum_mm) / len(data) - torch.outer(mu_new, mu_new)
        s2 = (s2 * s2 * a_sq + N * s2 - s2 * s2 * trace_inv) / N
        mu = mu_new
    np.testing.assert_allclose(fitted.mean, mu, atol=1e-10)
    np.testing.assert_allclose(fitted.covariance, Sigma, atol=1e-10)
    assert fitted.noise == pytest.approx(s2, rel=1e-10)


def test_map_fn_shards_give_the_same_fit():
    Z = grid(10)
    data = gp_datasets(30, seed=6)
    calls = []

    def map_fn(fn, items):
        calls.append(len(items))
        return [fn(item) for item in items]

    one = em_fit(data, Z, matern(0.1), noise=0.01, iterations=3, learn_noise=True,
                 matmul_dtype=DT)
    sharded = em_fit(data, Z, matern(0.1), noise=0.01, iterations=3, learn_noise=True,
                     map_fn=map_fn, shards=3, matmul_dtype=DT)
    assert calls == [3] * 4  # one E-step before the first M-step and one after each
    np.testing.assert_allclose(sharded.covariance, one.covariance, atol=1e-10)
    np.testing.assert_allclose(sharded.mean, one.mean, atol=1e-10)
    np.testing.assert_allclose(sharded.log_likelihoods, one.log_likelihoods, rtol=1e-10)


def test_inverse_wishart_and_shrinkage_updates():
    Z = grid(6)
    data = check_datasets(gp_datasets(5, seed=7), Z)
    kernel = matern(0.2)
    basis = ShiftBasis(Z, kernel)
    K = kernel(Z, Z).to_dense().detach()
    mu, Sigma = basis.m_Z.clone(), K.clone()
    stats = Corpus(data, basis).statistics(mu, Sigma, 0.01)
    sum_m, sum_C, sum_mm, *_ = loop_statistics(data, basis, mu, Sigma, 0.01)
    S, M = len(data), 6
    m_bar = sum_m / S
    T = sum_C + sum_mm - S * torch.outer(m_bar, m_bar)
    nu = M + 2.0
    _, Sigma_iw, _ = m_step(stats, mu, Sigma, 0.01, K, prior="inverse_wishart")
    np.testing.assert_allclose(Sigma_iw, (T + (nu + M + 1) * K) / (S + nu + M + 1), atol=1e-10)
    _, Sigma_sh, _ = m_step(stats, mu, Sigma, 0.01, K, shrinkage=1.0)
    np.testing.assert_allclose(Sigma_sh, torch.trace(T / S) / torch.trace(K) * K, atol=1e-10)
    # The IW prior pulls a 3-dataset fit toward K: closer than the ML fit is.
    ml = em_fit(data[:3], Z, kernel, noise=0.01, iterations=10)
    iw = em_fit(data[:3], Z, kernel, noise=0.01, iterations=10, prior="inverse_wishart")
    assert torch.linalg.norm(iw.covariance - K) < torch.linalg.norm(ml.covariance - K)


def test_learned_covariance_stays_positive_definite():
    Z = grid(30)  # more reference points than datasets: rank-deficient scatter
    prior = em_fit(gp_datasets(3, seed=8), Z, matern(0.05), noise=1e-4, iterations=30)
    evals = torch.linalg.eigvalsh(prior.covariance)
    assert float(evals.min()) >= 0.99e-10
    assert torch.allclose(prior.covariance, prior.covariance.T)


def test_bad_inputs_are_one_clear_error():
    Z, k = grid(5), matern(0.2)
    x, y = torch.rand(4, dtype=DT), torch.rand(4, dtype=DT)
    cases = [
        ([(x, torch.tensor([0.1, float("nan"), 0.2, 0.3], dtype=DT))],
         r"datasets\[0\] has NaN or inf values in y"),
        ([(x, y), (x, y[:3])], r"datasets\[1\]: x of shape \(4, 1\) and y of shape \(3,\) do not"),
        ([(x, y), (x + 2.0, y)], r"datasets\[1\]: location \[2\.\d+\] is outside the range of the "
                                 r"reference points"),
        ([(x, y), (x[:0], y[:0])], r"datasets\[1\] is empty"),
        ([], "non-empty list"),
        ([(x, y, y)], r"datasets\[0\] is not an \(x, y\) pair"),
        ([(torch.rand(4, 2, dtype=DT), y)], r"x of shape \(4, 2\)"),
    ]
    for data, message in cases:
        with pytest.raises(ValueError, match=message) as info:
            em_fit(data, Z, k, noise=0.01, iterations=1)
        assert "\n" not in str(info.value)
    with pytest.raises(ValueError, match="prior='wishart'"):
        em_fit([(x, y)], Z, k, prior="wishart")
    with pytest.raises(ValueError, match="shrinkage=1.5"):
        em_fit([(x, y)], Z, k, shrinkage=1.5)
    with pytest.raises(ValueError, match="noise=0"):
        em_fit([(x, y)], Z, k, noise=0)


def test_shared_grid_estimator_is_the_sample_moments_with_linear_interpolation():
    rng = np.random.default_rng(9)
    g = np.linspace(0, 1, 6)
    Y = rng.standard_normal((40, 6)).cumsum(1)
    prior = shared_grid_prior(torch.tensor(g), torch.tensor(Y))
    np.testing.assert_allclose(prior.mean, Y.mean(0), atol=1e-12)
    np.testing.assert_allclose(prior.covariance, np.cov(Y.T, bias=True), atol=1e-12)
    mid = torch.tensor([0.1, 0.5], dtype=DT)   # halfway between grid points 0-1 and 2-3
    mean, cov = prior.moments(mid, torch.tensor([0.0], dtype=DT))
    np.testing.assert_allclose(mean, [Y[:, :2].mean(), Y[:, 2:4].mean()], atol=1e-12)
    C = np.cov(Y.T, bias=True)
    np.testing.assert_allclose(cov[:, 0], [(C[0, 0] + C[1, 0]) / 2, (C[2, 0] + C[3, 0]) / 2],
                               atol=1e-12)
    with pytest.raises(ValueError, match=r"Y must be \(S, n\) with n = 6"):
        shared_grid_prior(torch.tensor(g), torch.tensor(Y[:, :5]))
