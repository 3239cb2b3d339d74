"""The corpus-level GP: summed marginal likelihood against scipy, hyperparameter recovery."""

from __future__ import annotations

import gpytorch
import numpy as np
import pytest
import torch
from egp_helpers import DT, matern  # noqa: I001
from scipy.stats import multivariate_normal

from raystudy.algorithms.empirical_gp.corpora import CorpusSpec, GPFamily, corpus
from raystudy.algorithms.empirical_gp.corpus_gp import (
    buckets,
    fit_corpus_gp,
    pad,
    summed_log_likelihood,
)


def reference_mll(datasets, lengthscale: float, outputscale: float, constant: float,
                  noise: float) -> float:
    """sum_i log N(y_i; c, s k52(X_i, X_i) + s2 I), the Matern-5/2 written out in NumPy."""
    total = 0.0
    for x, y in datasets:
        x, y = x[:, 0].numpy(), y.numpy()
        r = np.sqrt(5.0) * np.abs(x[:, None] - x[None, :]) / lengthscale
        K = outputscale * (1 + r + r**2 / 3) * np.exp(-r) + noise * np.eye(len(x))
        total += multivariate_normal(np.full(len(x), constant), K).logpdf(y)
    return float(total)


def mean_module(constant: float) -> gpytorch.means.ConstantMean:
    mean = gpytorch.means.ConstantMean().to(DT)
    mean.constant = constant
    return mean


def test_padded_sum_equals_the_per_dataset_closed_form():
    spec = CorpusSpec(locations="uniform", min_points=2, max_points=9, noise_sd=0.1)
    datasets = corpus(GPFamily(lengthscale=0.3), spec, 7, seed=3)
    assert len({len(y) for _, y in datasets}) > 2              # padding is exercised
    reference = reference_mll(datasets, 0.37, 1.7, 0.2, 0.04)
    for parts in ([pad(datasets)], buckets(datasets, 3)):   # one padded batch, size buckets
        with torch.no_grad():
            value = sum(summed_log_likelihood(part, matern(0.37, 1.7), mean_module(0.2),
                                              torch.tensor(0.04, dtype=DT)) for part in parts)
        # 1e-7: GPyTorch forms distances as |x|^2 + |x'|^2 - 2 x x'
        assert float(value) == pytest.approx(reference, rel=1e-7)
    assert sum(part.points for part in buckets(datasets, 3)) == sum(len(y) for _, y in datasets)


@pytest.mark.parametrize("optimizer, steps", [("lbfgs", 50), ("adam", 150)])
def test_fit_recovers_the_generating_gp(optimizer, steps):
    truth = GPFamily(lengthscale=0.25, outputscale=2.0, amplitude=0.0)
    spec = CorpusSpec(locations="uniform", min_points=8, max_points=16, noise_sd=0.1)
    datasets = corpus(truth, spec, 80, seed=0)
    start_kernel, start_mean = matern(0.1, 0.5), mean_module(0.5)
    fit = fit_corpus_gp(datasets, start_kernel, start_mean, noise=0.05, optimizer=optimizer,
                        steps=steps, lr=0.05)
    lengthscale = float(fit.kernel.base_kernel.lengthscale)
    outputscale, constant = float(fit.kernel.outputscale), float(fit.mean.constant)
    assert lengthscale == pytest.approx(0.25, rel=0.15)
    assert outputscale == pytest.approx(2.0, rel=0.3)
    assert fit.noise == pytest.approx(0.01, rel=0.3)
    assert abs(constant) < 0.4
    assert float(start_kernel.base_kernel.lengthscale) == pytest.approx(0.1)  # copied
    reference = reference_mll(datasets, lengthscale, outputscale, constant, fit.noise)
    assert fit.log_likelihood == pytest.approx(reference, rel=1e-7)
    at_truth = reference_mll(datasets, 0.25, 2.0, 0.0, 0.01)
    assert fit.log_likelihood >= at_truth > fit.initial_log_likelihood
