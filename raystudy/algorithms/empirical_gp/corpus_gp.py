r"""One GP for the whole corpus: mean, kernel and noise fitted by the summed marginal likelihood.

The corpus-level type-II ML baseline an empirical prior has to beat (and the empirical
GP's base GP when the study sets ``model.base_fit=corpus``): one constant mean m, one
kernel k_theta and one noise variance s2, shared by every dataset, maximise

.. math::
    \mathcal L(m, \theta, s^2) = \sum_{i=1}^S \log N\big(y_i;\ m(X_i),\
    K_\theta(X_i, X_i) + s^2 I\big)

over the S corpus datasets (x_i (n_i, d), y_i (n_i,)); the fitted GP is then used,
unchanged, for every test task. The datasets, sorted by size into a few buckets, are padded
to their bucket's largest n_i and factorised as one batch per bucket: a padded point gets
K = 1 on its diagonal and 0 elsewhere and a residual of 0, so it adds exactly
-log(2 pi) / 2, which is left out (the sum stays exact).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import torch
from gpytorch.kernels import Kernel
from gpytorch.means import Mean
from torch import Tensor

MIN_NOISE = 1e-6
"""Noise variance floor (as the per-task baselines' ``GreaterThan(1e-6)``)."""


@dataclass
class Padded:
    """S datasets padded to n = max n_i: X (S, n, d), Y (S, n), mask (S, n) of real points."""

    X: Tensor
    Y: Tensor
    mask: Tensor

    @property
    def points(self) -> int:
        return int(self.mask.sum())


def pad(datasets: Sequence[tuple[Tensor, Tensor]]) -> Padded:
    """Stack datasets of different sizes into one zero-padded batch with a mask."""
    if not datasets:
        raise ValueError("the corpus has no datasets")
    xs = [x.unsqueeze(-1) if x.dim() == 1 else x for x, _ in datasets]
    n, d = max(len(x) for x in xs), xs[0].shape[-1]
    like = datasets[0][1]
    X = torch.zeros(len(xs), n, d, dtype=like.dtype, device=like.device)
    Y = torch.zeros(len(xs), n, dtype=like.dtype, device=like.device)
    mask = torch.zeros(len(xs), n, dtype=torch.bool, device=like.device)
    for i, (x, (_, y)) in enumerate(zip(xs, datasets, strict=True)):
        X[i, : len(y)], Y[i, : len(y)], mask[i, : len(y)] = x, y, True
    X[~mask] = X[mask].mean(0)  # padded inputs: any finite location (their rows are cut away)
    return Padded(X, Y, mask)


def buckets(datasets: Sequence[tuple[Tensor, Tensor]], count: int = 4) -> list[Padded]:
    """The datasets sorted by size, split into ``count`` buckets of equal counts, each padded
    (4 buckets: 2.3x less work than one padded batch on prefix corpora of 10-52 points)."""
    order = sorted(range(len(datasets)), key=lambda i: len(datasets[i][1]))
    size = -(-len(order) // max(1, count))
    return [pad([datasets[i] for i in order[j: j + size]]) for j in range(0, len(order), size)]


def summed_log_likelihood(data: Padded, kernel: Kernel, mean: Mean, noise: Tensor) -> Tensor:
    """:math:`\\sum_i \\log N(y_i; m(X_i), K(X_i, X_i) + s^2 I)`, differentiable in all three."""
    real = data.mask.to(data.Y.dtype)
    K = kernel(data.X).to_dense() * (real[:, :, None] * real[:, None, :])
    K = K + torch.diag_embed(noise * real + (1 - real))      # padded: an identity block
    r = (data.Y - mean(data.X)) * real
    L = torch.linalg.cholesky(K)
    alpha = torch.linalg.solve_triangular(L, r.unsqueeze(-1), upper=False).squeeze(-1)
    logdet = 2 * torch.log(L.diagonal(dim1=-2, dim2=-1)).sum()
    return -0.5 * (alpha.square().sum() + logdet + data.points * math.log(2 * math.pi))


@dataclass
class CorpusFit:
    """The fitted GP: copies of the kernel and mean (frozen), the noise variance, and the
    summed log-likelihood before and after (``history``: after each optimiser step)."""

    kernel: Kernel
    mean: Mean
    noise: float
    log_likelihood: float
    initial_log_likelihood: float
    history: list[float] = field(default_factory=list)


def fit_corpus_gp(datasets: Sequence[tuple[Tensor, Tensor]], kernel: Kernel, mean: Mean,
                  noise: float, optimizer: Literal["lbfgs", "adam"] = "lbfgs",
                  steps: int = 100, lr: float = 0.05) -> CorpusFit:
    """Maximise the summed exact marginal log-likelihood of the corpus over the kernel's and
    the mean's parameters and the noise variance (``kernel``/``mean`` are copied, never changed).

    ``lbfgs``: ``steps`` iterations of L-BFGS with a strong-Wolfe line search; ``adam``:
    ``steps`` Adam steps of size ``lr``. The loss is the negative sum divided by the number of
    observations (a scale that keeps Adam's step meaningful); the noise is
    ``MIN_NOISE + softplus(raw)``.
    """
    data = buckets(datasets)
    points = sum(b.points for b in data)
    like = data[0].Y
    kernel, mean = copy.deepcopy(kernel).to(like), copy.deepcopy(mean).to(like)
    start = torch.as_tensor(max(noise - MIN_NOISE, 1e-12), dtype=like.dtype)
    raw_noise = torch.nn.Parameter(start + torch.log(-torch.expm1(-start)))  # softplus^-1
    params = [*kernel.parameters(), *mean.parameters(), raw_noise]

    def noise_of() -> Tensor:
        return MIN_NOISE + torch.nn.functional.softplus(raw_noise)

    def loss() -> Tensor:
        return -sum(summed_log_likelihood(b, kernel, mean, noise_of()) for b in data) / points

    with torch.no_grad():
        initial = float(-loss()) * points
    history: list[float] = []
    if optimizer == "lbfgs":
        opt = torch.optim.LBFGS(params, lr=1.0, max_iter=steps, line_search_fn="strong_wolfe",
                                tolerance_grad=1e-9, tolerance_change=1e-12)

        def closure() -> Tensor:
            opt.zero_grad()
            value = loss()
            value.backward()
            history.append(-value.item() * points)
            return value

        opt.step(closure)
    elif optimizer == "adam":
        opt = torch.optim.Adam(params, lr=lr)
        for _ in range(steps):
            opt.zero_grad()
            value = loss()
            value.backward()
            opt.step()
            history.append(-value.item() * points)
    else:
        raise ValueError(f"optimizer={optimizer!r} is not one of lbfgs, adam")
    for p in params:
        p.requires_grad_(False)
    with torch.no_grad():
        final = float(-loss()) * points
    return CorpusFit(kernel, mean, float(noise_of()), final, initial, history)
