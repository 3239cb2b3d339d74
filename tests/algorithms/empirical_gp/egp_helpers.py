"""Shared pieces of the empirical_gp tests: kernels, grids and known-GP corpora."""

from __future__ import annotations

import gpytorch
import torch

from raystudy.algorithms.empirical_gp.corpora import CorpusSpec, GPFamily, corpus

DT = torch.float64


def matern(lengthscale: float, outputscale: float = 1.0) -> gpytorch.kernels.Kernel:
    k = gpytorch.kernels.ScaleKernel(gpytorch.kernels.MaternKernel(nu=2.5)).to(DT)
    k.base_kernel.lengthscale = lengthscale
    k.outputscale = outputscale
    return k


def grid(M: int) -> torch.Tensor:
    return torch.linspace(0, 1, M, dtype=DT).unsqueeze(-1)


def gp_datasets(S: int, seed: int, lo: int = 4, hi: int = 12, noise_sd: float = 0.05):
    spec = CorpusSpec(locations="uniform", min_points=lo, max_points=hi, noise_sd=noise_sd)
    return corpus(GPFamily(lengthscale=0.3), spec, S, seed)
