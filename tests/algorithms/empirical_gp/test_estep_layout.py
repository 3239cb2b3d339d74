"""The E-step's layouts: padded size buckets, float32 products, LL-only steps, row weights."""

from __future__ import annotations

import gpytorch
import numpy as np
import pytest
import torch
from egp_helpers import gp_datasets, grid, matern  # noqa: I001

from raystudy.algorithms.empirical_gp import Corpus, check_datasets, em_fit
from raystudy.algorithms.empirical_gp.corpora import CorpusSpec, GPFamily, corpus
from raystudy.algorithms.empirical_gp.estep import bucket_sizes
from raystudy.algorithms.empirical_gp.prior import ShiftBasis, safe_cholesky

DT = torch.float64


def setting(seed: int = 11):
    Z = grid(13)
    data = check_datasets(gp_datasets(50, seed=seed, lo=2, hi=12), Z)
    basis = ShiftBasis(Z, matern(0.15), gpytorch.means.ConstantMean().to(DT))
    g = torch.Generator().manual_seed(seed)
    B = torch.randn(13, 13, generator=g, dtype=DT)
    return data, basis, torch.randn(13, generator=g, dtype=DT), B @ B.T / 13 + 0.1 * torch.eye(13,
                                                                                         dtype=DT)


def test_bucket_sizes():
    assert bucket_sizes([10, 11, 12, 13, 30], 1) == {10: 10, 11: 11, 12: 12, 13: 13, 30: 30}
    assert bucket_sizes([10, 11, 12, 13, 30], 3) == {10: 12, 11: 12, 12: 12, 13: 15, 30: 30}
    assert bucket_sizes([10, 11, 30], 100) == {10: 30, 11: 30, 30: 30}
    with pytest.raises(ValueError, match="bucket_width=0"):
        Corpus(setting()[0], setting()[1], bucket_width=0)


@pytest.mark.parametrize("width", [2, 5, 100])
def test_padded_buckets_equal_per_size_groups_to_1e10(width):
    data, basis, mu, Sigma = setting()
    exact = Corpus(data, basis).statistics(mu, Sigma, 0.02, need_noise=True)
    padded_corpus = Corpus(data, basis, bucket_width=width)
    assert len(padded_corpus.groups) < len(Corpus(data, basis).groups)
    padded = padded_corpus.statistics(mu, Sigma, 0.02, need_noise=True)
    for name in ("b", "Q", "G"):
        np.testing.assert_allclose(getattr(padded, name), getattr(exact, name), rtol=0,
                                   atol=1e-10 * float(getattr(exact, name).abs().max()))
    for name in ("log_likelihood", "a_sq", "trace_inv"):
        assert getattr(padded, name) == pytest.approx(getattr(exact, name), rel=1e-10)
    assert (padded.count, padded.n_obs) == (exact.count, exact.n_obs)


def test_log_likelihood_only_step_gives_the_same_log_likelihood():
    data, basis, mu, Sigma = setting(12)
    corpus = Corpus(data, basis, bucket_width=3)
    full = corpus.statistics(mu, Sigma, 0.03)
    ll_only = corpus.statistics(mu, Sigma, 0.03, need_moments=False)
    assert ll_only.b is None and ll_only.G is None
    assert ll_only.log_likelihood == pytest.approx(full.log_likelihood, rel=1e-12)


def test_row_weights_equal_the_triangular_solves():
    _, basis, _, _ = setting()
    x = torch.rand(40, 1, dtype=DT)
    W, V_T = basis.row_weights(x)
    W_ref, V_ref = basis.weights(x)
    np.testing.assert_allclose(W, W_ref, atol=1e-10)
    np.testing.assert_allclose(V_T, V_ref.mT, atol=1e-10)


def test_the_default_float32_products_match_the_float64_fit_on_the_benchs_data():
    """em_fit's default (float32 products with float64 Z) against ``matmul_dtype=float64``
    on bench/egp.py's e2e data (S = 2,000 datasets of 10-30 points, M = 100, 10
    iterations): the covariance's error against the generating GP agrees to 3 digits, and
    the two fits differ by far less than that error."""
    Z = grid(100)
    spec = CorpusSpec(locations="uniform", min_points=10, max_points=30, noise_sd=0.05)
    data = corpus(GPFamily(lengthscale=0.2), spec, 2000, seed=2007)
    K_true = torch.as_tensor(GPFamily(lengthscale=0.2).moments(Z[:, 0].numpy())[1])
    kernel = gpytorch.kernels.MaternKernel(nu=2.5).to(DT)
    kernel.lengthscale = 0.1
    default = em_fit(data, Z, kernel, noise=0.05**2, iterations=10)
    exact = em_fit(data, Z, kernel, noise=0.05**2, iterations=10, matmul_dtype=DT)
    assert default.covariance.dtype == DT

    def error(K: torch.Tensor) -> float:
        return float(torch.linalg.norm(K - K_true) / torch.linalg.norm(K_true))

    assert f"{error(default.covariance):.3g}" == f"{error(exact.covariance):.3g}"
    assert error(exact.covariance) > 1e-2       # EM's own error: what the rounding is below
    moved = torch.linalg.norm(default.covariance - exact.covariance) / torch.linalg.norm(
        exact.covariance)
    assert moved < 1e-4
    np.testing.assert_allclose(default.log_likelihoods, exact.log_likelihoods, rtol=1e-5)


def test_a_float32_factorisation_that_fails_falls_back_to_the_reference_dtype():
    """A batch holding an A_i that no float32 Cholesky can factor is factored in float64 with
    safe_cholesky's jitter (only where float64 fails) and rounded to float32.

    The hard member has eigenvalues (1, 1, 1, -2e-6): indefinite by 30x more than float32's
    backward error on a 4x4 (about n eps ||A|| = 2.4e-7), so every LAPACK's float32
    factorisation reports failure, whatever the CPU; float64 passes with the 1e-5 jitter."""
    data, basis, *_ = setting()
    corpus = Corpus(data, basis, matmul_dtype=torch.float32)
    g = torch.Generator().manual_seed(3)
    Q, _ = torch.linalg.qr(torch.randn(4, 4, generator=g, dtype=DT))
    hard = Q @ torch.diag(torch.tensor([1.0, 1.0, 1.0, -2e-6], dtype=DT)) @ Q.T
    easy = torch.eye(4, dtype=DT) + 0.1 * torch.ones(4, 4, dtype=DT)
    A = torch.stack([easy, hard]).to(torch.float32)
    assert torch.linalg.cholesky_ex(A).info.tolist()[1] > 0         # float32 alone fails
    assert torch.linalg.cholesky_ex(A.double()).info.tolist()[1] > 0  # float64 needs jitter
    L = corpus._factor(A)
    assert L.dtype == torch.float32 and bool(torch.isfinite(L).all())
    reference = safe_cholesky(A.double())
    np.testing.assert_allclose(L.double(), reference, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose((L @ L.mT).double(), A.double(), atol=2e-5)
