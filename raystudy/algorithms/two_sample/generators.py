r"""Seeded data for the Monte Carlo: nulls, same-mean and mean alternatives, a local file.

A :class:`Scenario` names a family and its effect size (0 is the null for every family);
:func:`generate` draws ``reps`` replicates of (x, y) at once from one NumPy generator
(Dirichlet draws as normalised gammas, von Mises-Fisher by ``scipy.stats.vonmises_fisher``).
With :math:`\mathbf 1` the all-ones vector in :math:`\mathbb{R}^D`, ``a`` the base Dirichlet
parameter per part and :math:`e` the effect:

=================  ====================================================================
family             x  versus  y
=================  ====================================================================
dirichlet          Dir(a 1) against itself (null only)
logistic_normal    ilr^-1 N(0, sigma^2 I) against itself (null only)
vmf                vMF(e_D, kappa) against vMF(cos(e) e_D + sin(e) e_1, kappa): e radians
mean_shift         Dir(a 1) against Dir((a 1 + e e_1) aD / (aD + e)): same total
concentration      Dir(a 1) against Dir((1 + e) a 1): same mean 1/D, and by symmetry
                   both CLR means are 0, the blind spot of every log-ratio mean test
shape              ilr^-1 N(0, sigma^2 I) against ilr^-1 N(0, sigma^2 ((1-e) I + e 1 1^T)):
                   same ILR (hence CLR) mean, correlation e in [0, 1); needs D >= 3
mixture            Dir(a 1) against the equal mixture over k of
                   Dir(aD ((1 - e)/D 1 + e e_k)), e in [0, 1): invariant under permuting
                   parts, so the same mean 1/D and CLR mean 0
zeros              Dirichlet-multinomial counts at ``depth`` (Dir(a 1) against the
                   mean_shift parameters), closed to proportions: exact zeros occur
file               rows resampled (with replacement) from a local table: x from group A,
                   each y row from group B with probability e, else from A (e in [0, 1])
=================  ====================================================================

The ``mixture`` family is raystudy's reading of "a Dirichlet mixture matched in mean"
(research notes): a two-component mixture matched in arithmetic mean still differs in CLR
mean (Jensen's inequality on the digamma function), so it would not isolate the blind spot;
the D-component symmetric mixture matches both.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from .logratio import helmert_basis
from .tables import read_table

FAMILIES = ("dirichlet", "logistic_normal", "vmf", "mean_shift", "concentration", "shape",
            "mixture", "zeros", "file")
NULL_ONLY = ("dirichlet", "logistic_normal")
SAME_MEAN = ("concentration", "shape", "mixture")
"""Alternatives on which every log-ratio mean test has no power by construction."""


@dataclass(frozen=True)
class Scenario:
    """One Monte Carlo configuration: a family, the sample sizes, D and the effect."""

    family: str = "dirichlet"
    """One of :data:`FAMILIES` (module docstring)."""
    n: int = 50
    """Rows of x."""
    m: int = 50
    """Rows of y."""
    D: int = 3
    """Parts (compositions) or ambient dimension (vmf); read from the table for ``file``."""
    effect: float = 0.0
    """Effect size; 0 is the null for every family."""
    a: float = 2.0
    """Base Dirichlet parameter per part (dirichlet, mean_shift, concentration, mixture,
    zeros)."""
    sigma: float = 0.5
    """Standard deviation of the ILR coordinates (logistic_normal, shape)."""
    kappa: float = 10.0
    """von Mises-Fisher concentration (vmf)."""
    depth: int = 10
    """Counts per row before closing (zeros)."""
    path: str | None = None
    """The CSV/TSV for ``file`` (``tables.read_table``)."""
    group_column: str = "group"
    """The group column of the file."""
    groups: tuple[str, str] | None = None
    """Which two groups of the file (default: its only two)."""

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise ValueError(f"family must be one of {FAMILIES}, got {self.family!r}.")
        for name in ("n", "m", "depth"):
            value = getattr(self, name)
            if isinstance(value, bool) or int(value) != value or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}.")
        if min(self.n, self.m) < 2:
            raise ValueError(f"n and m must be at least 2, got n = {self.n}, m = {self.m}.")
        if self.family != "file" and (int(self.D) != self.D or self.D < 2):
            raise ValueError(f"D must be an integer >= 2, got {self.D!r}.")
        if self.family == "shape" and self.D < 3:
            raise ValueError("the shape family needs D >= 3 (a correlation of ILR "
                             "coordinates).")
        if not (math.isfinite(self.effect) and self.effect >= 0):
            raise ValueError(f"effect must be a finite number >= 0, got {self.effect!r}.")
        if self.family in NULL_ONLY and self.effect != 0:
            raise ValueError(f"the {self.family} family is a null (effect 0), got effect = "
                             f"{self.effect}.")
        if self.family in ("shape", "mixture") and self.effect >= 1:
            raise ValueError(f"the {self.family} family needs effect in [0, 1), got "
                             f"{self.effect}.")
        if self.family == "file":
            if self.effect > 1:
                raise ValueError(f"the file family needs effect in [0, 1], got {self.effect}.")
            if not self.path:
                raise ValueError("the file family needs a path to a CSV or TSV table.")
        for name in ("a", "sigma", "kappa"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)!r}.")

    @property
    def data(self) -> str:
        """``"directional"`` for vmf, else ``"compositional"``."""
        return "directional" if self.family == "vmf" else "compositional"


def _dirichlet(alpha: np.ndarray, shape: tuple[int, int],
               rng: np.random.Generator) -> np.ndarray:
    """Dirichlet rows ``(*shape, D)`` as normalised gammas; ``alpha`` broadcasts to them."""
    G = rng.standard_gamma(np.broadcast_to(alpha, (*shape, alpha.shape[-1])))
    return G / G.sum(-1, keepdims=True)


def _logistic_normal(cov: np.ndarray, shape: tuple[int, int],
                     rng: np.random.Generator) -> np.ndarray:
    """ilr^-1 of N(0, cov) rows: ``(*shape, D)``, cov ``(D - 1, D - 1)``."""
    L = np.linalg.cholesky(cov)
    Z = rng.standard_normal((*shape, cov.shape[0])) @ L.T
    E = np.exp(Z @ helmert_basis(cov.shape[0] + 1).T)
    return E / E.sum(-1, keepdims=True)


def _vmf(mu: np.ndarray, kappa: float, shape: tuple[int, int],
         rng: np.random.Generator) -> np.ndarray:
    draws = stats.vonmises_fisher(mu, kappa).rvs(shape[0] * shape[1], random_state=rng)
    return draws.reshape(*shape, len(mu))


def shifted_alpha(s: Scenario) -> np.ndarray:
    """The mean_shift (and zeros) alternative's Dirichlet parameter ``(D,)``."""
    alpha = np.full(s.D, s.a)
    alpha[0] += s.effect
    return alpha * (s.a * s.D / (s.a * s.D + s.effect))


