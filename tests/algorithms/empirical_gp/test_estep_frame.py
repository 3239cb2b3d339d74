"""The E-step in the frame of Sigma's Cholesky factor (whitened rows, no W) and its M-step."""

from __future__ import annotations

import gpytorch
import numpy as np
import pytest
import torch
from egp_helpers import gp_datasets, grid, matern  # noqa: I001

from raystudy.algorithms.empirical_gp import Corpus, check_datasets, loop_statistics, m_step
from raystudy.algorithms.empirical_gp.prior import ShiftBasis, safe_cholesky

DT = torch.float64


def setting(M: int = 30, S: int = 60, seed: int = 21):
    """A corpus with datasets of 1-25 points and a Sigma as smooth as a learned one."""
    Z = grid(M)
    data = check_datasets(gp_datasets(S, seed=seed, lo=1, hi=25), Z)
    basis = ShiftBasis(Z, matern(0.1), gpytorch.means.ConstantMean().to(DT))
    K_true = matern(0.25)(Z, Z).to_dense().detach()
    g = torch.Generator().manual_seed(seed)
    mu = 0.3 * torch.randn(M, generator=g, dtype=DT)
    B = torch.randn(M, M, generator=g, dtype=DT)
    return data, basis, mu, K_true + 1e-3 * B @ B.T / M


@pytest.mark.parametrize("width", [1, 4])
def test_frame_statistics_equal_the_per_dataset_loop_to_1e10(width):
    data, basis, mu, Sigma = setting()
    stats = Corpus(data, basis, bucket_width=width).statistics(mu, Sigma, 0.003, need_noise=True)
    sum_m, sum_C, sum_mm, ll, a_sq, trace_inv = loop_statistics(data, basis, mu, Sigma, 0.003)
    S, R = len(data), stats.frame
    np.testing.assert_allclose(R @ R.mT, Sigma, rtol=0, atol=1e-12)
    np.testing.assert_allclose(S * mu + R @ stats.b_R, sum_m, rtol=0, atol=1e-10)
    np.testing.assert_allclose(S * Sigma - R @ stats.H @ R.mT, sum_C, rtol=0, atol=1e-10)
    mean_m = sum_m / S
    scatter = R @ (stats.Q_R - torch.outer(stats.b_R, stats.b_R) / S) @ R.mT
    np.testing.assert_allclose(scatter, sum_mm - S * torch.outer(mean_m, mean_m), rtol=0,
                               atol=1e-10)
    assert stats.log_likelihood == pytest.approx(ll, rel=1e-12)
    assert stats.a_sq == pytest.approx(a_sq, rel=1e-10)
    assert stats.trace_inv == pytest.approx(trace_inv, rel=1e-10)


def test_statistics_in_z_coordinates_undo_the_frame():
    data, basis, mu, Sigma = setting(M=12, S=20)
    stats = Corpus(data, basis).statistics(mu, Sigma, 0.01)
    R = stats.frame
    np.testing.assert_allclose(R.mT @ stats.b, stats.b_R, rtol=0, atol=1e-10)
    np.testing.assert_allclose(R.mT @ stats.G @ R, stats.H, rtol=0, atol=1e-10)
    np.testing.assert_allclose(R.mT @ stats.Q @ R, stats.Q_R, rtol=0, atol=1e-10)


@pytest.mark.parametrize("options", [{}, {"prior": "inverse_wishart"}, {"shrinkage": 0.3},
                                     {"learn_noise": True}])
def test_m_step_in_the_frame_equals_the_sigma_form(options):
    data, basis, mu, Sigma = setting(M=20, S=40)
    K = basis.base_kernel(basis.Z, basis.Z).to_dense().detach()
    stats = Corpus(data, basis).statistics(mu, Sigma, 0.004, need_noise=True)
    mu_new, Sigma_new, noise = m_step(stats, mu, Sigma, 0.004, K, **options)
    S = stats.count
    T = S * Sigma + Sigma @ (stats.Q - torch.outer(stats.b, stats.b) / S - stats.G) @ Sigma
    np.testing.assert_allclose(mu_new, mu + Sigma @ stats.b / S, rtol=0, atol=1e-10)
    expected = T / S
    if options.get("prior") == "inverse_wishart":
        M = mu.shape[0]
        expected = (T + (2 * M + 3) * K) / (S + 2 * M + 3)
    if "shrinkage" in options:
        a = options["shrinkage"]
        expected = (1 - a) * expected + a * torch.trace(expected) / torch.trace(K) * K
    np.testing.assert_allclose(Sigma_new, expected, rtol=0, atol=1e-10)
    s2, N = 0.004, stats.n_obs
    assert noise == (pytest.approx((s2 * s2 * (stats.a_sq - stats.trace_inv) + N * s2) / N,
                                   rel=1e-12) if options.get("learn_noise") else 0.004)


def test_shards_at_different_frames_refuse_to_add():
    data, basis, mu, Sigma = setting(M=10, S=12)
    first = Corpus(data[:6], basis).statistics(mu, Sigma, 0.01)
    other = Corpus(data[6:], basis).statistics(mu, 1.01 * Sigma, 0.01)
    with pytest.raises(ValueError, match="different Sigma"):
        first + other
    same = Corpus(data[6:], basis).statistics(mu, Sigma, 0.01, frame=first.frame)
    whole = Corpus(data, basis).statistics(mu, Sigma, 0.01)
    np.testing.assert_allclose((first + same).H, whole.H, rtol=0, atol=1e-10)


def test_an_explicit_frame_is_sigmas_cholesky_factor():
    data, basis, mu, Sigma = setting(M=10, S=12)
    corpus = Corpus(data, basis)
    given = corpus.statistics(mu, Sigma, 0.01, frame=safe_cholesky(Sigma))
    default = corpus.statistics(mu, Sigma, 0.01)
    assert torch.equal(given.H, default.H) and torch.equal(given.b_R, default.b_R)


def test_whitened_rows_in_chunks_equal_one_pass():
    _, basis, _, _ = setting(M=15, S=2)
    x = torch.rand(50, 1, dtype=DT)
    W, V = basis.weights(x)
    np.testing.assert_allclose(basis.whitened_rows(x, chunk=7), V.mT, rtol=0, atol=1e-12)
    np.testing.assert_allclose(basis.whitened_rows(x, chunk=7) @ basis.L_inv, W, rtol=0,
                               atol=1e-10)
