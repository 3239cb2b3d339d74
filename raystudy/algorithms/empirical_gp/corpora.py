r"""Synthetic corpora: a known GP, learning-curve families, seasonal/trend time series.

Every family draws independent random functions on [0, 1] (``draw(rng, xs)``: one
function per location array) and knows the moments of its process on any points
(``moments(Z)``: exact for the GP, Monte Carlo over 20,000 noiseless draws with a
fixed seed for the parametric families), which the study shows beside the learned
covariance.

* ``gp``: :math:`f \sim GP(0.5 \sin 3x,\ \text{Matern-5/2}(\ell = 0.2))` (the
  benchmark's truth; written in NumPy, independent of GPyTorch).
* ``curves``: learning curves of validation accuracy over epochs
  :math:`t = 1 + x (T - 1)`, a uniform mixture of the parametric families used by
  learning-curve extrapolation work (Domhan et al. 2015; LC-PFN, Adriaensen et al. 2023):
  pow3 :math:`c - a t^{-\alpha}`, exp3 :math:`c - a e^{-bt}`, log-power
  :math:`c / (1 + (t/e^{b})^{-a})`, Janoschek :math:`c - (c - a)e^{-bt^{\delta}}`,
  MMF :math:`c - (c - a)/(1 + (kt)^{\delta})`, ilog2 :math:`c - a/\log(t+1)`.
* ``seasonal``: :math:`\ell + s x + A \sin(2\pi t / p + \phi) + A_2 \sin(4\pi t/p + \phi_2)`
  over steps :math:`t = x (T - 1)`, period p in {12, 24}, plus a trend change at a
  random point for a third of the series.

``corpus(...)`` turns draws into datasets observed at ``prefix`` locations (the first
L grid points, L uniform: early-stopped curves), a random ``subset`` of the grid, or
``uniform`` random points in [0, 1]; ``tasks(...)`` draws full test curves on the grid.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import torch

LOCATIONS = ("prefix", "subset", "uniform")


def matern52(x1: np.ndarray, x2: np.ndarray, lengthscale: float) -> np.ndarray:
    """Matern-5/2 kernel with unit variance on 1-D inputs."""
    r = np.abs(x1[:, None] - x2[None, :]) * (np.sqrt(5.0) / lengthscale)
    return (1 + r + r * r / 3.0) * np.exp(-r)


class Family(Protocol):
    """A generator of corpus curves with known moments (the families below)."""

    name: str

    def draw(self, rng: np.random.Generator, xs: list[np.ndarray]) -> list[np.ndarray]: ...
    def moments(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]: ...


@dataclass
class GPFamily:
    """Draws from a GP with mean ``amplitude sin(3x)`` and a Matern-5/2 kernel
    (``outputscale`` x the unit-variance kernel)."""

    lengthscale: float = 0.2
    name: str = "gp"
    outputscale: float = 1.0
    amplitude: float = 0.5

    def mean(self, x: np.ndarray) -> np.ndarray:
        return self.amplitude * np.sin(3 * x)

    def draw(self, rng: np.random.Generator, xs: list[np.ndarray]) -> list[np.ndarray]:
        out = []
        for x in xs:
            K = self.outputscale * matern52(x, x, self.lengthscale) + 1e-10 * np.eye(len(x))
            out.append(self.mean(x) + np.linalg.cholesky(K) @ rng.standard_normal(len(x)))
        return out

    def moments(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self.mean(z), self.outputscale * matern52(z, z, self.lengthscale)


def _curve(kind: int, p: np.ndarray, t: np.ndarray) -> np.ndarray:
    c, a, b, d = p
    if kind == 0:
        return c - (c - a) * t ** (-b)                       # pow3 (a: value at t = 1)
    if kind == 1:
        return c - (c - a) * np.exp(-b * (t - 1))            # exp3
    if kind == 2:
        return c / (1 + (t / np.exp(d)) ** (-b))             # log-power
    if kind == 3:
        return c - (c - a) * np.exp(-b * (t - 1) ** d)       # Janoschek
    if kind == 4:
        return c - (c - a) / (1 + (b * (t - 1)) ** d)        # MMF
    return c - (c - a) * np.log(2) / np.log(t + 1)           # ilog2


@dataclass
class CurveFamily:
    """Learning curves of validation accuracy over ``epochs`` epochs (a family mixture)."""

    epochs: int = 52
    name: str = "curves"

    def _params(self, rng: np.random.Generator) -> tuple[int, np.ndarray]:
        kind = int(rng.integers(6))
        c = rng.uniform(0.6, 0.95)                           # asymptote
        a = rng.uniform(0.1, 0.5)                            # accuracy after epoch 1
        rates = {0: rng.uniform(0.3, 1.2), 1: rng.uniform(0.03, 0.3), 2: rng.uniform(0.8, 2.5),
                 3: rng.uniform(0.05, 0.5), 4: rng.uniform(0.05, 0.5), 5: 0.0}
        shape = {2: rng.uniform(0.0, 2.0), 3: rng.uniform(0.6, 1.2),
                 4: rng.uniform(0.8, 2.0)}.get(kind, 1.0)
        return kind, np.array([c, a, rates[kind], shape])

    def draw(self, rng: np.random.Generator, xs: list[np.ndarray]) -> list[np.ndarray]:
        out = []
        for x in xs:
            kind, p = self._params(rng)
            out.append(_curve(kind, p, 1 + x * (self.epochs - 1)))
        return out

    def moments(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return monte_carlo_moments(self, z)


@dataclass
class SeasonalFamily:
    """Seasonal series with level, trend and a trend change, over ``steps`` steps."""

    steps: int = 96
    name: str = "seasonal"

    def draw(self, rng: np.random.Generator, xs: list[np.ndarray]) -> list[np.ndarray]:
        out = []
        for x in xs:
            t = x * (self.steps - 1)
            period = float(rng.choice([12.0, 24.0]))
            level, slope = rng.normal(0, 0.5), rng.normal(0, 1.0)
            amp, amp2 = rng.uniform(0.5, 1.5), rng.uniform(0.0, 0.4)
            phase, phase2 = rng.uniform(0, 2 * np.pi, size=2)
            y = (level + slope * x + amp * np.sin(2 * np.pi * t / period + phase)
                 + amp2 * np.sin(4 * np.pi * t / period + phase2))
            if rng.uniform() < 1 / 3:                        # a trend change
                at = rng.uniform(0.3, 0.9)
                y = y + rng.normal(0, 2.0) * np.clip(x - at, 0, None)
            out.append(y)
        return out

    def moments(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return monte_carlo_moments(self, z)


def monte_carlo_moments(family, z: np.ndarray, draws: int = 20_000,
                        seed: int = 12345) -> tuple[np.ndarray, np.ndarray]:
    """Mean and covariance (1/n normalised) of ``draws`` noiseless functions at z."""
    F = np.stack(family.draw(np.random.default_rng(seed), [z] * draws))
    mean = F.mean(0)
    centred = F - mean
    return mean, centred.T @ centred / draws


FAMILIES: dict[str, Callable[[], Family]] = {
    "gp": GPFamily, "curves": CurveFamily, "seasonal": SeasonalFamily}


@dataclass
class CorpusSpec:
    """How corpus datasets are observed: where, how many points, how noisy."""

    locations: str = "prefix"
    min_points: int = 10
    max_points: int = 30
    noise_sd: float = 0.01
    grid: np.ndarray = field(default_factory=lambda: np.linspace(0, 1, 52))


def sample_locations(rng: np.random.Generator, spec: CorpusSpec, count: int) -> list[np.ndarray]:
    """Location arrays for ``count`` datasets (sorted; sizes in [min_points, max_points])."""
    if spec.locations not in LOCATIONS:
        raise ValueError(f"locations={spec.locations!r} is not one of {', '.join(LOCATIONS)}")
    grid = spec.grid
    hi = min(spec.max_points, len(grid)) if spec.locations != "uniform" else spec.max_points
    sizes = rng.integers(spec.min_points, hi + 1, size=count)
    if spec.locations == "prefix":
        return [grid[:n] for n in sizes]
    if spec.locations == "subset":
        return [np.sort(rng.choice(grid, size=n, replace=False)) for n in sizes]
    return [np.sort(rng.uniform(0, 1, size=n)) for n in sizes]


def corpus(family, spec: CorpusSpec, count: int, seed: int,
           dtype: torch.dtype = torch.float64) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """``count`` noisy datasets ``(x (n, 1), y (n,))`` drawn from ``family``."""
    rng = np.random.default_rng(seed)
    xs = sample_locations(rng, spec, count)
    fs = family.draw(rng, xs)
    return [(torch.as_tensor(x, dtype=dtype).unsqueeze(-1),
             torch.as_tensor(f + spec.noise_sd * rng.standard_normal(len(f)), dtype=dtype))
            for x, f in zip(xs, fs, strict=True)]


def tasks(family, grid: np.ndarray, count: int, noise_sd: float, seed: int
          ) -> tuple[np.ndarray, np.ndarray]:
    """``count`` test curves on ``grid``: noisy Y (count, T) and noiseless F (count, T)."""
    rng = np.random.default_rng(seed)
    F = np.stack(family.draw(rng, [grid] * count))
    return F + noise_sd * rng.standard_normal(F.shape), F
