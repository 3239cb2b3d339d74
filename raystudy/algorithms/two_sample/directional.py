r"""A large-sample test for a common mean direction of two samples on the sphere.

For unit vectors :math:`u_1..u_n \in S^{D-1}` from a distribution rotationally symmetric
about :math:`\mu`, write :math:`c = \mu \cdot u` and :math:`\rho = E c`. The sample mean
:math:`\bar u` has mean direction :math:`\hat\mu = \bar u / \|\bar u\|` and, to first
order, :math:`\hat\mu - \mu \approx P_\mu \bar u / \rho` with
:math:`P_\mu = I - \mu\mu^\top`, whose covariance is :math:`\tau^2 P_\mu / n`,

.. math::  \tau^2 = \frac{1 - E c^2}{(D - 1)\, \rho^2},

estimated by :math:`\hat\tau^2 = (1 - \overline{(\hat\mu \cdot u)^2}) / ((D - 1) \bar R^2)`,
:math:`\bar R = \|\bar u\|` (Watson, "Statistics on Spheres", 1983, Ch. 4; Mardia & Jupp,
"Directional Statistics", 2000, Sec. 10.7: the heterogeneous-dispersion case). Two samples
with weights :math:`w = n / \hat\tau_x^2`, :math:`w' = m / \hat\tau_y^2` share the pooled
direction :math:`\hat\mu \propto w \hat\mu_x + w' \hat\mu_y`, and

.. math::  W = \frac{\|P_{\hat\mu}(\hat\mu_x - \hat\mu_y)\|^2}
                  {\hat\tau_x^2 / n + \hat\tau_y^2 / m} \;\to\; \chi^2_{D-1}
           \text{ under } H_0: \mu_x = \mu_y .

This two-sample form is raystudy's reading of Watson's K-sample test. It compares
directions only: a difference of concentration about one mean direction is invisible to it.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from .samples import TwoSampleResult, check_alpha, check_samples, result, to_sphere


def mean_direction(U: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Mean directions ``(R, D)``, mean resultant lengths and :math:`\hat\tau^2` ``(R,)``.

    ``U``: ``(R, n, D)`` unit vectors.
    """
    D = U.shape[-1]
    mean = U.mean(1)
    R_bar = np.linalg.norm(mean, axis=-1)
    mu = mean / np.where(R_bar > 0, R_bar, 1.0)[:, None]
    c2 = (np.einsum("rnd,rd->rn", U, mu) ** 2).mean(-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        tau2 = (1.0 - c2) / ((D - 1) * R_bar**2)
    return mu, R_bar, tau2


def mean_direction_test(x, y, *, alpha: float = 0.05,
                        data: str = "directional") -> TwoSampleResult:
    r"""Watson-type test of a common mean direction, :math:`W \sim \chi^2_{D-1}`.

    ``x`` ``(n, D)`` or ``(R, n, D)``, ``y`` ``(m, D)`` or ``(R, m, D)``: unit vectors
    (``data="directional"``, default) or compositions (mapped by the square root).
    """
    alpha = check_alpha(alpha)
    X, Y, batched = check_samples(x, y, data=data, min_points=2,
                                  method="the mean-direction test")
    U, V = to_sphere(X, data), to_sphere(Y, data)
    n, m, D = U.shape[1], V.shape[1], U.shape[2]
    mu_x, _, tau2_x = mean_direction(U)
    mu_y, _, tau2_y = mean_direction(V)
    var = tau2_x / n + tau2_y / m
    with np.errstate(divide="ignore", invalid="ignore"):
        pooled = (n / tau2_x)[:, None] * mu_x + (m / tau2_y)[:, None] * mu_y
        pooled /= np.linalg.norm(pooled, axis=-1, keepdims=True)
        diff = mu_x - mu_y
        tangent = diff - (diff * pooled).sum(-1, keepdims=True) * pooled
        W = np.where(var > 0, (tangent**2).sum(-1) / var, np.nan)
    return result(W, stats.chi2.sf(W, D - 1), alpha, "mean_direction", batched)
