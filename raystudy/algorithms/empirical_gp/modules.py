r"""The learned prior as GPyTorch modules, and one-task prediction with it.

``EmpiricalMean(prior)`` and ``EmpiricalKernel(prior)`` evaluate the shift-interpolated
moments of an :class:`~.prior.EmpiricalPrior` (``prior.py``) at any inputs:

.. math::
    \mu(x) = m(x) + W_x (\mu_Z - m(Z)), \qquad
    k(x, x') = K(x, x') - V_x^\top V_{x'} + W_x \Sigma_Z W_{x'}^\top ,

with :math:`V_x = L^{-1} K(Z, x)`, :math:`W_x = V_x^\top L^{-1}`, :math:`L L^\top = K(Z, Z)`
(linear-interpolation weights and no residual for a shared-grid prior). Z, L, m(Z),
:math:`\mu_Z` and :math:`\Sigma_Z` are buffers and the base kernel/mean are frozen
sub-modules, so ``.to(device)``, ``.double()``, ``state_dict()`` and ``deepcopy`` work;
inputs may carry batch dimensions (``... x n x d``), as ExactGP and BoTorch models pass.

Example::

    class EGPModel(gpytorch.models.ExactGP):
        def __init__(self, prior, x, y, likelihood):
            super().__init__(x, y, likelihood)
            self.mean_module = EmpiricalMean(prior)
            self.covar_module = EmpiricalKernel(prior)

        def forward(self, x):
            return gpytorch.distributions.MultivariateNormal(
                self.mean_module(x), self.covar_module(x))
"""

from __future__ import annotations

import copy

import gpytorch
import torch
from gpytorch.constraints import GreaterThan
from gpytorch.distributions import MultivariateNormal
from gpytorch.kernels import Kernel
from gpytorch.likelihoods import GaussianLikelihood
from gpytorch.means import Mean
from torch import Tensor

from .prior import EmpiricalPrior, as_inputs


class EmpiricalMean(Mean):
    """Prior mean of an EmpiricalPrior at ``... x n x d`` inputs (returns ``... x n``)."""

    def __init__(self, prior: EmpiricalPrior) -> None:
        super().__init__()
        self.basis = copy.deepcopy(prior.basis)
        self.register_buffer("delta", (prior.mean - prior.basis.m_Z).detach().clone())

    def forward(self, x: Tensor) -> Tensor:
        W, _ = self.basis.weights(x)
        return self.basis.m(x) + W @ self.delta


class EmpiricalKernel(Kernel):
    """Prior covariance of an EmpiricalPrior; non-stationary, no trainable parameters."""

    is_stationary = False

    def __init__(self, prior: EmpiricalPrior, **kwargs) -> None:
        super().__init__(**kwargs)
        self.basis = copy.deepcopy(prior.basis)
        self.register_buffer("covariance", prior.covariance.detach().clone())

    def forward(self, x1: Tensor, x2: Tensor, diag: bool = False,
                last_dim_is_batch: bool = False, **params) -> Tensor:
        if last_dim_is_batch:
            raise NotImplementedError("EmpiricalKernel does not support last_dim_is_batch")
        W1, V1 = self.basis.weights(x1)
        if diag:
            return (self.basis.residual_diag(x1, V1)
                    + ((W1 @ self.covariance) * W1).sum(-1))
        same = x1 is x2 or (x1.shape == x2.shape and torch.equal(x1, x2))
        W2, V2 = (W1, V1) if same else self.basis.weights(x2)
        return self.basis.residual(x1, x2, V1, V2) + W1 @ self.covariance @ W2.mT


class EmpiricalGP(gpytorch.models.ExactGP):
    """An ExactGP whose mean and kernel are an EmpiricalPrior's."""

    def __init__(self, prior: EmpiricalPrior, x: Tensor, y: Tensor,
                 likelihood: GaussianLikelihood) -> None:
        super().__init__(x, y, likelihood)
        self.mean_module = EmpiricalMean(prior)
        self.covar_module = EmpiricalKernel(prior)

    def forward(self, x: Tensor) -> MultivariateNormal:
        return MultivariateNormal(self.mean_module(x), self.covar_module(x))


def fixed_noise_likelihood(noise: float, like: Tensor) -> GaussianLikelihood:
    """A GaussianLikelihood holding ``noise`` (variance) fixed, in ``like``'s dtype/device."""
    likelihood = GaussianLikelihood(noise_constraint=GreaterThan(1e-12)).to(like)
    likelihood.noise = torch.as_tensor(max(noise, 1e-12), dtype=like.dtype)
    likelihood.raw_noise.requires_grad_(False)
    return likelihood


def fit_predict(prior: EmpiricalPrior, x_observed: Tensor, y_observed: Tensor, x_new: Tensor,
                include_noise: bool = False) -> MultivariateNormal:
    """Posterior at ``x_new`` (m, d) or (m,) of one new task observed at ``x_observed``.

    The prior is fixed (no fitting): an ExactGP with ``EmpiricalMean``/``EmpiricalKernel``
    and the prior's noise variance, conditioned on (x_observed (n, d), y_observed (n,)).
    Returns the latent f's MultivariateNormal, or y's with ``include_noise=True``.
    """
    like = prior.mean
    d = prior.reference_points.shape[-1]
    x = as_inputs(torch.as_tensor(x_observed).to(like), d)
    y = torch.as_tensor(y_observed).to(like).reshape(-1)
    x_new = as_inputs(torch.as_tensor(x_new).to(like), d)
    if x.dim() != 2 or x.shape[0] != y.shape[0] or x.shape[-1] != d or x_new.shape[-1] != d:
        raise ValueError(f"x_observed {tuple(x.shape)}, y_observed {tuple(y.shape)} and x_new "
                         f"{tuple(x_new.shape)} do not fit inputs of dimension d={d}")
    if not (bool(torch.isfinite(y).all()) and bool(torch.isfinite(x).all())):
        raise ValueError("x_observed/y_observed have NaN or inf values")
    if x.shape[0] == 0:  # nothing observed: the prior itself
        mean, cov = prior.moments(x_new)
        if include_noise:
            cov = cov + prior.noise * torch.eye(cov.shape[-1], dtype=cov.dtype, device=cov.device)
        return MultivariateNormal(mean, cov)
    likelihood = fixed_noise_likelihood(prior.noise, like)
    model = EmpiricalGP(prior, x, y, likelihood)
    model.eval()
    likelihood.eval()
    with torch.no_grad():
        f = model(x_new)
        return likelihood(f) if include_noise else f