def generate(scenario: Scenario, reps: int,
             rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``reps`` replicates of the scenario: x ``(reps, n, D)``, y ``(reps, m, D)``."""
    if isinstance(reps, bool) or int(reps) != reps or reps < 1:
        raise ValueError(f"reps must be a positive integer, got {reps!r}.")
    s, R = scenario, int(reps)
    fx, fy = (R, s.n), (R, s.m)
    base = np.full(s.D, s.a) if s.family != "file" else None
    if s.family in ("dirichlet", "mean_shift", "concentration"):
        alpha_y = base
        if s.family == "mean_shift":
            alpha_y = shifted_alpha(s)
        elif s.family == "concentration":
            alpha_y = (1 + s.effect) * base
        return _dirichlet(base, fx, rng), _dirichlet(alpha_y, fy, rng)
    if s.family in ("logistic_normal", "shape"):
        iso = s.sigma**2 * np.eye(s.D - 1)
        rho = s.effect if s.family == "shape" else 0.0
        corr = s.sigma**2 * ((1 - rho) * np.eye(s.D - 1) + rho * np.ones((s.D - 1, s.D - 1)))
        return _logistic_normal(iso, fx, rng), _logistic_normal(corr, fy, rng)
    if s.family == "vmf":
        mu_x = np.zeros(s.D)
        mu_x[-1] = 1.0
        mu_y = math.cos(s.effect) * mu_x
        mu_y[0] += math.sin(s.effect)
        return _vmf(mu_x, s.kappa, fx, rng), _vmf(mu_y, s.kappa, fy, rng)
    if s.family == "mixture":
        k = rng.integers(0, s.D, fy)
        alpha_y = s.a * s.D * ((1 - s.effect) / s.D + s.effect * np.eye(s.D)[k])
        return _dirichlet(base, fx, rng), _dirichlet(alpha_y, fy, rng)
    if s.family == "zeros":
        px, py = _dirichlet(base, fx, rng), _dirichlet(shifted_alpha(s), fy, rng)
        cx, cy = rng.multinomial(s.depth, px), rng.multinomial(s.depth, py)
        return cx / s.depth, cy / s.depth
    table = read_table(s.path, s.group_column, s.groups)
    x = table.x[rng.integers(0, len(table.x), fx)]
    from_b = rng.random(fy) < s.effect
    y = np.where(from_b[..., None], table.y[rng.integers(0, len(table.y), fy)],
                 table.x[rng.integers(0, len(table.x), fy)])
    return x, y
