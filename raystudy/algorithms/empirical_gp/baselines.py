r"""Per-task baselines: hand-picked kernels fitted by type-II maximum likelihood.

For one task (x (n, 1), y (n,)) a GPyTorch ExactGP with a constant mean, a Gaussian
likelihood and one of

* ``rbf``: :math:`s\,\exp(-r^2 / 2\ell^2)`;
* ``matern52``: :math:`s\,(1 + \sqrt5 r/\ell + 5r^2/3\ell^2)\exp(-\sqrt5 r/\ell)`;
* ``spectral_mixture``: Wilson & Adams 2013, Q = 4 components initialised from the
  data's empirical spectrum (GPyTorch's ``initialize_from_data_empspect``, seeded);

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


def make_kernel(kind: str, x: Tensor, y: Tensor, mixtures: int = 4) -> gpytorch.kernels.Kernel:
    """The baseline kernel ``kind`` (in BASELINES), initialised for data (x, y)."""
    if kind == "rbf":
        return gpytorch.kernels.ScaleKernel(gpytorch.kernels.RBFKernel())
    if kind == "matern52":
        return gpytorch.kernels.ScaleKernel(gpytorch.kernels.MaternKernel(nu=2.5))
    if kind == "spectral_mixture":
        kernel = gpytorch.kernels.SpectralMixtureKernel(num_mixtures=mixtures)
        with torch.random.fork_rng():  # the initialisation samples; keep it reproducible
            torch.manual_seed(0)
            kernel.initialize_from_data_empspect(x, y)
        return kernel
    raise ValueError(f"baseline {kind!r} is not one of {', '.join(BASELINES)}")


class TaskGP(gpytorch.models.ExactGP):
    """Constant mean + a baseline kernel."""

    def __init__(self, x: Tensor, y: Tensor, kernel: gpytorch.kernels.Kernel,
                 likelihood: gpytorch.likelihoods.GaussianLikelihood) -> None:
        super().__init__(x, y, likelihood)
        self.mean_module = gpytorch.means.ConstantMean()
        self.covar_module = kernel

    def forward(self, x: Tensor) -> gpytorch.distributions.MultivariateNormal:
        return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))


def fit_and_predict(kind: str, x: Tensor, y: Tensor, x_new: Tensor, steps: int = 100,
                    lr: float = 0.05) -> tuple[Tensor, Tensor]:
    """Fit baseline ``kind`` to (x (n, 1), y (n,)) by type-II ML; predictive mean and
    variance of y (noise included) at x_new (m, 1), in y's units."""
    loc = y.mean()
    scale = y.std() if y.numel() > 1 and float(y.std()) > 1e-12 else torch.ones((), dtype=y.dtype)
    z = (y - loc) / scale
    likelihood = gpytorch.likelihoods.GaussianLikelihood(
        noise_constraint=gpytorch.constraints.GreaterThan(1e-6)).to(x)
    model = TaskGP(x, z, make_kernel(kind, x, z), likelihood).to(x)
    mll = gpytorch.mlls.ExactMarginalLogLikelihood(likelihood, model)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    likelihood.train()
    for _ in range(steps):
        optimizer.zero_grad()
        loss = -mll(model(x), z)
        if not math.isfinite(loss.item()):
            break
        loss.backward()
        optimizer.step()
    model.eval()
    likelihood.eval()
    with torch.no_grad(), gpytorch.settings.cholesky_max_tries(6):
        pred = likelihood(model(x_new))
        return loc + scale * pred.mean, scale * scale * pred.variance
