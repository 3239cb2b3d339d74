r"""Per-task baselines: hand-picked kernels fitted by type-II maximum likelihood.

For one task (x (n, 1), y (n,)) a GPyTorch ExactGP with a constant mean, a Gaussian
likelihood and one of

* ``rbf``: :math:`s\,\exp(-r^2 / 2\ell^2)`;
* ``matern52``: :math:`s\,(1 + \sqrt5 r/\ell + 5r^2/3\ell^2)\exp(-\sqrt5 r/\ell)`;
* ``spectral_mixture``: Wilson & Adams 2013, Q = 4 components, frequencies initialised
  evenly on [0, Nyquist / 2] with widths 1 / (span of x) (deterministic; GPyTorch's
  ``initialize_from_*`` draw from unseeded NumPy and assume unit spacing);

has its hyperparameters (mean, kernel, noise) fitted by maximising the exact marginal
log-likelihood :math:`\log p(y \mid x, \theta)` with Adam (``steps`` = 100,
``lr`` = 0.05), on y standardised by the task's own mean and standard deviation (as
BoTorch's ``Standardize``); predictions are mapped back. This is the per-task model
an empirical prior competes with: it sees only the task's own observations.
"""

from __future__ import annotations

import math

import gpytorch
import torch
from torch import Tensor

BASELINES = ("rbf", "matern52", "spectral_mixture")


def make_kernel(kind: str, x: Tensor, batch: torch.Size, mixtures: int = 4
                ) -> gpytorch.kernels.Kernel:
    """The baseline kernel ``kind`` (in BASELINES) for ``batch`` tasks observed at x (n, 1)."""
    if kind == "rbf":
        return gpytorch.kernels.ScaleKernel(gpytorch.kernels.RBFKernel(batch_shape=batch),
                                            batch_shape=batch)
    if kind == "matern52":
        return gpytorch.kernels.ScaleKernel(
            gpytorch.kernels.MaternKernel(nu=2.5, batch_shape=batch), batch_shape=batch)
    if kind == "spectral_mixture":
        kernel = gpytorch.kernels.SpectralMixtureKernel(num_mixtures=mixtures, batch_shape=batch)
        spacing = float(torch.diff(x[:, 0]).abs().min().clamp_min(1e-6)) if len(x) > 1 else 1.0
        span = float(x.max() - x.min()) or 1.0
        nyquist = 0.5 / spacing
        shape = (*batch, mixtures, 1, 1)
        # deterministic spread over [0, nyquist / 2]: frequencies, width ~ 1 / span
        kernel.mixture_means = torch.linspace(0, nyquist / 2, mixtures).reshape(
            mixtures, 1, 1).expand(shape).clone()
        kernel.mixture_scales = torch.full(shape, 1.0 / span)
        kernel.mixture_weights = torch.full((*batch, mixtures), 1.0 / mixtures)
        return kernel
    raise ValueError(f"baseline {kind!r} is not one of {', '.join(BASELINES)}")


class TaskGP(gpytorch.models.ExactGP):
    """Constant mean + a baseline kernel, one independent GP per batch member."""

    def __init__(self, x: Tensor, y: Tensor, kernel: gpytorch.kernels.Kernel,
                 likelihood: gpytorch.likelihoods.GaussianLikelihood) -> None:
        super().__init__(x, y, likelihood)
        self.mean_module = gpytorch.means.ConstantMean(batch_shape=y.shape[:-1])
        self.covar_module = kernel

    def forward(self, x: Tensor) -> gpytorch.distributions.MultivariateNormal:
        return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))


def fit_and_predict(kind: str, x: Tensor, y: Tensor, x_new: Tensor, steps: int = 100,
                    lr: float = 0.05) -> tuple[Tensor, Tensor]:
    """Fit baseline ``kind`` by type-II ML to each task observed at the same x (n, 1).

    ``y`` is (n,) for one task or (B, n) for B tasks, fitted as one batch of independent
    GPs (Adam is per-coordinate, so the summed loss fits each task as if alone).
    Returns the predictive mean and variance of y (noise included) at x_new (m, 1),
    shaped like ``y`` with m points, in y's units.
    """
    single = y.dim() == 1
    Y = y.unsqueeze(0) if single else y
    batch = Y.shape[:-1]
    loc = Y.mean(-1, keepdim=True)
    scale = Y.std(-1, keepdim=True) if Y.shape[-1] > 1 else torch.ones_like(loc)
    scale = torch.where(scale > 1e-12, scale, torch.ones_like(scale))
    z = (Y - loc) / scale
    X = x.expand(*batch, *x.shape)
    likelihood = gpytorch.likelihoods.GaussianLikelihood(
        batch_shape=batch, noise_constraint=gpytorch.constraints.GreaterThan(1e-6))
    model = TaskGP(X, z, make_kernel(kind, x, batch), likelihood).to(x)
    mll = gpytorch.mlls.ExactMarginalLogLikelihood(likelihood, model)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    likelihood.train()
    for _ in range(steps):
        optimizer.zero_grad()
        loss = -mll(model(X), z).sum()
        if not math.isfinite(loss.item()):
            break
        loss.backward()
        optimizer.step()
    model.eval()
    likelihood.eval()
    with torch.no_grad(), gpytorch.settings.cholesky_max_tries(6):
        pred = likelihood(model(x_new.expand(*batch, *x_new.shape)))
        mean, var = loc + scale * pred.mean, scale * scale * pred.variance
    return (mean[0], var[0]) if single else (mean, var)
