r"""The Dirichlet likelihood-ratio test: one Dirichlet for both samples, or one each.

For rows :math:`x_1..x_n` of the open simplex, the Dirichlet(:math:`\alpha`) log-likelihood
is

.. math::
    \ell(\alpha) = n\Big[\log\Gamma(\alpha_0) - \sum_k \log\Gamma(\alpha_k)
        + \sum_k (\alpha_k - 1)\, \overline{\log x_k}\Big], \qquad \alpha_0 = \sum_k \alpha_k .

Its maximiser is found by Newton's method with the Hessian
:math:`n[\psi'(\alpha_0) 1 1^\top - \mathrm{diag}\,\psi'(\alpha_k)]`, a diagonal plus a
rank one, inverted in :math:`O(D)` by Sherman-Morrison (Minka, "Estimating a Dirichlet
distribution", 2000, Sec. 1), started at the moment estimate (the mean times Minka's
moment precision, the median over parts); a step that leaves the positive orthant is
halved. The test of
:math:`H_0: \alpha_x = \alpha_y` is

.. math::  \Lambda = 2[\ell_x(\hat\alpha_x) + \ell_y(\hat\alpha_y) - \ell_{x \cup y}(\hat\alpha)]
           \;\to\; \chi^2_D .

Zeros are replaced multiplicatively first (``logratio.py``, the same rule as the log-ratio
tests). Vectorised over replicates.
"""

from __future__ import annotations

import numpy as np
from scipy import special, stats

from .logratio import detection_delta, multiplicative_replacement
from .samples import TwoSampleResult, check_alpha, check_samples, result

MAX_ITER = 100
GRAD_TOL = 1e-10
"""Stop when every |gradient / n| is below this (the log-likelihood per point)."""


def dirichlet_log_likelihood(alpha: np.ndarray, mean_log: np.ndarray, n: int) -> np.ndarray:
    r""":math:`\ell(\alpha)` from the mean logs: ``alpha``, ``mean_log`` ``(R, D)`` -> ``(R,)``."""
    a0 = alpha.sum(-1)
    return n * (special.gammaln(a0) - special.gammaln(alpha).sum(-1)
                + ((alpha - 1.0) * mean_log).sum(-1))


def dirichlet_mle(X: np.ndarray) -> np.ndarray:
    """Maximum-likelihood Dirichlet parameters of each replicate ``(R, n, D)``: ``(R, D)``.

    Rows must be strictly positive (replace zeros first).
    """
    mean_log = np.log(X).mean(1)
    mean = X.mean(1)
    second = (X * X).mean(1)
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = np.nanmedian((mean - second) / (second - mean * mean), axis=-1)
    precision = np.where(np.isfinite(precision) & (precision > 0), precision, 1.0)
    alpha = mean * precision[:, None]
    for _ in range(MAX_ITER):
        a0 = alpha.sum(-1, keepdims=True)
        g = special.digamma(a0) - special.digamma(alpha) + mean_log      # gradient / n
        if np.abs(g).max() < GRAD_TOL:
            break
        q = -special.polygamma(1, alpha)                                 # Hessian / n
        z = special.polygamma(1, a0)
        b = (g / q).sum(-1, keepdims=True) / (1.0 / z + (1.0 / q).sum(-1, keepdims=True))
        step = (g - b) / q                                               # H^-1 g
        scale = np.ones_like(a0)
        for _ in range(60):                                              # stay positive
            bad = ((alpha - scale * step) <= 0).any(-1, keepdims=True)
            if not bad.any():
                break
            scale = np.where(bad, scale / 2, scale)
        alpha = alpha - scale * step
    return alpha


def dirichlet_lrt_test(x, y, *, alpha: float = 0.05) -> TwoSampleResult:
    r"""The Dirichlet likelihood-ratio test, :math:`\Lambda \sim \chi^2_D` (module docstring).

    ``x`` ``(n, D)`` or ``(R, n, D)``, ``y`` ``(m, D)`` or ``(R, m, D)`` compositions.
    """
    level = check_alpha(alpha)
    X, Y, batched = check_samples(x, y, data="compositional", min_points=2,
                                  method="the Dirichlet likelihood-ratio test")
    delta = detection_delta(np.concatenate([X, Y], axis=1))
    X, Y = multiplicative_replacement(X, delta), multiplicative_replacement(Y, delta)
    Z = np.concatenate([X, Y], axis=1)
    D = X.shape[2]
    ll = 0.0
    for A, sign in ((X, 1.0), (Y, 1.0), (Z, -1.0)):
        ll = ll + sign * dirichlet_log_likelihood(dirichlet_mle(A), np.log(A).mean(1),
                                                  A.shape[1])
    Lam = np.maximum(2.0 * ll, 0.0)
    return result(Lam, stats.chi2.sf(Lam, D), level, "dirichlet_lrt", batched)
