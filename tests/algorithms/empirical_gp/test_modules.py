"""EmpiricalMean / EmpiricalKernel inside ExactGP, fit_predict vs the closed form."""

from __future__ import annotations

import copy

import gpytorch
import numpy as np
import pytest
import torch
from egp_helpers import gp_datasets, grid, matern

from raystudy.algorithms.empirical_gp import base_prior, em_fit, shared_grid_prior
from raystudy.algorithms.empirical_gp.modules import (
    EmpiricalGP,
    EmpiricalKernel,
    EmpiricalMean,
    fit_predict,
    fixed_noise_likelihood,
)

DT = torch.float64


@pytest.fixture(scope="module")
def prior():
    torch.set_num_threads(1)
    mean = gpytorch.means.ConstantMean().to(DT)
    mean.constant = 0.2
    return em_fit(gp_datasets(80, seed=11), grid(9), matern(0.15), mean, noise=0.004,
                  iterations=8)


def shift_interpolation(prior, x1: np.ndarray, x2: np.ndarray):
    """The shift-interpolated moments in NumPy from dense kernel matrices and solves."""
    k = prior.base_kernel
    z = prior.reference_points

    def K(a, b):
        return k(torch.as_tensor(a).reshape(-1, 1), torch.as_tensor(b).reshape(-1, 1)
                 ).to_dense().detach().numpy()

    Kzz = K(z, z)
    W1, W2 = np.linalg.solve(Kzz, K(z, x1)).T, np.linalg.solve(Kzz, K(z, x2)).T
    mean = 0.2 + W1 @ (prior.mean.numpy() - 0.2)
    cov = K(x1, x2) - W1 @ Kzz @ W2.T + W1 @ prior.covariance.numpy() @ W2.T
    return mean, cov


def test_modules_evaluate_the_shift_interpolated_moments(prior):
    x1, x2 = np.array([0.05, 0.33, 0.5, 0.91]), np.array([0.0, 0.6, 0.999])
    mean, cov = shift_interpolation(prior, x1, x2)
    t1, t2 = torch.tensor(x1).unsqueeze(-1), torch.tensor(x2).unsqueeze(-1)
    np.testing.assert_allclose(EmpiricalMean(prior)(t1).detach(), mean, atol=1e-8)
    kernel = EmpiricalKernel(prior)
    np.testing.assert_allclose(kernel(t1, t2).to_dense().detach(), cov, atol=1e-8)
    full = shift_interpolation(prior, x1, x1)[1]
    np.testing.assert_allclose(kernel(t1, t1, diag=True).detach(), np.diag(full), atol=1e-8)
    # batched inputs (b x n x d), as BoTorch's acquisition functions pass them
    batch = torch.stack([t1, t1.flip(0)])
    out = kernel(batch, batch).to_dense().detach()
    assert out.shape == (2, 4, 4)
    np.testing.assert_allclose(out[1], full[::-1, ::-1], atol=1e-8)
    assert EmpiricalMean(prior)(batch).shape == (2, 4)
    # on the reference points the prior is returned exactly (W = I, no residual)
    z = prior.reference_points
    np.testing.assert_allclose(kernel(z, z).to_dense().detach(), prior.covariance, atol=1e-8)


def test_the_base_prior_is_the_base_kernel():
    k = matern(0.2, 0.7)
    modules = EmpiricalKernel(base_prior(grid(12), k))
    x = torch.rand(6, 1, dtype=DT)
    np.testing.assert_allclose(modules(x, x).to_dense().detach(), k(x, x).to_dense().detach(),
                               atol=1e-7)


def closed_form_posterior(prior, x_obs, y_obs, x_new, s2):
    m_o, K_oo = shift_interpolation(prior, x_obs, x_obs)
    m_n, K_nn = shift_interpolation(prior, x_new, x_new)
    K_no = shift_interpolation(prior, x_new, x_obs)[1]
    A = K_oo + s2 * np.eye(len(x_obs))
    return m_n + K_no @ np.linalg.solve(A, y_obs - m_o), K_nn - K_no @ np.linalg.solve(A, K_no.T)


def test_fit_predict_is_the_closed_form_gp_posterior(prior):
    x_obs = np.array([0.02, 0.1, 0.25, 0.4])
    y_obs = np.array([0.1, 0.3, 0.6, 0.5])
    x_new = np.linspace(0.45, 1.0, 5)
    mean, cov = closed_form_posterior(prior, x_obs, y_obs, x_new, prior.noise)
    post = fit_predict(prior, torch.tensor(x_obs), torch.tensor(y_obs), torch.tensor(x_new))
    np.testing.assert_allclose(post.mean, mean, atol=1e-7)
    np.testing.assert_allclose(post.covariance_matrix, cov, atol=1e-7)
    noisy = fit_predict(prior, torch.tensor(x_obs), torch.tensor(y_obs), torch.tensor(x_new),
                        include_noise=True)
    np.testing.assert_allclose(noisy.variance, np.diag(cov) + prior.noise, atol=1e-7)
    empty = fit_predict(prior, torch.zeros(0), torch.zeros(0), torch.tensor(x_new))
    np.testing.assert_allclose(empty.mean, shift_interpolation(prior, x_new, x_new)[0],
                               atol=1e-8)
    with pytest.raises(ValueError, match="NaN or inf"):
        fit_predict(prior, torch.tensor(x_obs), torch.tensor([0.1, np.nan, 0, 0]), x_new)
    with pytest.raises(ValueError, match=r"x_observed \(4, 1\), y_observed \(3,\)"):
        fit_predict(prior, torch.tensor(x_obs), torch.tensor(y_obs[:3]), x_new)


def test_modules_inside_a_trained_exact_gp(prior):
    """A plain ExactGP with the modules: trains its noise by type-II ML, then predicts."""
    x = torch.linspace(0, 0.5, 8, dtype=DT)
    y = 0.5 * torch.sin(3 * x) + 0.05 * torch.randn(8, generator=torch.Generator().manual_seed(0),
                                                    dtype=DT)

    class Model(gpytorch.models.ExactGP):
        def __init__(self, x, y, likelihood):
            super().__init__(x, y, likelihood)
            self.mean_module = EmpiricalMean(prior)
            self.covar_module = EmpiricalKernel(prior)

        def forward(self, x):
            return gpytorch.distributions.MultivariateNormal(self.mean_module(x),
                                                             self.covar_module(x))

    likelihood = gpytorch.likelihoods.GaussianLikelihood().to(DT)
    model = Model(x.unsqueeze(-1), y, likelihood)
    trainable = [n for n, p in model.named_parameters() if p.requires_grad]
    assert trainable == ["likelihood.noise_covar.raw_noise"]  # the prior itself is frozen
    mll = gpytorch.mlls.ExactMarginalLogLikelihood(likelihood, model)
    opt = torch.optim.Adam(model.parameters(), lr=0.1)
    model.train()
    losses = []
    for _ in range(30):
        opt.zero_grad()
        loss = -mll(model(x.unsqueeze(-1)), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    model.eval()
    with torch.no_grad():
        pred = model(torch.linspace(0.6, 1.0, 3, dtype=DT).unsqueeze(-1))
    mean, cov = closed_form_posterior(prior, x.numpy(), y.numpy(), np.linspace(0.6, 1.0, 3),
                                      float(likelihood.noise))
    np.testing.assert_allclose(pred.mean, mean, atol=1e-6)
    np.testing.assert_allclose(pred.variance, np.diag(cov), atol=1e-6)


def test_buffers_follow_to_and_state_dict(prior):
    kernel, mean = EmpiricalKernel(prior), EmpiricalMean(prior)
    names = set(kernel.state_dict())
    assert {"covariance", "basis.Z", "basis.L", "basis.m_Z"} <= names
    assert {"delta", "basis.Z"} <= set(mean.state_dict())
    single = copy.deepcopy(kernel).to(torch.float32)
    assert single.covariance.dtype == single.basis.L.dtype == torch.float32
    x = torch.rand(5, 1, dtype=DT)
    np.testing.assert_allclose(single(x.float(), x.float()).to_dense().detach(),
                               kernel(x, x).to_dense().detach(), atol=1e-4)
    restored = EmpiricalKernel(base_prior(grid(9), matern(0.5), prior.base_mean))
    restored.load_state_dict(kernel.state_dict())
    np.testing.assert_allclose(restored(x, x).to_dense().detach(),
                               kernel(x, x).to_dense().detach(), atol=1e-12)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_modules_on_cuda(prior):
    kernel, mean = EmpiricalKernel(prior).cuda(), EmpiricalMean(prior).cuda()
    x = torch.rand(5, 1, dtype=DT)
    assert kernel.covariance.is_cuda and kernel.basis.L.is_cuda
    np.testing.assert_allclose(kernel(x.cuda(), x.cuda()).to_dense().cpu().detach(),
                               EmpiricalKernel(prior)(x, x).to_dense().detach(), atol=1e-8)
    assert mean(x.cuda()).is_cuda
    likelihood = fixed_noise_likelihood(prior.noise, x.cuda())
    model = EmpiricalGP(prior, x.cuda(), torch.zeros(5, dtype=DT).cuda(), likelihood).eval()
    assert model(x.cuda()).mean.is_cuda


def test_shared_grid_prior_as_a_kernel():
    g = torch.linspace(0, 1, 5, dtype=DT)
    Y = torch.randn(30, 5, generator=torch.Generator().manual_seed(1), dtype=DT).cumsum(1)
    prior = shared_grid_prior(g, Y, noise=0.01)
    kernel = EmpiricalKernel(prior)
    np.testing.assert_allclose(kernel(g.unsqueeze(-1), g.unsqueeze(-1)).to_dense().detach(),
                               prior.covariance, atol=1e-12)
    post = fit_predict(prior, g[:2], Y[0, :2], torch.tensor([0.875], dtype=DT))
    assert post.mean.shape == (1,) and bool(torch.isfinite(post.variance).all())
